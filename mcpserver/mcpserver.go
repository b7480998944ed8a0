package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/tool"
)

// Options configures New. A nil *Options means the defaults.
type Options struct {
	// Name and Version identify the server in initialize. Defaults
	// "aibuddy" and "dev".
	Name, Version string
	// Instructions are sent to the client in initialize; default: the
	// set's runtime instructions.
	Instructions string
	// Logger receives server activity; default discards. In stdio mode it
	// must not write to stdout.
	Logger *slog.Logger
	// NewCallID mints the toolCallId of each call (MCP has none of its
	// own). Default: "mcp_" and 24 random hex digits (tool.NewCallID), unique across processes sharing a data folder.
	NewCallID func() string
	// ProgressInterval is the least time between two progress
	// notifications carrying output (heartbeats always go out). Default
	// 250 ms.
	ProgressInterval time.Duration
	// Discovery sets the count gates and tool_search bounds; nil means the
	// seed's defaults (10 tools per server, 30 in all).
	Discovery *discovery.Options
	// Pipeline is the chain every call goes through (pipeline.New: the
	// record, Discovery through this gateway's run, Parameters,
	// Authorization with its policy and confirmer — ElicitConfirmer asks
	// through the MCP host —, Execution, Verification, projection,
	// compaction), the same one aibuddy run and aibuddy call use.
	// Default pipeline.New(nil): no record, no policy, every declared
	// verification.
	Pipeline *pipeline.Pipeline
	// TaskID is the task the gateway's calls are recorded under (one MCP
	// session is one task). Default "mcp-" and the time in base 36.
	TaskID string
	// ServerStatus, when set, says how an upstream MCP server stands now:
	// connected, or not and why as "<state>: <reason>" ("disconnected:
	// connection closed by the server"). The gateway asks it about a call
	// to a tool it served earlier that a refresh took away (or to a name in
	// such a server's "<server>__" namespace): a server that is not
	// connected gives the Discovery-stage error "MCP server S is
	// disconnected: <reason>", a connected one "tool X is no longer offered
	// by MCP server S (removed at refresh)". Without it, a gone tool whose
	// server still has tools in the set is reported as removed, and one
	// whose server has none as "MCP server S is not connected or offers no
	// tools now".
	ServerStatus func(server string) (connected bool, why string)
	// Pending, when set, says which upstream MCP servers are still
	// connecting and how many tools each is expected to bring
	// (mcpclient.Manager.Expected over the last known counts). The gates
	// count them at every Update (discovery.DecideExpecting): when their
	// tools are expected to be deferred, tool_search is listed before any
	// of them has joined, and the MCP tools already there are deferred
	// with them instead of being listed directly and moved into the index
	// later. nil means nothing is pending.
	Pending func() discovery.Pending
	// Wrap, when set, is the host's middleware around every call, outside
	// the whole pipeline (before its record opens, after it closes):
	// aibuddy mcp counts calls in flight there and cancels them when it
	// stops.
	Wrap pipeline.Middleware
	// Passthrough, when set with an upstream, serves the upstream MCP
	// servers' resources, prompts and completions too (passthru.go).
	Passthrough *PassthroughOptions
}

// Meta keys aibuddy sets on a CallToolResult's _meta.
const (
	MetaStage      = "aibuddy/stage"      // failure stage of an error result
	MetaEvidence   = "aibuddy/evidence"   // the tool's evidence object
	MetaToolCallID = "aibuddy/toolCallId" // the minted toolCallId
)

// New returns an MCP server whose tools are the active tools of a fresh
// run over set: New(set, opts) is NewGateway(set, opts).Server().
func New(set *capability.Set, opts *Options) *mcp.Server {
	return NewGateway(set, opts).Server()
}

// Gateway serves one run of a tool set to MCP clients, narrowed as the seed
// says ("The catalog narrows progressively into the active tool set"):
// tools/list holds the built-in tools and the MCP tools the count gates
// leave direct, plus tool_search when anything is deferred; a tool_search
// call activates its candidates for the rest of the run, they are added to
// the server's list, and the SDK sends notifications/tools/list_changed.
// For hosts that never refresh their list, call_tool calls any active tool
// by name. A call to a tool that is not active is never executed: it is a
// Discovery-stage error telling the model to use tool_search, or, for a
// tool an upstream refresh took away, saying so: "tool X is no longer
// offered by MCP server S (removed at refresh)" or "MCP server S is
// disconnected: <reason>" (Options.ServerStatus).
type Gateway struct {
	srv  *mcp.Server
	opts Options

	handle pipeline.Handler // the gateway's entry into the pipeline, Wrap included

	mu        sync.Mutex
	set       *capability.Set
	run       *discovery.Run
	listed    map[string]bool   // tool names on the server's list
	shown     map[string]string // tool name on the list -> what the host was given (describeKey)
	activated []string          // names tool_search activated, kept across Update
	proxy     *tool.Tool        // call_tool, defined once
	served    map[string]string // every MCP tool of any set so far -> its server
	prefixes  map[string]string // "<namespace>__" of those tools -> server

	carry carry     // answers across a host's input rounds (mrtr.go)
	pt    *passthru // resources, prompts, completions; nil without upstream (passthru.go)

	host hostSession // the session of the latest request, for sampling after a reply (sampling.go)
}

// CallToolName is the gateway's proxy tool for hosts that never refresh
// their tool list.
const CallToolName = "call_tool"

// NewGateway builds the server and the run.
func NewGateway(set *capability.Set, opts *Options) *Gateway {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "aibuddy"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Instructions == "" {
		o.Instructions = set.Instructions()
	}
	if o.NewCallID == nil {
		o.NewCallID = func() string { return tool.NewCallID("mcp_") }
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = 250 * time.Millisecond
	}
	if o.Pipeline == nil {
		o.Pipeline = pipeline.New(nil)
	}
	if o.TaskID == "" {
		o.TaskID = "mcp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	g := &Gateway{opts: o, listed: map[string]bool{}, shown: map[string]string{}, served: map[string]string{}, prefixes: map[string]string{}}
	g.proxy = g.callTool()
	g.handle = o.Pipeline.Handler(pipeline.Run{TaskID: o.TaskID, Tools: g.tools})
	if o.Wrap != nil {
		g.handle = o.Wrap(g.handle)
	}
	so := &mcp.ServerOptions{Instructions: o.Instructions, Logger: o.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}}
	g.pt = newPassthru(o.Passthrough, so)
	g.srv = mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, so)
	g.srv.AddReceivingMiddleware(g.unlisted, g.host.note)
	g.pt.attach(g.srv)
	g.Update(set)
	return g
}

// unlisted answers a tools/call for a name that is not on the list (a
// deferred tool called before tool_search, a typo) with a Discovery-stage
// tool error that says what to do, recorded like any call, instead of the
// SDK's bare JSON-RPC "unknown tool" error.
func (g *Gateway) unlisted(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctr, ok := req.(*mcp.CallToolRequest)
		if !ok || ctr.Params == nil {
			return next(ctx, method, req)
		}
		g.mu.Lock()
		listed := g.listed[ctr.Params.Name]
		g.mu.Unlock()
		if listed {
			return next(ctx, method, req)
		}
		return g.handler(ctr.Params.Name)(ctx, ctr)
	}
}

// Server is the MCP server to run over a transport.
func (g *Gateway) Server() *mcp.Server { return g.srv }

// Tools returns the tools on the server's list now, in the run's order
// (core and direct tools, tool_search when anything is deferred, then the
// activated deferred tools), with call_tool last when tool_search is
// there: what a host's tools/list answer holds.
func (g *Gateway) Tools() []*tool.Tool {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.run.Active()
	if g.listed[CallToolName] {
		out = append(out, g.proxy)
	}
	return out
}

// Set is the tool set the gateway currently serves.
func (g *Gateway) Set() *capability.Set {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.set
}

// Run is the gateway's current discovery run.
func (g *Gateway) Run() *discovery.Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.run
}

// Update replaces the tool set (after an MCP server's tools changed): the
// gates are re-evaluated over the new set (and the servers still pending,
// Options.Pending), tools activated so far stay active when they still
// exist, and the server's list is brought in line: tools added or removed,
// and a listed tool whose description, schema or annotations changed (the
// count of deferred tools tool_search's description states) given again;
// the SDK sends one notifications/tools/list_changed for the changes of
// one Update (it debounces them by 10 ms), none when nothing changed. A
// later call to a tool that left is a Discovery-stage error naming its
// server (see Options.ServerStatus).
func (g *Gateway) Update(set *capability.Set) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.set = set
	for _, t := range set.Tools() {
		if srv, ok := set.Server(t.Name()); ok {
			g.served[t.Name()] = srv
			if ns, _, found := strings.Cut(t.Name(), "__"); found {
				g.prefixes[ns+"__"] = srv
			}
		}
	}
	var dopts discovery.Options
	if g.opts.Discovery != nil {
		dopts = *g.opts.Discovery
	}
	if g.opts.Pending != nil {
		dopts.Pending = g.opts.Pending()
	}
	cat := discovery.NewCatalogWith(discovery.EntriesOf(set), &dopts)
	run := cat.NewRun()
	run.Activate(g.activated...)
	run.OnActivate(func(names []string) { g.onActivate(run, names) })
	run.SetDeparted(g.departed)
	g.run = run
	g.syncLocked()
	g.pt.sync() // upstream resources and prompts follow the servers too
}

// departed explains a called name the current set does not hold: a tool
// served earlier, or a name in the namespace of a server that is not
// connected now.
func (g *Gateway) departed(name string) (discovery.Departure, bool) {
	g.mu.Lock()
	srv, served := g.served[name]
	if !served {
		if ns, _, found := strings.Cut(name, "__"); found {
			srv = g.prefixes[ns+"__"]
		}
	}
	set := g.set
	status := g.opts.ServerStatus
	g.mu.Unlock()
	if srv == "" {
		return discovery.Departure{}, false
	}
	if status != nil {
		connected, why := status(srv)
		switch {
		case !connected && why == "":
			return discovery.Departure{Server: srv, Down: "not connected"}, true
		case !connected:
			return discovery.Departure{Server: srv, Down: why}, true
		case served:
			return discovery.Departure{Server: srv}, true
		}
		return discovery.Departure{}, false
	}
	if !served {
		return discovery.Departure{}, false
	}
	for _, t := range set.Tools() {
		if s, ok := set.Server(t.Name()); ok && s == srv {
			return discovery.Departure{Server: srv}, true
		}
	}
	return discovery.Departure{Server: srv, Down: "not connected or offers no tools now"}, true
}

func (g *Gateway) onActivate(run *discovery.Run, names []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if run != g.run {
		return
	}
	for _, n := range names {
		if !slices.Contains(g.activated, n) {
			g.activated = append(g.activated, n)
		}
	}
	g.syncLocked()
}

// syncLocked makes the server's list equal to the run's active tools (plus
// call_tool when anything is deferred).
func (g *Gateway) syncLocked() {
	want := map[string]*tool.Tool{}
	for _, t := range g.run.Active() {
		want[t.Name()] = t
	}
	if _, ok := want[discovery.ToolSearchName]; ok {
		want[CallToolName] = g.proxy
	}
	var gone []string
	for n := range g.listed {
		if want[n] == nil {
			gone = append(gone, n)
			delete(g.listed, n)
			delete(g.shown, n)
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		g.srv.RemoveTools(gone...)
	}
	list := func(t *tool.Tool) {
		// A tool listed already is given again only when what the host
		// holds of it changed (AddTool replaces it and notifies).
		mt := describe(t)
		key := describeKey(mt)
		if g.listed[t.Name()] && g.shown[t.Name()] == key {
			return
		}
		g.srv.AddTool(mt, g.handler(t.Name()))
		g.listed[t.Name()] = true
		g.shown[t.Name()] = key
	}
	for _, t := range g.run.Active() {
		list(t)
	}
	if t := want[CallToolName]; t != nil {
		list(t)
	}
}

// describeKey is what a host holds of one listed tool, as one string: a
// change in it is a change of the list.
func describeKey(mt *mcp.Tool) string {
	b, err := json.Marshal(mt)
	if err != nil {
		return mt.Name + "\x00" + mt.Description
	}
	return string(b)
}

// tools is the pipeline's view of the gateway for one call: the current
// set, and the Discovery stage over the current run, which unwraps
// call_tool first.
func (g *Gateway) tools() (*capability.Set, pipeline.Dispatcher) {
	g.mu.Lock()
	run, set := g.run, g.set
	g.mu.Unlock()
	return set, pipeline.DispatcherFunc(func(ctx context.Context, call *tool.Call, next func(context.Context, *tool.Call) *tool.Result) *tool.Result {
		if call.Name == CallToolName {
			inner, err := g.unwrap(call)
			if err != nil {
				return tool.ErrorResult(err, CallToolName)
			}
			call = inner
		}
		return run.Dispatch(ctx, call, next)
	})
}

// unwrap turns a call_tool call into the call of the tool it names (same
// toolCallId and events), after checking call_tool's own input. The rest
// of the pipeline (Discovery on, Verification included) then runs on the
// named tool; the record stays the call_tool call's.
func (g *Gateway) unwrap(c *tool.Call) (*tool.Call, error) {
	if err := g.proxy.Validate(c.Input); err != nil {
		return nil, err
	}
	in, err := tool.Decode[struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}](c)
	if err != nil {
		return nil, err
	}
	if in.Name == CallToolName {
		return nil, tool.Errorf(tool.Parameters, "call_tool cannot call itself").
			WithHint("call the tool you want by its own name in call_tool's name field")
	}
	return &tool.Call{ID: c.ID, ProviderID: c.ProviderID, Name: in.Name, Input: in.Arguments, Events: c.Events}, nil
}

const callToolSchema = `{"type":"object","properties":{
  "name":{"type":"string","minLength":1,"description":"Name of an active tool (one listed, or one tool_search returned)."},
  "arguments":{"type":"object","description":"The tool's arguments, matching its input schema."}},
 "required":["name"],"additionalProperties":false}`

// callTool is the proxy that calls an active tool by name. The gateway's
// Discovery stage unwraps its calls (unwrap), so its handler runs only
// when the tool is called outside the gateway, and says so.
func (g *Gateway) callTool() *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name: CallToolName,
		Description: "Call a tool by name with its arguments. Use it for a tool that tool_search returned " +
			"when that tool does not appear in your tool list yet.",
		InputSchema: json.RawMessage(callToolSchema),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			return nil, tool.Errorf(tool.Discovery, "call_tool is answered by the MCP gateway that lists it, not called on its own").
				WithHint("call it through the gateway's tools/call")
		},
	})
}

func describe(t *tool.Tool) *mcp.Tool {
	mt := &mcp.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()}
	if a := t.Annotations(); a != nil {
		mt.Title = a.Title
		mt.Annotations = &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint, IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return mt
}

func (g *Gateway) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		call := &tool.Call{ID: g.opts.NewCallID(), Name: name, Input: req.Params.Arguments}
		var p *progress
		if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
			p = &progress{ctx: ctx, session: req.Session, token: token, interval: g.opts.ProgressInterval}
			call.Events = p.send
		}
		cctx, st := withSession(ctx, req.Session, g.carry.responses(name, req.Params))
		res := g.handle(cctx, call)
		if p != nil {
			p.flush()
		}
		if len(st.requests) > 0 && res.IsError {
			// A service needs the host's input first (elicitation): answer
			// with the requests; the call runs again with the responses.
			return &mcp.CallToolResult{InputRequests: st.requests, RequestState: g.carry.state(name, req.Params.Arguments, st.responses)}, nil
		}
		return toMCP(call.ID, res), nil
	}
}

// progress turns a call's transient events into notifications/progress.
// Output chunks are buffered and sent at most once per interval (and once
// more when the call ends), each message holding the output since the last
// one, clipped to its last 1,000 characters. Heartbeats go out at once.
type progress struct {
	ctx      context.Context
	session  *mcp.ServerSession
	token    any
	interval time.Duration

	mu      sync.Mutex
	n       float64
	lastOut time.Time
	pending []byte
}

func (p *progress) send(e tool.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case tool.EventHeartbeat:
		p.notify("running")
	case tool.EventProgress:
		p.notify(e.Message)
	case tool.EventStdout, tool.EventStderr:
		p.pending = append(p.pending, e.Data...)
		if len(p.pending) > 8<<10 {
			p.pending = append(p.pending[:0], p.pending[len(p.pending)-4<<10:]...)
		}
		if time.Since(p.lastOut) >= p.interval {
			p.flushLocked()
		}
	}
}

// flush sends buffered output, if any.
func (p *progress) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
}

func (p *progress) flushLocked() {
	if len(p.pending) == 0 {
		return
	}
	msg := clip(strings.ToValidUTF8(string(p.pending), "\uFFFD"), 1000)
	p.pending = p.pending[:0]
	p.lastOut = time.Now()
	p.notify(msg)
}

func (p *progress) notify(msg string) {
	p.n++
	_ = p.session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: p.n, Message: msg})
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-n:])
}

func toMCP(id string, res *tool.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{}}
	for _, c := range res.Content {
		switch c.Type {
		case tool.ImageContent:
			out.Content = append(out.Content, &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType})
		default:
			out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
		}
	}
	meta := mcp.Meta{MetaToolCallID: id}
	if res.IsError {
		meta[MetaStage] = string(res.Stage)
	}
	ev := res.Evidence
	if sc, ok := ev[tool.EvidenceStructuredContent]; ok {
		// An upstream MCP tool's structuredContent goes back as
		// structuredContent (MCP 2025-06-18 "Structured Content") when it
		// is small; a large one is left to the (bounded) text, which
		// carries the same JSON.
		if b, err := json.Marshal(sc); err == nil && len(b) <= MaxStructuredBytes {
			out.StructuredContent = json.RawMessage(b)
		}
		ev = maps.Clone(ev)
		delete(ev, tool.EvidenceStructuredContent)
	}
	if len(ev) > 0 {
		if b, err := json.Marshal(ev); err != nil {
			meta[MetaEvidence] = fmt.Sprintf("unencodable evidence: %v", err)
		} else if len(b) > MaxEvidenceBytes {
			meta[MetaEvidence] = fmt.Sprintf("evidence of %d bytes omitted (over %d); aibuddy calls show %s has it", len(b), MaxEvidenceBytes, id)
		} else {
			meta[MetaEvidence] = json.RawMessage(b)
		}
	}
	out.Meta = meta
	return out
}

// Bounds on what a result carries besides its content (bytes of JSON).
const (
	MaxStructuredBytes = 30000 // structuredContent passed through from an upstream MCP tool
	MaxEvidenceBytes   = 16 << 10
)
