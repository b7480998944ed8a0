package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/tool"
)

// DefaultMaxParallelCalls is the default of Options.MaxParallelCalls:
// the most calls of one model turn that run at once (settings
// agent.maxParallelCalls).
const DefaultMaxParallelCalls = 4

// DefaultSerialTools is the default of Options.SerialTools: tools that
// always run alone although they are marked read-only. ask_user_question
// asks a person, and two questions at once on one terminal would
// interleave.
func DefaultSerialTools() []string { return []string{"ask_user_question"} }

// partialTailChars bounds the live output a call keeps for the cancelled
// result of a call that was given up (its last characters).
const partialTailChars = 2000

// access is what one call of a batch may share with its siblings (the
// concurrency rule of Options.MaxParallelCalls).
type access struct {
	alone bool     // runs with no sibling at all
	write bool     // writes paths
	paths []string // resolved keys of the paths it reads or writes
}

// conflicts reports whether a and b may not run at the same time: one
// runs alone, or one writes a path the other reads or writes (the same
// path, or one inside the other: a write to src/a.go conflicts with a
// grep of src).
func conflicts(a, b access) bool {
	if a.alone || b.alone {
		return true
	}
	if !a.write && !b.write {
		return false
	}
	for _, p := range a.paths {
		for _, q := range b.paths {
			if overlaps(p, q) {
				return true
			}
		}
	}
	return false
}

// overlaps reports whether resolved paths p and q are the same or one
// holds the other. "." (the workspace root, unresolved) holds every
// relative path.
func overlaps(p, q string) bool {
	if p == q || p == "." || q == "." {
		return true
	}
	within := func(a, b string) bool { return strings.HasPrefix(b, strings.TrimSuffix(a, "/")+"/") }
	return within(p, q) || within(q, p)
}

// classify decides how call u may run beside its siblings. The rule, and
// where it comes from:
//
//   - a tool matching Options.SerialTools runs alone (default
//     ask_user_question);
//   - tool_search and a tool marked read-only (MCP annotation
//     readOnlyHint: our ls, read_file, glob, grep, view_tool_call,
//     view_skill; an MCP server's tools as it annotates them) runs beside
//     any call that does not write a path it reads;
//   - a tool that writes paths it declares (tool.Access kind Edit:
//     write_file, edit_file) runs beside calls on other paths; calls on
//     the same path (resolved inside Options.Workspace, so "nums.txt" and
//     "./nums.txt" are one) run one after another in call order: a lock
//     per path;
//   - a tool matching Options.ParallelTools runs beside others as a
//     read-only tool would;
//   - anything else (execute, a tool without annotations, a destructive
//     MCP tool, a name not active in the run) runs alone.
//
// This is the rule of Claude Code (toolOrchestration.ts partitionToolCalls:
// a call is concurrency-safe only when its tool says so for that input,
// read-only tools and MCP tools with readOnlyHint; unsafe calls run
// serially) and of Codex (core/src/tools/parallel.rs ToolCallRuntime: a
// tool that supports parallel calls takes a shared lock, every other one
// the exclusive lock), with one refinement from BH-074: writes to
// different files stay concurrent, writes to one file are serialized.
func (r *run) classify(u provider.Block) access {
	o := &r.a.opts
	if matchAny(o.SerialTools, u.Name) {
		return access{alone: true}
	}
	if u.Name == discovery.ToolSearchName {
		return access{}
	}
	set, dr := r.set(), r.discovery()
	t, ok := set.Tool(u.Name)
	if !ok || (dr != nil && !dr.IsActive(u.Name)) {
		// A Discovery-stage refusal to come, or a tool a sibling
		// tool_search is about to load: after its elders.
		return access{alone: true}
	}
	acc, err := t.Access(u.Input)
	if err != nil {
		return access{alone: true} // the Parameters stage refuses it
	}
	ann := t.Annotations()
	switch {
	case acc.Kind == tool.AccessEdit:
		if len(acc.Paths) == 0 {
			return access{alone: true}
		}
		return access{write: true, paths: r.pathKeys(acc.Paths)}
	case ann != nil && ann.ReadOnlyHint, matchAny(o.ParallelTools, u.Name):
		a := access{}
		if acc.Kind == tool.AccessRead {
			a.paths = r.pathKeys(acc.Paths)
		}
		return a
	}
	return access{alone: true}
}

// matchAny reports whether name matches one of patterns (path.Match: "*"
// any run of characters, "?" one, "[…]" a class).
func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok || p == name {
			return true
		}
	}
	return false
}

// pathKeys resolves paths as the per-path lock keys them
// (pipeline.PathKey inside Options.Workspace); no path is the workspace
// root.
func (r *run) pathKeys(paths []string) []string {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = pipeline.PathKey(r.a.opts.Workspace, p)
	}
	return out
}

// slot states of a batch.
const (
	slotPending = iota
	slotRunning
	slotDone
)

// ended is a call's goroutine reporting its result.
type ended struct {
	i   int
	res *tool.Result
}

// runCalls runs one assistant turn's tool calls and returns the user
// message's blocks: one tool_result per tool_use, in tool_use order, then
// the turn's confirm decisions as text (in call order).
//
// Calls start in call order, up to Options.MaxParallelCalls at once, each
// as soon as no earlier unfinished call of the turn conflicts with it
// (classify). Every call's record is written by the pipeline the moment
// it ends, and its tool_result event goes out then (completion order, with
// its call id); one call's failure does not stop its siblings. After
// cancellation calls not yet started get "not run" results, running ones
// keep what they return (a cancelled result with the partial output;
// an error gets a first line saying it was cancelled and after how long),
// and a call that has not returned CancelGrace after cancellation is given
// up with a cancelled result holding the tail of its live output
// (BH-051, BH-073).
func (r *run) runCalls(ctx context.Context, uses []provider.Block, h Handler, native bool, emit func(Event)) []provider.Block {
	n := len(uses)
	r.mu.Lock()
	nEx := len(r.sum.Exchanges)
	r.mu.Unlock()
	if native {
		for _, u := range uses {
			r.activateNative(u.Name)
		}
	}
	acc := make([]access, n)
	for i, u := range uses {
		acc[i] = r.classify(u)
	}
	reserved := r.reserveSeqs(ctx, uses) // records in call order (seq.go)
	limit := r.a.opts.MaxParallelCalls
	now := r.a.opts.Now

	results := make([]*tool.Result, n)
	state := make([]int, n)
	started := make([]time.Time, n)
	tails := make([]*tail, n)
	queues := make([]*queue, n)
	evs := make(chan Event, r.a.opts.EventBuffer)
	dones := make(chan ended, n) // never blocks: a given-up call may report late
	index := make(map[string]int, n)
	for i, u := range uses {
		index[u.ID] = i
	}
	running, left := 0, n
	var cancelledAt time.Time

	finish := func(i int, res *tool.Result) {
		u := uses[i]
		if state[i] == slotRunning {
			running--
		}
		state[i] = slotDone
		left--
		if q := queues[i]; q != nil {
			r.mu.Lock()
			delete(r.queues, u.ID)
			r.mu.Unlock()
			q.close()
		}
		if res.IsError {
			st := res.Stage
			if st == "" {
				st = tool.Execution
			}
			r.sum.Failures[st]++
		}
		r.sum.Calls++
		results[i] = res
		emit(Event{Kind: EventToolResult, Step: r.step, CallID: u.ID, ProviderCallID: u.ProviderID, Tool: u.Name, Input: u.Input, Result: res})
	}
	startReady := func() {
		for i := 0; i < n && running < limit && ctx.Err() == nil; i++ {
			if state[i] != slotPending {
				continue
			}
			blocked := false
			for j := range i {
				if state[j] != slotDone && conflicts(acc[j], acc[i]) {
					blocked = true
					break
				}
			}
			if blocked {
				continue
			}
			u := uses[i]
			state[i] = slotRunning
			running++
			started[i] = now()
			tails[i] = &tail{}
			q := &queue{ch: evs, ctxDone: ctx.Done(), closed: make(chan struct{})}
			queues[i] = q
			r.mu.Lock()
			r.queues[u.ID] = q
			r.mu.Unlock()
			emit(Event{Kind: EventToolCall, Step: r.step, CallID: u.ID, ProviderCallID: u.ProviderID, Tool: u.Name, Input: u.Input})
			go r.execute(ctx, i, u, h, q, dones)
		}
	}
	// take emits one live event and keeps its text for a given-up call.
	take := func(ev Event) {
		if i, ok := index[ev.CallID]; ok {
			if state[i] == slotDone {
				return // a late event of a call given up
			}
			if ev.Kind == EventOutput && ev.Output != nil {
				tails[i].add(ev.Output.Data)
			}
		}
		emit(ev)
	}

	startReady()
	ctxDone := ctx.Done()
	var grace <-chan time.Time
	for left > 0 {
		if ctx.Err() != nil {
			for i := range n {
				if state[i] == slotPending {
					res := tool.ErrorResult(tool.Errorf(tool.Execution, "not run: %s before this call started", stopReason(ctx)).
						WithHint("run it again if it is still needed"), uses[i].Name)
					if reserved != nil && reserved[i] {
						r.recordNotRun(ctx, uses[i], res)
					}
					finish(i, res)
				}
			}
			if left == 0 {
				break
			}
		}
		select {
		case ev := <-evs:
			take(ev)
		case d := <-dones:
			// Every event of the call was queued before it returned.
			for k := len(evs); k > 0; k-- {
				take(<-evs)
			}
			if state[d.i] != slotRunning {
				continue // given up already
			}
			res := d.res
			if ctx.Err() != nil && cancelledAt.IsZero() {
				cancelledAt = now() // ended with the cancellation, before its case ran
			}
			if !cancelledAt.IsZero() && res.IsError {
				res = cancelledForm(ctx, res, cancelledAt.Sub(started[d.i]), "")
			}
			finish(d.i, r.batchNote(d.i, uses, acc, results, res))
			startReady()
		case <-ctxDone:
			ctxDone = nil
			cancelledAt = now()
			t := time.NewTimer(r.a.opts.CancelGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			for i := range n {
				if state[i] != slotRunning {
					continue
				}
				res := tool.ErrorResult(tool.Errorf(tool.Execution,
					"the call did not stop within %s of cancellation and was abandoned", r.a.opts.CancelGrace).
					WithHint("inspect the state before retrying: the effect may be partial"), uses[i].Name)
				finish(i, cancelledForm(ctx, res, cancelledAt.Sub(started[i]), tails[i].String()))
			}
		}
	}

	blocks := make([]provider.Block, 0, n)
	for i, u := range uses {
		b := ResultBlock(u.ID, results[i])
		if n > 1 {
			b = withHeader(b, r.callHeader(u))
		}
		blocks = append(blocks, b)
	}
	r.mu.Lock()
	exs := slices.Clone(r.sum.Exchanges[nEx:])
	r.mu.Unlock()
	slices.SortStableFunc(exs, func(a, b approval.Exchange) int {
		return index[a.Action.CallID] - index[b.Action.CallID]
	})
	for _, ex := range exs {
		blocks = append(blocks, provider.Block{Type: provider.Text, Text: ex.Text()})
	}
	return blocks
}

// headerInputChars bounds the arguments a result's header shows, in
// characters (runes).
const headerInputChars = 80

// callHeader is the first line of each result of a turn with several
// calls (BH-071): "[<the model's id of the call> <tool> <arguments>]", the
// arguments a shell command as a quoted string or compact JSON, cut to 80
// characters, so that a model reading results by position still sees
// which call each answers.
func (r *run) callHeader(u provider.Block) string {
	id := u.ProviderID
	if id == "" {
		id = u.ID
	}
	args := ""
	if t, ok := r.set().Tool(u.Name); ok {
		if a, err := t.Access(u.Input); err == nil && a.Kind == tool.AccessBash && a.Command != "" {
			args = strconv.Quote(cut(a.Command, headerInputChars))
		}
	}
	if args == "" {
		var buf bytes.Buffer
		args = string(u.Input)
		if json.Compact(&buf, u.Input) == nil {
			args = buf.String()
		}
		args = cut(strings.ToValidUTF8(args, "\uFFFD"), headerInputChars)
	}
	return "[" + id + " " + u.Name + " " + args + "]"
}

// cut keeps the first n runes of s, "…" ending a cut.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// withHeader puts header as the first line of b's first text (a text
// block of its own before an image).
func withHeader(b provider.Block, header string) provider.Block {
	content := slices.Clone(b.Content)
	if len(content) > 0 && content[0].Type == provider.Text {
		content[0].Text = header + "\n" + content[0].Text
	} else {
		content = append([]provider.Block{{Type: provider.Text, Text: header}}, content...)
	}
	b.Content = content
	return b
}

// cancelledForm is the result of a call the run's cancellation stopped:
// a first line "cancelled by user after 3.1 s" (or the context's own
// reason when it was not the user), then the call's own content (its
// partial output) or partial, else "no output".
func cancelledForm(ctx context.Context, res *tool.Result, after time.Duration, partial string) *tool.Result {
	head := fmt.Sprintf("%s after %.1f s", stopReason(ctx), after.Seconds())
	out := *res
	out.IsError = true
	if out.Stage == "" {
		out.Stage = tool.Execution
	}
	var content []tool.Content
	switch {
	case partial == "" && onlyContextError(res):
		content = []tool.Content{{Type: tool.TextContent, Text: head + "; no output"}}
	case partial != "":
		content = append(content, tool.Content{Type: tool.TextContent, Text: head + "; partial output:\n" + partial})
		content = append(content, res.Content...)
	case len(res.Content) > 0:
		content = append(content, tool.Content{Type: tool.TextContent, Text: head})
		content = append(content, res.Content...)
	default:
		content = []tool.Content{{Type: tool.TextContent, Text: head + "; no output"}}
	}
	out.Content = content
	return &out
}

// stopReason says why ctx ended: "cancelled by user" (a stop: Canceled),
// else "stopped (<its error>)" (a deadline).
func stopReason(ctx context.Context) string {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return "stopped (" + err.Error() + ")"
	}
	return "cancelled by user"
}

// onlyContextError reports whether res says nothing but that its context
// ended (a tool that returned ctx.Err()): no output of its own.
func onlyContextError(res *tool.Result) bool {
	if len(res.Content) != 1 || res.Content[0].Type != tool.TextContent {
		return len(res.Content) == 0
	}
	t := res.Content[0].Text
	return strings.Contains(t, context.Canceled.Error()) || strings.Contains(t, context.DeadlineExceeded.Error())
}

// batchNote adds to a failed write the siblings that changed the same
// path earlier in the batch (BH-074): "file changed by call <id>
// (<tool>) during this batch", so a model does not read a bare "not
// found" and retry against a file it has not seen.
func (r *run) batchNote(i int, uses []provider.Block, acc []access, results []*tool.Result, res *tool.Result) *tool.Result {
	// Parameters too: a tool's own check of its input against the file
	// (edit_file's old_string not found) answers at that stage.
	if !res.IsError || !acc[i].write || (res.Stage != tool.Parameters && res.Stage != tool.Execution && res.Stage != tool.Verification) {
		return res
	}
	var by []string
	for j := range i {
		if results[j] != nil && !results[j].IsError && acc[j].write && conflicts(acc[j], acc[i]) {
			by = append(by, uses[j].ID+" ("+uses[j].Name+")")
		}
	}
	if len(by) == 0 {
		return res
	}
	word := "call"
	if len(by) > 1 {
		word = "calls"
	}
	out := *res
	note := fmt.Sprintf("file changed by %s %s during this batch: this call ran on the file as that left it; read it again before retrying",
		word, strings.Join(by, ", "))
	out.Content = append([]tool.Content{{Type: tool.TextContent, Text: note}}, res.Content...)
	return &out
}

// tail keeps the last partialTailChars bytes of a call's live output.
type tail struct{ b []byte }

func (t *tail) add(p []byte) {
	t.b = append(t.b, p...)
	if over := len(t.b) - partialTailChars; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
}

func (t *tail) String() string {
	if t == nil {
		return ""
	}
	return strings.ToValidUTF8(string(t.b), "")
}
