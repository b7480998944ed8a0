package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aibuddy/aibuddy/tool"
)

// Run is the discovery state of one agent run on the activeTools path
// (seed: "Discovery state on the activeTools path is recreated for each
// agent run"): which deferred tools tool_search has activated, and which
// are active again because a retained tool call references them. Create
// one per run with [Catalog.NewRun]; nothing carries over between runs.
// A Run is safe for concurrent use.
type Run struct {
	c      *Catalog
	search *tool.Tool

	mu         sync.Mutex
	searched   map[string]bool // activated by tool_search or Activate: for the rest of the run
	referenced map[string]bool // deferred tools referenced by retained calls (last Retain)
	listeners  []func(names []string)
	departed   func(name string) (Departure, bool)
}

// Departure says why a called name that this run does not hold was (or
// looks like) an MCP tool: the server that offered it and how that server
// stands now. A host that refreshes the tool set while a session goes on
// (the MCP gateway, after notifications/tools/list_changed or a
// disconnect) supplies departures with [Run.SetDeparted], so such a call
// gets an error that names the server and says what to do (Execution
// stage when the server is down, Discovery when it dropped the tool),
// instead of "no tool named … exists in this run".
type Departure struct {
	// Server is the MCP server that offered the tool (or whose
	// "<server>__" namespace the name is in).
	Server string
	// Down, when not empty, says the server is not connected and why, as
	// "<state>: <reason>" (e.g. "disconnected: connection closed by the
	// server"). Empty means the server is connected and stopped offering
	// the tool at a refresh.
	Down string
}

// SetDeparted sets fn, which Dispatch (and tool_search's select:) asks
// about a name that is neither active nor deferred in this run; ok false
// means the name is simply unknown. fn is called outside the run's lock
// and may be called concurrently. nil removes it.
func (r *Run) SetDeparted(fn func(name string) (Departure, bool)) {
	r.mu.Lock()
	r.departed = fn
	r.mu.Unlock()
}

func (r *Run) departure(name string) (Departure, bool) {
	r.mu.Lock()
	fn := r.departed
	r.mu.Unlock()
	if fn == nil || name == "" {
		return Departure{}, false
	}
	d, ok := fn(name)
	return d, ok && d.Server != ""
}

// departedError is the error for a call to a departed tool: an
// Execution-stage "MCP server S is disconnected: <reason>" when its server
// is down (the tool is known; what failed is the server that runs it: a
// crash names its exit and last stderr lines in the reason), or a
// Discovery-stage "tool X is no longer offered by MCP server S (removed at
// refresh)" when the server is up; each with what to do.
func (r *Run) departedError(name string, d Departure) *tool.Error {
	if d.Down != "" {
		hint := fmt.Sprintf("check MCP server %s (its command, logs or address) or ask the user to; until it is back, do the task with other tools", d.Server)
		if r.c.Searchable() {
			hint += ", found with " + ToolSearchName
		}
		return tool.Errorf(tool.Execution, "MCP server %s is %s; %q was not called", d.Server, d.Down, name).WithHint(hint)
	}
	hint := fmt.Sprintf("call %s again to find what MCP server %s offers now, or another tool for the action", ToolSearchName, d.Server)
	if !r.c.Searchable() {
		hint = fmt.Sprintf("the tool list changed at the refresh: call one of the tools listed now (MCP server %s's current tools included)", d.Server)
	}
	return tool.Errorf(tool.Discovery, "tool %q is no longer offered by MCP server %s (removed at refresh), so the call was not executed", name, d.Server).
		WithHint(hint)
}

// NewRun starts the discovery state of one run: core and direct tools
// active, every deferred tool inactive.
func (c *Catalog) NewRun() *Run {
	r := &Run{c: c, searched: map[string]bool{}, referenced: map[string]bool{}}
	r.search = tool.MustDefine(tool.Spec{
		Name:        ToolSearchName,
		Description: c.searchDescription(),
		InputSchema: json.RawMessage(fmt.Sprintf(`{
	"type": "object",
	"properties": {
		"query": {"type": "string", "minLength": 1, "description": "What you want to do, in plain words (e.g. \"create a GitHub issue\"), or \"select:<name>,<name>\" to load tools by exact name."},
		"max_results": {"type": "integer", "minimum": 1, "description": "How many tools to return; default %d, at most %d."}
	},
	"required": ["query"],
	"additionalProperties": false
}`, c.opts.DefaultResults, c.opts.MaxResults)),
		Annotations: &tool.Annotations{Title: "Search tools", ReadOnlyHint: true, IdempotentHint: true},
		Handler:     r.handleSearch,
	})
	return r
}

func (c *Catalog) searchDescription() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Search the %d tools that are available but not yet loaded, and load the best matches. ", c.nDeferred)
	b.WriteString("Give a short description of the action you need; the answer lists the matching tools with their full input schemas, ")
	b.WriteString("and those tools can be called for the rest of this run. ")
	b.WriteString(`Use "select:name1,name2" when you already know exact tool names.`)
	if sc := c.serverCounts(); len(sc) > 0 {
		var parts []string
		for _, s := range sc {
			if s.Server == "" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s (%d)", s.Server, s.N))
		}
		if len(parts) > 0 {
			b.WriteString(" Deferred tools come from: " + strings.Join(parts, ", ") + ".")
		}
	}
	if n, _ := c.Expecting(); n > 0 && c.expecting {
		fmt.Fprintf(&b, " %d more MCP server(s) are still connecting; their tools join this search as they connect (the tool list changes then).", n)
	}
	return b.String()
}

// ToolSearch returns the tool_search tool bound to this run: its calls
// search the catalog's deferred index and activate what they return.
func (r *Run) ToolSearch() *tool.Tool { return r.search }

// OnActivate registers fn to be called, after the fact and outside the
// run's lock, with the names of tools that became active (by tool_search,
// Activate or Retain). The MCP gateway uses it to send
// notifications/tools/list_changed. Callbacks run in registration order on
// the goroutine that caused the activation.
func (r *Run) OnActivate(fn func(names []string)) {
	if fn == nil {
		return
	}
	r.mu.Lock()
	r.listeners = append(r.listeners, fn)
	r.mu.Unlock()
}

// IsActive reports whether the named tool may be called in this run now:
// a core or direct tool, a deferred tool activated by tool_search or
// referenced by a retained call, or tool_search itself when anything is
// deferred.
func (r *Run) IsActive(name string) bool {
	if name == ToolSearchName {
		return r.c.Searchable()
	}
	i, ok := r.c.byName[name]
	if !ok {
		return false
	}
	if !r.c.deferred[i] {
		return r.c.unusable[name] == nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.searched[name] || r.referenced[name]
}

// Active returns the tools whose schemas the model sees now, in a stable
// order: core and direct tools in entry order, then tool_search (when
// anything is deferred), then the active deferred tools in entry order.
// Activation only ever appends within that last part, so the head of the
// list stays the same across a run's steps.
func (r *Run) Active() []*tool.Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*tool.Tool, 0, len(r.c.entries)-r.c.nDeferred+1+len(r.searched)+len(r.referenced))
	for i, e := range r.c.entries {
		if !r.c.deferred[i] && r.c.unusable[e.Tool.Name()] == nil {
			out = append(out, e.Tool)
		}
	}
	if r.c.Searchable() {
		out = append(out, r.search)
	}
	for i, e := range r.c.entries {
		if n := e.Tool.Name(); r.c.deferred[i] && (r.searched[n] || r.referenced[n]) {
			out = append(out, e.Tool)
		}
	}
	return out
}

// Tool returns the named tool if it is active in this run (tool_search
// included).
func (r *Run) Tool(name string) (*tool.Tool, bool) {
	if !r.IsActive(name) {
		return nil, false
	}
	if name == ToolSearchName {
		return r.search, true
	}
	return r.c.tool(name)
}

// Activate makes deferred tools active for the rest of the run, as a
// tool_search answer does, and returns the names that were not active
// before, in the order given. Names that are unknown, core, direct or
// already active add nothing, nor does a tool whose input schema does not
// compile (activation is when a deferred tool's schema is compiled; see
// tool.Spec.CompileOnUse). OnActivate callbacks fire when the result is
// not empty.
func (r *Run) Activate(names ...string) []string {
	usable := r.c.compileAll(names)
	r.mu.Lock()
	var added []string
	for _, n := range names {
		if !r.c.isDeferred(n) || r.searched[n] || !usable[n] {
			continue
		}
		r.searched[n] = true
		if !r.referenced[n] && !slices.Contains(added, n) {
			added = append(added, n)
		}
	}
	r.mu.Unlock()
	r.notify(added)
	return added
}

// Retain takes the tool names referenced by tool calls in the messages
// that survive compaction (the whole retained context, each time it is
// rebuilt) and makes the deferred ones among them active without a new
// search (seed: "A deferred tool referenced by a retained historical
// tool-call is reactivated automatically and needs rediscovery only after
// that reference leaves context"). Each call replaces the previous
// reference set: a deferred tool that was active only by reference becomes
// inactive once it is no longer referenced; one activated by tool_search
// in this run stays active. Names that are not deferred tools are ignored.
// OnActivate fires for the names that became active.
func (r *Run) Retain(referenced []string) {
	usable := r.c.compileAll(referenced)
	r.mu.Lock()
	next := make(map[string]bool, len(referenced))
	var added []string
	for _, n := range referenced {
		if !r.c.isDeferred(n) || next[n] || !usable[n] {
			continue
		}
		next[n] = true
		if !r.referenced[n] && !r.searched[n] {
			added = append(added, n)
		}
	}
	r.referenced = next
	r.mu.Unlock()
	r.notify(added)
}

func (r *Run) notify(names []string) {
	if len(names) == 0 {
		return
	}
	r.mu.Lock()
	ls := slices.Clone(r.listeners)
	r.mu.Unlock()
	for _, fn := range ls {
		fn(slices.Clone(names))
	}
}

// Dispatch enforces the active set on one call (ARCHITECTURE.md, "One
// call, end to end", step 2). A call to tool_search is answered by this
// run's own search tool. A call to any other active tool goes to next. A
// call to a tool that is not active is never executed: the result is a
// Discovery-stage error that tells the model to load a deferred tool with
// tool_search first; for a tool whose input schema did not compile (at
// catalog build for a direct tool, at activation for a deferred one) that
// the tool cannot be used and why; for a departed MCP tool (see [Run.SetDeparted]) that
// its server is not connected ("MCP server S is disconnected: <reason>")
// or that the server stopped offering it ("tool X is no longer offered by
// MCP server S (removed at refresh)"); else that no tool of that name
// exists in this run.
func (r *Run) Dispatch(ctx context.Context, call *tool.Call, next func(context.Context, *tool.Call) *tool.Result) *tool.Result {
	if call == nil {
		call = &tool.Call{}
	}
	name := call.Name
	if name == ToolSearchName && r.c.Searchable() {
		return r.search.Call(ctx, call)
	}
	if r.IsActive(name) {
		return next(ctx, call)
	}
	if t, ok := r.c.tool(name); ok {
		if done, err := t.Compiled(); done && err != nil {
			// Its schema did not compile: the tool says so, at the
			// Discovery stage, without running.
			return t.Call(ctx, call)
		}
	}
	if r.c.isDeferred(name) {
		return tool.ErrorResult(tool.Errorf(tool.Discovery,
			"tool %q exists but is not loaded in this run, so the call was not executed", name).
			WithHint(fmt.Sprintf(`call %s with {"query": "select:%s"} to load its schema, then call it again with arguments that match that schema`, ToolSearchName, name)), name)
	}
	if d, ok := r.departure(name); ok {
		return tool.ErrorResult(r.departedError(name, d), name)
	}
	hint := "call one of the tools listed for this run"
	if r.c.Searchable() {
		hint = fmt.Sprintf("describe the action to %s to find a tool that does it", ToolSearchName)
	}
	return tool.ErrorResult(tool.Errorf(tool.Discovery, "no tool named %q exists in this run, so the call was not executed", name).
		WithHint(hint), name)
}

type searchInput struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results,omitempty"`
}

// handleSearch answers one tool_search call: it finds candidates, writes
// them with their full schemas within MaxOutput, and activates those
// written.
func (r *Run) handleSearch(_ context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[searchInput](call)
	if err != nil {
		return nil, err
	}
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return nil, tool.Errorf(tool.Parameters, "query is empty").
			WithHint(`describe the action you need, or give "select:<name>"`)
	}
	k := in.MaxResults
	capped := false
	if k <= 0 {
		k = r.c.opts.DefaultResults
	}
	if k > r.c.opts.MaxResults {
		k, capped = r.c.opts.MaxResults, true
	}
	if r.c.nDeferred == 0 && r.c.expecting {
		n, _ := r.c.Expecting()
		return tool.TextWith(fmt.Sprintf("No tool is deferred yet: %d MCP server(s) are still connecting and their tools join this search as they connect "+
			"(the tool list changes then, with notifications/tools/list_changed). Use the listed tools meanwhile, or search again after the list changed.", n),
			tool.Evidence{"matched": 0, "activated": []string{}, "pendingServers": n}), nil
	}
	if r.c.nDeferred == 0 {
		return tool.TextWith("No tools are deferred in this run: every available tool is already loaded.",
			tool.Evidence{"matched": 0, "activated": []string{}}), nil
	}

	var names []string // candidates, best first
	var notes []string // lines about select: names that load nothing
	if rest, ok := strings.CutPrefix(q, "select:"); ok {
		for _, n := range strings.Split(rest, ",") {
			n = strings.TrimSpace(n)
			switch {
			case n == "" || slices.Contains(names, n):
			case r.c.isDeferred(n):
				names = append(names, n)
			case r.IsActive(n):
				notes = append(notes, fmt.Sprintf("%s is already loaded; call it directly.", n))
			default:
				if d, ok := r.departure(n); ok {
					notes = append(notes, r.departedError(n, d).Msg+".")
					continue
				}
				notes = append(notes, fmt.Sprintf("No tool is named %q.", n))
			}
		}
	} else {
		for _, h := range r.c.Search(q, k) {
			names = append(names, h.Name)
		}
	}

	var b strings.Builder
	var shown []string
	omitted := 0
	for i, n := range names {
		t, _ := r.c.tool(n)
		if err := t.Compile(); err != nil {
			// Activation is when a deferred tool's schema is compiled:
			// one that does not compile is named, never loaded.
			notes = append(notes, fmt.Sprintf("%s cannot be loaded: its input schema was rejected (%s); use another tool.", n, schemaReason(err)))
			continue
		}
		block := fmt.Sprintf("\n## %s\n%s\nInput schema: %s\n", n, strings.TrimSpace(t.Description()), compactJSON(t.InputSchema()))
		if len(shown) > 0 && b.Len()+len(block) > r.c.opts.MaxOutput {
			omitted = len(names) - i
			break
		}
		b.WriteString(block)
		shown = append(shown, n)
	}
	if len(shown) == 0 {
		var b strings.Builder
		for _, n := range notes {
			b.WriteString(n + "\n")
		}
		if len(names) > 0 {
			fmt.Fprintf(&b, "Nothing was loaded: no tool that matched %q can be used. %d tools are deferred; "+
				"search again for another tool that does the action.", q, r.c.nDeferred)
		} else {
			fmt.Fprintf(&b, "No deferred tool matched %q, so nothing was loaded. %d tools are deferred; "+
				"search again with other words for the action and its object, or use select:<name> with an exact name.", q, r.c.nDeferred)
		}
		return tool.TextWith(b.String(), tool.Evidence{"matched": len(names), "activated": []string{}}), nil
	}
	r.Activate(shown...)

	var head strings.Builder
	for _, n := range notes {
		head.WriteString(n + "\n")
	}
	fmt.Fprintf(&head, "Loaded %d tool(s); each can now be called for the rest of this run with arguments matching its input schema:\n", len(shown))
	var tail strings.Builder
	if omitted > 0 {
		fmt.Fprintf(&tail, "\n[%d more match(es) left out by tool_search's %d-byte answer limit and not loaded; use select:<name> or a narrower query to load them.]\n", omitted, r.c.opts.MaxOutput)
	}
	if capped {
		fmt.Fprintf(&tail, "\n[max_results was capped at %d.]\n", r.c.opts.MaxResults)
	}
	return tool.TextWith(head.String()+b.String()+tail.String(), tool.Evidence{
		"matched":   len(names),
		"activated": shown,
		"omitted":   omitted,
	}), nil
}

// schemaReason is the keyword and message of a schema that did not
// compile.
func schemaReason(err error) string {
	var de *tool.DefinitionError
	if errors.As(err, &de) {
		if strings.Contains(de.Msg, de.Keyword) {
			return de.Msg
		}
		return de.Keyword + ": " + de.Msg
	}
	return err.Error()
}

// compileAll compiles the schemas of the named deferred tools (each once,
// outside any lock) and reports which are usable.
func (c *Catalog) compileAll(names []string) map[string]bool {
	ok := make(map[string]bool, len(names))
	for _, n := range names {
		if t, found := c.tool(n); found && c.isDeferred(n) {
			ok[n] = t.Compile() == nil
		}
	}
	return ok
}

// compactJSON removes insignificant whitespace; a schema that does not
// compact (it always should: Define checked it) is returned as is.
func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
