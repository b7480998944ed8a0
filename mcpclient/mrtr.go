package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/tool"
)

// DefaultMaxInputRounds is Options.MaxInputRounds by default (setting
// mcp.maxInputRounds): how many input-required replies one tools/call may
// get before aibuddy stops asking (BH-069: "up to a fixed limit of
// rounds").
const DefaultMaxInputRounds = 4

// Protocol versions aibuddy speaks as an MCP client, newest first: what
// the Go SDK negotiates (server/discover for 2026-07-28, else the
// initialize handshake, each side settling on the newest version both
// support; MCP spec "Lifecycle", "Version Negotiation").
var ProtocolVersions = mcp.SupportedProtocolVersions()

// Elicitation is one request for the user's input that an upstream MCP
// server made: a form elicitation carried inside a tools/call reply
// (protocol 2026-07-28, multi round-trip requests, SEP-2322) or a classic
// elicitation/create request (2025-06-18 to 2025-11-25).
type Elicitation struct {
	// Server is the configured server name, Tool the original MCP name of
	// the tool whose call asks ("" when no call of ours was in flight).
	Server, Tool string
	// Call is our call it belongs to (its ID and validated Input); nil
	// outside a call.
	Call *tool.Call
	// Round is the 1-based round of the call's multi round-trip; 0 for a
	// classic elicitation/create.
	Round int
	// Key is the server's key of the input request in its inputRequests
	// map ("" for elicitation/create).
	Key string
	// Params is the request as the server sent it (mode "form").
	Params *mcp.ElicitParams
}

// Elicitor puts an upstream server's form elicitation to the user and
// returns the answer: action "accept" with content matching the requested
// schema, "decline" or "cancel". An error means nobody could answer; a
// *tool.Error keeps its stage and hint (Authorization: nobody can be
// asked here). It must return when ctx is done. `aibuddy run` asks on the
// terminal ([FormElicitor]), `aibuddy mcp` passes the form to its host
// (mcpserver.HostElicitor).
type Elicitor func(ctx context.Context, e Elicitation) (*mcp.ElicitResult, error)

// clientOptions adds this package's protocol settings to the SDK client
// options of one connection: form elicitation only when an Elicitor is
// wired (the SDK then advertises elicitation {form}; URL mode never, as
// aibuddy has no browser flow for it), and the SDK's own multi round-trip
// driver off, since callRounds drives the rounds (bounded, recorded,
// staged errors).
func (c *conn) clientOptions(o *mcp.ClientOptions) *mcp.ClientOptions {
	o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	if c.m.opts.Elicit != nil {
		o.ElicitationHandler = c.classicElicitation
	}
	return o
}

// sessionOptions pins the newest protocol version offered
// (Options.ProtocolVersion); nil offers the SDK's newest.
func (c *conn) sessionOptions() *mcp.ClientSessionOptions {
	if c.m.opts.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: c.m.opts.ProtocolVersion}
}

// protocolOf is the protocol version a session negotiated, "" before.
func protocolOf(s *mcp.ClientSession) string {
	if s == nil || s.InitializeResult() == nil {
		return ""
	}
	return s.InitializeResult().ProtocolVersion
}

// answered is one question put to the user during a call, and the reply.
type answered struct {
	Round   int            `json:"round,omitempty"`
	Message string         `json:"message"`
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// inflight is a call of ours waiting on one server: what a classic
// elicitation/create is attributed to.
type inflight struct {
	ctx   context.Context
	call  *tool.Call
	orig  string
	mu    sync.Mutex
	asked []answered
	err   error // why an elicitation/create of this call got no answer
}

// inflightSet holds a connection's calls in flight.
type inflightSet struct {
	mu    sync.Mutex
	calls map[*inflight]struct{}
}

func (s *inflightSet) add(f *inflight) func() {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[*inflight]struct{}{}
	}
	s.calls[f] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.calls, f)
		s.mu.Unlock()
	}
}

// only is the one call in flight, or false when there are none or several
// (then a question cannot be tied to a call).
func (s *inflightSet) only() (*inflight, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for f := range s.calls {
		if len(s.calls) == 1 {
			return f, 1
		}
	}
	return nil, len(s.calls)
}

// classicElicitation answers a server's elicitation/create (protocols
// 2025-06-18 to 2025-11-25, and the Go SDK's compatibility path for a
// 2026-07-28 server talking to us on an older version) through the
// Elicitor, in the context of the one call of ours in flight on this
// server, so that `aibuddy mcp` reaches the host of that call. With no
// call in flight, or several (the question cannot be tied to one), it is
// refused with an error the server sees: never answered on the user's
// behalf.
func (c *conn) classicElicitation(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if req == nil || req.Params == nil {
		return nil, errors.New("elicitation/create without params")
	}
	if req.Params.Mode == "url" || req.Params.URL != "" {
		return nil, errors.New("aibuddy does not support URL elicitation (no browser flow); it advertised form elicitation only")
	}
	f, n := c.inflight.only()
	if f == nil {
		return nil, fmt.Errorf("aibuddy cannot tie this elicitation to a call (%d calls in flight on this server), so it does not ask the user", n)
	}
	// The call's context carries who can answer (the MCP host of a
	// gateway call); the request's own context bounds the wait.
	cctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	res, err := c.m.opts.Elicit(cctx, Elicitation{Server: c.cfg.Name, Tool: f.orig, Call: f.call, Params: req.Params})
	if err != nil {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
		return nil, err
	}
	f.mu.Lock()
	f.asked = append(f.asked, answered{Message: req.Params.Message, Action: res.Action, Content: res.Content})
	f.mu.Unlock()
	return res, nil
}

// callRounds sends tools/call and drives its multi round-trip: while the
// reply is input-required, each form elicitation in it goes to the
// Elicitor, and the original call is sent again with the answers and the
// server's requestState exactly as received, at most
// Options.MaxInputRounds times. A decline is an answer like any other
// (the server ends the call with its result). A server error on a retry
// (a requestState it refuses) is returned as is. Every answer is added to
// the result as a last text block naming it as the user's ("[the user
// answered MCP server S's question …]"), bound to this call only: the
// answers live in this function and are never sent with another call.
func (c *conn) callRounds(ctx context.Context, call *tool.Call, orig string, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	f := &inflight{ctx: ctx, call: call, orig: orig}
	defer c.inflight.add(f)()
	max := c.m.opts.MaxInputRounds
	if max <= 0 {
		max = DefaultMaxInputRounds
	}
	for round := 1; ; round++ {
		res, err := c.callOnce(ctx, orig, params) // supervise.go: a lost session is re-opened, the call resent only when safe
		if err != nil {
			f.mu.Lock()
			why := f.err
			f.mu.Unlock()
			var te *tool.Error
			if errors.As(why, &te) {
				return nil, te // the server failed because nobody could answer it: say that, staged
			}
			return nil, err
		}
		if !res.NeedsInput() {
			f.mu.Lock()
			asked := f.asked
			f.mu.Unlock()
			return withAnswers(c.cfg.Name, res, asked), nil
		}
		if round > max {
			return nil, tool.Errorf(tool.Execution,
				"MCP server %s still asked for input after %d rounds of tools/call %s (mcp.maxInputRounds is %d), so aibuddy stopped the call",
				c.cfg.Name, max, orig, max).
				WithHint("the server did not finish; inspect its state before retrying, or raise mcp.maxInputRounds if it needs more questions")
		}
		if len(res.InputRequests) == 0 {
			continue // load shedding (SEP-2322): ask again, within the rounds
		}
		responses := mcp.InputResponseMap{}
		keys := make([]string, 0, len(res.InputRequests))
		for k := range res.InputRequests {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := res.InputRequests[k].(*mcp.ElicitParams)
			if !ok {
				return nil, tool.Errorf(tool.Execution, "MCP server %s asked, inside tools/call %s, for %s, which aibuddy does not offer (it advertised form elicitation only)",
					c.cfg.Name, orig, inputKind(res.InputRequests[k])).
					WithHint("this tool needs a client capability aibuddy lacks; use another tool")
			}
			if p.Mode == "url" || p.URL != "" {
				return nil, tool.Errorf(tool.Execution, "MCP server %s asked, inside tools/call %s, for a URL elicitation, which aibuddy does not support (no browser flow; it advertised form elicitation only)",
					c.cfg.Name, orig).
					WithHint("open the server's page yourself or ask the user to; then call again")
			}
			if c.m.opts.Elicit == nil {
				return nil, tool.Errorf(tool.Authorization, "MCP server %s asked the user %q inside tools/call %s, and nobody can be asked in this run",
					c.cfg.Name, p.Message, orig).
					WithHint("ask the user in your reply and call again in a run that can ask (aibuddy run, or a host with elicitation)")
			}
			ans, err := c.m.opts.Elicit(ctx, Elicitation{Server: c.cfg.Name, Tool: orig, Call: call, Round: round, Key: k, Params: p})
			if err != nil {
				var te *tool.Error
				if errors.As(err, &te) {
					return nil, err
				}
				return nil, &tool.Error{Stage: tool.Authorization, Err: err,
					Msg:  fmt.Sprintf("MCP server %s asked the user %q inside tools/call %s, and no answer could be had: %v", c.cfg.Name, p.Message, orig, err),
					Hint: "the call did not finish; ask the user in your reply what they want"}
			}
			responses[k] = ans
			f.mu.Lock()
			f.asked = append(f.asked, answered{Round: round, Message: p.Message, Action: ans.Action, Content: ans.Content})
			f.mu.Unlock()
		}
		next := *params
		next.InputResponses, next.RequestState = responses, res.RequestState
		params = &next
	}
}

func inputKind(r mcp.InputRequest) string {
	switch r.(type) {
	case *mcp.ListRootsParams:
		return "roots/list"
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling/createMessage"
	}
	return fmt.Sprintf("%T", r)
}

// withAnswers adds the user's answers of a call to its result as a last
// text block, in the user's name, so the model (and the call's record)
// has them.
func withAnswers(server string, res *mcp.CallToolResult, asked []answered) *mcp.CallToolResult {
	if len(asked) == 0 {
		return res
	}
	var b strings.Builder
	for i, a := range asked {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[MCP server %s asked the user: %q. The user answered: %s", server, a.Message, a.Action)
		if len(a.Content) > 0 {
			if j, err := json.Marshal(a.Content); err == nil {
				b.Write([]byte(" "))
				b.Write(j)
			}
		}
		b.WriteString("]")
	}
	out := *res
	out.Content = append(append([]mcp.Content(nil), res.Content...), &mcp.TextContent{Text: b.String()})
	return &out
}
