package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// ProtocolVersions are the MCP protocol versions `aibuddy mcp` serves,
// newest first (the Go SDK's: 2026-07-28 through server/discover and
// per-request _meta, 2025-11-25 to 2024-11-05 through initialize). A
// host asking for another version gets the newest both support, as the
// spec's version negotiation says.
var ProtocolVersions = mcp.SupportedProtocolVersions()

// multiRound is 2026-07-28, the first version whose servers must not
// send requests of their own while a request runs (SEP-2322): input is
// asked for inside the tools/call reply instead.
const multiRound = "2026-07-28"

// HostElicitor is the mcpclient.Elicitor of `aibuddy mcp`: a form that
// an upstream MCP server asks during a call (an input request inside its
// tools/call reply, or a classic elicitation/create) is passed to the
// host of that call, the message prefixed with the server's name
// ("MCP server S asks: …") and the schema as is. A host on 2025-11-25 or
// older gets elicitation/create on its connection and the call waits for
// the answer; a host on 2026-07-28 gets the form as an input request in
// the reply to its tools/call and sends the call again with the answer
// (multi round-trip requests), which then reaches the upstream server with
// that server's requestState. The answer is keyed to the call (server,
// tool, arguments, round, question), so it never answers another call. A
// host that did not declare elicitation (form mode) gets an
// Authorization-stage error saying so: the question is never answered on
// the user's behalf.
func HostElicitor(ctx context.Context, e mcpclient.Elicitation) (*mcp.ElicitResult, error) {
	st, ok := ctx.Value(sessionKey{}).(*callState)
	if !ok || st.session == nil {
		return nil, tool.Errorf(tool.Authorization, "MCP server %s asked the user %q, and no MCP host session carries this call, so nobody can be asked",
			e.Server, e.Params.Message).
			WithHint("ask the user in your reply and wait for their answer")
	}
	ip := st.session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil ||
		(ip.Capabilities.Elicitation.Form == nil && ip.Capabilities.Elicitation.URL != nil) {
		return nil, tool.Errorf(tool.Authorization,
			"MCP server %s asked the user %q, and the MCP host does not support form elicitation, so aibuddy cannot pass the question on",
			e.Server, e.Params.Message).
			WithHint("ask the user in your reply, then call again; or use a host that supports elicitation")
	}
	params := &mcp.ElicitParams{Mode: "form", Message: fmt.Sprintf("MCP server %s asks: %s", e.Server, e.Params.Message),
		RequestedSchema: e.Params.RequestedSchema}
	if ip.ProtocolVersion < multiRound {
		res, err := st.session.Elicit(ctx, params)
		if err != nil {
			return nil, (&tool.Error{Stage: tool.Authorization, Err: err,
				Msg: fmt.Sprintf("MCP server %s asked the user %q, and the MCP host gave no answer: %v", e.Server, e.Params.Message, err)}).
				WithHint("ask the user in your reply what they want")
		}
		return res, nil
	}
	id := "upstream-" + elicitationKey(e)
	if resp, answered := st.responses[id]; answered {
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return nil, fmt.Errorf("the host answered input request %s with %T, want an elicitation result", id, resp)
		}
		return res, nil
	}
	if st.requests == nil {
		st.requests = mcp.InputRequestMap{}
	}
	st.requests[id] = params
	return nil, errNeedInput
}

// elicitationKey binds an upstream question to its call: server, tool,
// the call's arguments, the round, the server's key, message and schema.
func elicitationKey(e mcpclient.Elicitation) string {
	schema, _ := json.Marshal(e.Params.RequestedSchema)
	var input []byte
	if e.Call != nil {
		input = e.Call.Input
	}
	h := sha256.New()
	for _, part := range []string{e.Server, e.Tool, string(input), fmt.Sprint(e.Round), e.Key, e.Params.Message, string(schema)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// carry keeps a call's answers across the host's rounds: a 2026-07-28
// host sends only the answers to the latest input requests, so the
// gateway hands out the earlier ones in its requestState (signed with a
// key of this process, bound to the tool and its arguments) and takes
// them back from the retry. A state that fails the check is ignored: the
// questions are asked again, nothing is taken as answered.
type carry struct {
	once sync.Once
	key  []byte
}

type carried struct {
	Call      string          `json:"call"` // tool name and arguments digest
	Responses json.RawMessage `json:"responses"`
}

func (c *carry) mac(b []byte) []byte {
	c.once.Do(func() {
		c.key = make([]byte, 32)
		_, _ = rand.Read(c.key)
	})
	m := hmac.New(sha256.New, c.key)
	m.Write(b)
	return m.Sum(nil)
}

func callDigest(name string, args json.RawMessage) string {
	h := sha256.Sum256(append([]byte(name+"\x00"), args...))
	return hex.EncodeToString(h[:8])
}

// responses are the answers a retried call brings: those of this retry,
// and those carried in the requestState from earlier rounds.
func (c *carry) responses(name string, p *mcp.CallToolParamsRaw) mcp.InputResponseMap {
	out := mcp.InputResponseMap{}
	if body, sig, ok := strings.Cut(p.RequestState, "."); ok {
		b, err1 := base64.RawURLEncoding.DecodeString(body)
		s, err2 := base64.RawURLEncoding.DecodeString(sig)
		var st carried
		if err1 == nil && err2 == nil && hmac.Equal(s, c.mac(b)) && json.Unmarshal(b, &st) == nil &&
			st.Call == callDigest(name, p.Arguments) {
			var prev mcp.InputResponseMap
			if json.Unmarshal(st.Responses, &prev) == nil {
				for k, v := range prev {
					out[k] = v
				}
			}
		}
	}
	for k, v := range p.InputResponses {
		out[k] = v
	}
	return out
}

// state is the requestState of an input-required reply: every answer so
// far, signed; "" when there are none.
func (c *carry) state(name string, args json.RawMessage, responses mcp.InputResponseMap) string {
	if len(responses) == 0 {
		return ""
	}
	r, err := json.Marshal(responses)
	if err != nil {
		return ""
	}
	b, _ := json.Marshal(carried{Call: callDigest(name, args), Responses: r})
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(c.mac(b))
}
