package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// Handler runs one call on the execution plane and never returns nil
// (pipeline.Handler).
type Handler = pipeline.Handler

// Middleware wraps a Handler (call logging, redaction): an embedder's own
// stage of the pipeline (pipeline.Middleware).
type Middleware = pipeline.Middleware

// Defaults of [Options].
const (
	DefaultMaxSteps    = 50
	DefaultCancelGrace = 10 * time.Second
	// DefaultEventBuffer is the default of Options.EventBuffer, in events.
	DefaultEventBuffer = 64
)

// Options configure an Agent. Model and Set are required; every other zero
// field takes the default given.
type Options struct {
	// Model is the route to the model; its Strategy decides how deferred
	// tools are presented.
	Model provider.Model
	// ModelName goes into every request's Model field.
	ModelName string
	// Set is the run's effective tool set (capability.Resolve).
	Set *capability.Set
	// Discovery sets the count gates and tool_search bounds; nil means the
	// seed's defaults.
	Discovery *discovery.Options
	// System is the system prompt; default the set's runtime instructions.
	System string
	// MaxSteps bounds the model calls of one run. Default 50.
	MaxSteps int
	// MaxTokens bounds one response, in output tokens; 0 is the adapter's
	// default.
	MaxTokens int
	// ContextBudget bounds the input of one request, in tokens (an o200k
	// estimate, compact.Count, of the messages, system prompt and tools):
	// above it the oldest whole exchanges are dropped (provider.Fit; the
	// task stays, a note says what went). A provider's own overflow
	// refusal halves it and retries. Default [DefaultContextBudget] (a
	// 200,000-token window with room for the answer); < 0 drops nothing
	// until the provider refuses.
	ContextBudget int
	// ContextNoteCalls is how many dropped tool calls the note that
	// replaces dropped exchanges names one by one (tool, arguments cut to
	// 80 characters, toolCallId); older ones are counted and the note
	// says how to list them (ListCallsCommand). Count; default
	// provider.DefaultNoteCalls (25).
	ContextNoteCalls int
	// ListCallsCommand is the command a context note gives for listing
	// every call of a task it could not name. Default "aibuddy calls list
	// --task <taskID>".
	ListCallsCommand func(taskID string) string
	// ContextTarget is what the messages are cut down to once over
	// ContextBudget, in tokens, so one cut serves several steps (and the
	// provider's prompt cache). Default 3/4 of ContextBudget.
	ContextTarget int
	// CurrentSet, when set, is asked before every step for the run's tool
	// set as it is now (MCP servers come and go): a set other than the
	// last one is re-resolved into the run (count gates re-evaluated, new
	// tools added, removed tools gone, tool_search activations kept). nil
	// keeps Set for the whole run.
	CurrentSet func() *capability.Set
	// Pipeline is the chain every tool call of a run goes through
	// (pipeline.New: record, Discovery, middleware, Parameters,
	// Authorization, Execution, Verification, projection, compaction),
	// the one aibuddy mcp and aibuddy call use too. Default: built by
	// pipeline.New from Store, Compactor, Policy, Confirmer, Middleware,
	// Verify, ResultMaxChars, Now and Logger below; when set, those
	// fields are not used for calls (Store, when nil, is then the
	// pipeline's, for compacted forms).
	Pipeline *pipeline.Pipeline
	// Policy says which calls need a person's confirmation; nil means
	// approval.DefaultPolicy(). Use &approval.Policy{} to confirm nothing.
	Policy *approval.Policy
	// Confirmer asks a person. nil refuses every call the policy marks
	// (Authorization stage): a run never proceeds unasked.
	Confirmer approval.Confirmer
	// Middleware are the embedder's own stages (pipeline.Options.Middleware:
	// after Discovery, before Parameters and the confirm gate), first
	// entry outermost.
	Middleware []Middleware
	// Verify replaces the Verification stage's check; default
	// pipeline.Verify, the check each tool declares (tool.Spec.Verify).
	// It returns the result to keep.
	Verify func(call *tool.Call, res *tool.Result) *tool.Result
	// Store keeps a durable record of every call (the pipeline's record
	// stage: "running" at start, the final record before the result
	// reaches the model) and of every confirm exchange, and supplies
	// compacted model forms when the context is rebuilt; nil keeps
	// records in memory only (the transcript).
	Store store.Store
	// Compactor receives every finished record (compact.Compactor); only
	// with a Store.
	Compactor result.Compactor
	// NewTaskID mints the task id of each run; default "task-<unix nanos
	// base 36>".
	NewTaskID func() string
	// NewCallID mints aibuddy's id of each tool call the model makes (the
	// toolCallId of its record, its result and view_tool_call), which must
	// be unique across tasks: a provider's own ids are not (some servers
	// send "call_0" on every turn); the provider's id is kept beside it
	// (provider.Block.ProviderID, store.Record.ProviderCallID) and is what
	// the provider is sent back. Default "call_" and 24 random hex digits.
	NewCallID func() string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// CancelGrace is how long a cancelled call may take to return before
	// the run gives it a synthetic cancelled result and moves on. Default
	// 10 s.
	CancelGrace time.Duration
	// Logger receives warnings (a record that could not be written);
	// default discards.
	Logger *slog.Logger
	// ResultMaxChars bounds the text of every tool result the model sees,
	// in characters (runes): a larger result keeps its head and tail with
	// a header naming the omitted characters and lines (result.Bound);
	// with a Store the raw output stays in the call's record and the
	// header names the view_tool_call that recovers it, without one it
	// says the middle is not kept. Default result.DefaultMaxModelChars
	// (30,000).
	ResultMaxChars int
	// MaxParallelCalls is the most tool calls of one model turn that run
	// at once (settings agent.maxParallelCalls). Which calls may share
	// the time is decided per call (read-only tools, writes to other
	// paths; execute and tools without annotations run alone: see
	// SerialTools, ParallelTools and the README's settings section).
	// Results go back in call order either way. Count; default
	// [DefaultMaxParallelCalls] (4); 1 runs every call alone.
	MaxParallelCalls int
	// ParallelTools are tool names (path.Match patterns, "mcp__*") whose
	// calls may run beside their siblings although the tools are not
	// marked read-only (settings agent.parallelTools): an MCP tool
	// without annotations known to be safe, or "execute" for read-only
	// shell use. Default none.
	ParallelTools []string
	// SerialTools are tool names (path.Match patterns) whose calls always
	// run alone, first among them (settings agent.serialTools). nil means
	// [DefaultSerialTools] (ask_user_question); an empty non-nil list
	// means none.
	SerialTools []string
	// Workspace is the workspace root the per-path write lock resolves
	// relative paths in (pipeline.PathKey: symbolic links followed), so
	// "nums.txt", "./nums.txt" and its absolute path share one lock; it
	// is also the pipeline's (pipeline.Options.Workspace) when the agent
	// builds it. Default "": paths are only cleaned.
	Workspace string
	// EventBuffer is how many live events (output chunks, progress) of
	// one turn's calls wait for the consumer of the run's stream. When it is full the
	// tool blocks on its next event (a command's pipe stalls) until the
	// consumer catches up, so a flood never grows memory; after
	// cancellation events that do not fit are dropped instead. Default 64
	// events.
	EventBuffer int
}

// Agent runs tasks with one model over one tool set. It holds no per-run
// state: each Run gets a fresh discovery run, so any number may run at
// once.
type Agent struct {
	opts    Options
	catalog *discovery.Catalog
}

// New returns an Agent. Missing Model or Set is reported by Run.
func New(opts Options) *Agent {
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.Policy == nil {
		opts.Policy = approval.DefaultPolicy()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewTaskID == nil {
		now := opts.Now
		opts.NewTaskID = func() string { return "task-" + strconv.FormatInt(now().UnixNano(), 36) }
	}
	if opts.NewCallID == nil {
		opts.NewCallID = randomCallID
	}
	if opts.ListCallsCommand == nil {
		opts.ListCallsCommand = func(task string) string { return "aibuddy calls list --task " + task }
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if opts.EventBuffer <= 0 {
		opts.EventBuffer = DefaultEventBuffer
	}
	if opts.MaxParallelCalls <= 0 {
		opts.MaxParallelCalls = DefaultMaxParallelCalls
	}
	if opts.SerialTools == nil {
		opts.SerialTools = DefaultSerialTools()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Pipeline == nil {
		opts.Pipeline = pipeline.New(&pipeline.Options{Store: opts.Store, Compactor: opts.Compactor,
			MaxModelChars: opts.ResultMaxChars, Policy: opts.Policy, Confirmer: opts.Confirmer,
			Middleware: opts.Middleware, Verify: opts.Verify, Now: opts.Now, Logger: opts.Logger, Workspace: opts.Workspace})
	} else if opts.Store == nil {
		opts.Store = opts.Pipeline.Store()
	}
	a := &Agent{opts: opts}
	if opts.Set != nil {
		if opts.System == "" {
			a.opts.System = opts.Set.Instructions()
		}
		a.catalog = discovery.NewCatalogWith(discovery.EntriesOf(opts.Set), opts.Discovery)
	}
	return a
}

// Catalog is the narrowing of the agent's tool set (gate decisions,
// deferred index); nil without a Set. A run with Options.CurrentSet
// re-resolves its own catalog when the set changes.
func (a *Agent) Catalog() *discovery.Catalog { return a.catalog }

// EventKind names an Event.
type EventKind string

// Events of a run, in the order they can occur within a step.
const (
	EventStep       EventKind = "step"        // a step starts: Step, Tools (names presented to the model)
	EventText       EventKind = "text"        // a text delta from the model: Text
	EventToolCall   EventKind = "tool_call"   // a tool call starts: CallID, Tool, Input
	EventOutput     EventKind = "output"      // live output of a call: CallID, Output (stdout/stderr chunk)
	EventProgress   EventKind = "progress"    // progress of a call: CallID, Output
	EventHeartbeat  EventKind = "heartbeat"   // a call is alive: CallID (never reaches the model)
	EventConfirm    EventKind = "confirm"     // a person is asked to confirm: CallID, Action
	EventDecision   EventKind = "decision"    // a confirm exchange completed: CallID, Exchange
	EventToolResult EventKind = "tool_result" // a call ended: CallID, Tool, Result (IsError, Stage)
	EventDone       EventKind = "done"        // the run ended: Summary (always the last event)
)

// Event is one item of a run's stream.
type Event struct {
	Kind   EventKind
	Step   int // 1-based step the event belongs to
	Text   string
	Tools  []string
	CallID string // aibuddy's toolCallId of the call
	// ProviderCallID is the model provider's own id of the call
	// (tool_call and tool_result events); it may repeat across calls.
	ProviderCallID string
	Tool           string
	Input          json.RawMessage
	Output         *tool.Event
	Action         *approval.Action
	Exchange       *approval.Exchange
	Result         *tool.Result
	Summary        *Summary
}

// StopReason says why a run ended.
type StopReason string

// Stop reasons.
const (
	StopEndTurn   StopReason = "end_turn"   // the model answered without tool calls
	StopMaxTokens StopReason = "max_tokens" // the model's answer was cut at its token limit
	StopMaxSteps  StopReason = "max_steps"  // Options.MaxSteps model calls were made
	StopCancelled StopReason = "cancelled"  // the context was cancelled (or the consumer stopped ranging)
	StopError     StopReason = "error"      // the model call failed
)

// Summary is the outcome of one run.
type Summary struct {
	TaskID string
	Steps  int // model calls made
	Stop   StopReason
	Calls  int // tool calls that got a result (synthetic cancelled ones included)
	// Failures counts error results by stage (seed: "The lifecycle also
	// gives failures a precise location").
	Failures map[tool.Stage]int
	// Exchanges are the run's confirm exchanges, in order.
	Exchanges []approval.Exchange
	Usage     provider.Usage
	// RecordErrors counts records the Store refused (each logged).
	RecordErrors int
	// Transcript is the raw transcript: the task, every assistant turn
	// and every tool result as the model saw it when it arrived (bounded
	// to Options.ResultMaxChars; the whole output is in the Store's
	// record), confirm decisions as user text. Pass
	// it to Continue to go on with a new message.
	Transcript []provider.Message
}

// ErrNoModel and ErrNoSet: the Options lack a required part.
var (
	ErrNoModel = errors.New("agent: Options.Model is nil")
	ErrNoSet   = errors.New("agent: Options.Set is nil")
)

// Run runs task to the end and streams its events. The last pair is always
// an EventDone with the Summary; its error is nil when the model stopped
// or the step limit was reached, ctx's error when the run was cancelled
// (the transcript is still valid: every tool_use has its tool_result), and
// the model's error (wrapped, "agent: model call in step N: …") when a
// model call failed. Breaking out of the range cancels the run (running
// commands are stopped) and no Done event follows.
func (a *Agent) Run(ctx context.Context, task string) iter.Seq2[Event, error] {
	return a.Continue(ctx, nil, task)
}

// Continue is Run over an earlier transcript (a previous Summary's): the
// transcript is repaired first (an interrupted turn gets its missing
// tool_results, BH-051), then text is added as the user's new message.
// Discovery state is fresh: deferred tools referenced by retained calls
// are active again, others need tool_search.
func (a *Agent) Continue(ctx context.Context, prior []provider.Message, text string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		emit := func(ev Event) {
			if stopped {
				return
			}
			if !yield(ev, nil) {
				stopped = true
				cancel()
			}
		}
		sum, err := a.loop(ctx, prior, text, emit)
		if !stopped {
			yield(Event{Kind: EventDone, Step: sum.Steps, Summary: sum}, err)
		}
	}
}

// run is the state of one run.
type run struct {
	a      *Agent
	taskID string
	step   int
	sum    *Summary
	tools  toolState    // the current set, catalog and discovery run (refresh.go)
	fit    contextState // the context budget and the current cut (overflow.go)

	mu     sync.Mutex
	queues map[string]*queue // call id -> its live event queue
}

func (a *Agent) loop(ctx context.Context, prior []provider.Message, text string, emit func(Event)) (*Summary, error) {
	r := &run{a: a, taskID: a.opts.NewTaskID(), queues: map[string]*queue{}}
	r.sum = &Summary{TaskID: r.taskID, Failures: map[tool.Stage]int{}}
	end := func(stop StopReason, err error) (*Summary, error) {
		r.sum.Stop = stop
		return r.sum, err
	}
	if a.opts.Model == nil {
		return end(StopError, ErrNoModel)
	}
	if a.opts.Set == nil {
		return end(StopError, ErrNoSet)
	}
	r.initTools()
	r.initContext()
	transcript := Repair(prior)
	transcript = appendMessage(transcript, provider.Message{Role: provider.User,
		Blocks: []provider.Block{{Type: provider.Text, Text: text}}})
	r.sum.Transcript = transcript
	handler := a.handler(r)
	native := a.opts.Model.Strategy() == provider.Native

	imageSwaps := 0
	for step := 1; ; step++ {
		if err := ctx.Err(); err != nil {
			return end(StopCancelled, err)
		}
		if step > a.opts.MaxSteps {
			return end(StopMaxSteps, nil)
		}
		r.step = step
		r.refreshTools()
		sent := Rebuild(r.sum.Transcript, &RebuildOptions{Compacted: a.compacted(ctx)})
		sent = r.fitContext(sent, native)
		r.retain(ToolNames(sent))
		tools := r.present(native)
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Name
		}
		emit(Event{Kind: EventStep, Step: step, Tools: names})

		req := &provider.Request{Model: a.opts.ModelName, System: a.opts.System, Messages: sent, Tools: tools, MaxTokens: a.opts.MaxTokens}
		msg, stop, err := a.callModel(ctx, r, req, emit)
		r.sum.Steps = step
		var rejected provider.ImageRejection
		if err != nil && ctx.Err() == nil && errors.As(err, &rejected) && imageSwaps < maxImageSwaps {
			// BH-013: the provider refused an image. Swap it for a note in
			// the stored history and ask again, instead of failing every
			// later turn on the same 400.
			imageSwaps++
			r.sum.Transcript = swapRejectedImages(r.sum.Transcript, sent, rejected.Replace(sent))
			a.opts.Logger.Warn("agent: the provider refused an image; it is now a text note in the history", "err", err)
			step--
			continue
		}
		if err != nil && ctx.Err() == nil && r.shrinkAfterOverflow(err) {
			step-- // the same step again over fewer exchanges
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return end(StopCancelled, ctx.Err())
			}
			return end(StopError, fmt.Errorf("agent: model call in step %d: %w", step, err))
		}
		r.fit.overflows = 0
		uses := prepareUses(&msg, a.opts.NewCallID)
		if len(msg.Blocks) > 0 {
			r.sum.Transcript = appendMessage(r.sum.Transcript, msg)
		}
		if len(uses) == 0 {
			if stop == "max_tokens" {
				return end(StopMaxTokens, nil)
			}
			return end(StopEndTurn, nil)
		}
		results := r.runCalls(ctx, uses, handler, native, emit)
		r.sum.Transcript = append(r.sum.Transcript, provider.Message{Role: provider.User, Blocks: results})
		if err := ctx.Err(); err != nil {
			return end(StopCancelled, err)
		}
	}
}

// callModel streams one response; text deltas go out as they come.
func (a *Agent) callModel(ctx context.Context, r *run, req *provider.Request, emit func(Event)) (provider.Message, string, error) {
	var texts string
	var uses []provider.Block
	var done *provider.Message
	stop := ""
	for ev, err := range a.opts.Model.Stream(ctx, req) {
		if err != nil {
			return provider.Message{}, "", err
		}
		switch ev.Kind {
		case provider.EventText:
			texts += ev.Text
			emit(Event{Kind: EventText, Step: r.step, Text: ev.Text})
		case provider.EventToolUse:
			if ev.Block != nil {
				uses = append(uses, *ev.Block)
			}
		case provider.EventDone:
			stop = ev.StopReason
			r.sum.Usage.InputTokens += ev.Usage.InputTokens
			r.sum.Usage.OutputTokens += ev.Usage.OutputTokens
			done = ev.Message
		}
	}
	if err := ctx.Err(); err != nil {
		return provider.Message{}, "", err
	}
	if done != nil {
		m := *done
		m.Role = provider.Assistant
		return m, stop, nil
	}
	m := provider.Message{Role: provider.Assistant}
	if texts != "" {
		m.Blocks = append(m.Blocks, provider.Block{Type: provider.Text, Text: texts})
	}
	m.Blocks = append(m.Blocks, uses...)
	return m, stop, nil
}

// prepareUses gives every tool_use of msg an id of aibuddy's own from
// newID, keeping the provider's id in ProviderID (what the provider is sent
// back), and returns them in order. Provider ids are not unique in the
// wild: a server that sends "call_0" on every turn would otherwise have
// each later exchange dropped from context as a repeat, and its record
// overwrite the earlier one.
func prepareUses(msg *provider.Message, newID func() string) []provider.Block {
	var uses []provider.Block
	for i := range msg.Blocks {
		b := &msg.Blocks[i]
		if b.Type != provider.ToolUse {
			continue
		}
		if b.ProviderID == "" {
			b.ProviderID = b.ID
		}
		b.ID = newID()
		if len(b.Input) == 0 {
			b.Input = json.RawMessage("{}")
		}
		uses = append(uses, *b)
	}
	return uses
}

// randomCallID is the default Options.NewCallID: "call_" and 24 random
// hex digits (96 bits).
func randomCallID() string { return tool.NewCallID("call_") }

// handler is the run's entry into the pipeline (pipeline.Pipeline.Handler:
// record, Discovery through the run's current discovery state, the
// Middleware, Parameters, the confirm gate, Execution on the current set,
// Verification, projection, compaction). Confirm exchanges become events
// and the summary's Exchanges.
func (a *Agent) handler(r *run) Handler {
	return a.opts.Pipeline.Handler(pipeline.Run{
		TaskID: r.taskID,
		Tools: func() (*capability.Set, pipeline.Dispatcher) {
			r.tools.mu.Lock()
			defer r.tools.mu.Unlock()
			return r.tools.set, r.tools.dr
		},
		OnAsk: func(ctx context.Context, act approval.Action) {
			r.push(act.CallID, Event{Kind: EventConfirm, Step: r.step, CallID: act.CallID, Tool: act.Tool, Action: &act})
		},
		OnDecision: func(ctx context.Context, ex approval.Exchange) {
			r.mu.Lock()
			r.sum.Exchanges = append(r.sum.Exchanges, ex)
			r.mu.Unlock()
			r.push(ex.Action.CallID, Event{Kind: EventDecision, Step: r.step, CallID: ex.Action.CallID, Tool: ex.Action.Tool, Exchange: &ex})
		},
		OnRecordError: func(string, error) {
			r.mu.Lock()
			r.sum.RecordErrors++
			r.mu.Unlock()
		},
	})
}

// execute runs call i of a batch on its own goroutine and reports its
// result on done. Its live events go to q, whose channel the run's
// goroutine (the iterator's) drains, so a consumer sees output as it is
// produced; the channel holds Options.EventBuffer events: a tool that gets
// ahead of the consumer blocks (backpressure) until the consumer catches
// up, the run is cancelled, or the call is given up.
func (r *run) execute(ctx context.Context, i int, u provider.Block, h Handler, q *queue, done chan<- ended) {
	step := r.step // a call given up may still emit while the next step runs
	call := &tool.Call{ID: u.ID, ProviderID: u.ProviderID, Name: u.Name, Input: u.Input, Events: func(e tool.Event) {
		ev := Event{Step: step, CallID: u.ID, Tool: u.Name, Output: &e}
		switch e.Kind {
		case tool.EventStdout, tool.EventStderr:
			ev.Kind = EventOutput
		case tool.EventHeartbeat:
			ev.Kind = EventHeartbeat
		default:
			ev.Kind = EventProgress
		}
		q.push(ev)
	}}
	var res *tool.Result
	defer func() {
		if p := recover(); p != nil {
			res = tool.ErrorResult(tool.Errorf(tool.Execution, "the call panicked: %v", p), u.Name)
		}
		if res == nil {
			res = tool.ErrorResult(tool.Errorf(tool.Execution, "the call returned no result"), u.Name)
		}
		done <- ended{i: i, res: res}
	}()
	res = h(ctx, call)
}

// push sends ev to the live queue of call id, if the call is running.
func (r *run) push(id string, ev Event) {
	r.mu.Lock()
	q := r.queues[id]
	r.mu.Unlock()
	if q != nil {
		q.push(ev)
	}
}

// queue is a call's side of its batch's bounded event channel: producers
// (the tool's goroutines) block while ch is full; the run's goroutine
// takes from ch.
// A push never blocks once the call's context is done or the call has
// ended (close), so cancellation cannot deadlock on a full queue: those
// events are dropped.
type queue struct {
	ch      chan Event
	ctxDone <-chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func (q *queue) push(ev Event) {
	select {
	case <-q.closed:
		return
	default:
	}
	select {
	case q.ch <- ev:
		return
	case <-q.closed:
		return
	default:
	}
	select {
	case q.ch <- ev:
	case <-q.ctxDone:
	case <-q.closed:
	}
}

// close releases producers still blocked in push (a call given up after
// cancellation) and makes later pushes no-ops.
func (q *queue) close() { q.once.Do(func() { close(q.closed) }) }

// ResultBlock is the tool_result block of one result: its text and image
// content, is_error set for failures. An empty result reads "(no output)".
func ResultBlock(id string, res *tool.Result) provider.Block {
	b := provider.Block{Type: provider.ToolResult, ToolUseID: id, IsError: res.IsError}
	for _, c := range res.Content {
		switch c.Type {
		case tool.ImageContent:
			b.Content = append(b.Content, provider.Block{Type: provider.Image, Data: c.Data, MIMEType: c.MIMEType})
		default:
			b.Content = append(b.Content, provider.Block{Type: provider.Text, Text: c.Text})
		}
	}
	if len(b.Content) == 0 {
		b.Content = []provider.Block{{Type: provider.Text, Text: "(no output)"}}
	}
	return b
}

// maxImageSwaps bounds how often one run swaps refused images and retries.
const maxImageSwaps = 3

// swapRejectedImages carries the image-to-note swaps an adapter made in the
// messages it sent (before → after) over to the stored transcript: a changed
// tool_result is replaced by its new form (matched by tool_use id), and a
// changed top-level image by its note (matched by its bytes).
func swapRejectedImages(transcript, before, after []provider.Message) []provider.Message {
	results := map[string]provider.Block{}
	images := map[string]provider.Block{}
	for i := range before {
		if i >= len(after) {
			break
		}
		for j := range before[i].Blocks {
			if j >= len(after[i].Blocks) {
				break
			}
			b, a := before[i].Blocks[j], after[i].Blocks[j]
			if reflect.DeepEqual(b, a) {
				continue
			}
			switch {
			case b.Type == provider.ToolResult && b.ToolUseID != "":
				results[b.ToolUseID] = a
			case b.Type == provider.Image:
				images[string(b.Data)] = a
			}
		}
	}
	out := make([]provider.Message, len(transcript))
	for i, m := range transcript {
		out[i] = m
		out[i].Blocks = append([]provider.Block(nil), m.Blocks...)
		for j, b := range out[i].Blocks {
			if nb, ok := results[b.ToolUseID]; ok && b.Type == provider.ToolResult {
				out[i].Blocks[j] = nb
			} else if nb, ok := images[string(b.Data)]; ok && b.Type == provider.Image {
				out[i].Blocks[j] = nb
			}
		}
	}
	return out
}
