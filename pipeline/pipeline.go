package pipeline

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/hooks"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// Handler runs one call and never returns nil. It is the function type of
// the whole pipeline and of every stage in it.
type Handler func(ctx context.Context, call *tool.Call) *tool.Result

// Middleware wraps a Handler: it may act before the call goes on (refuse
// it, rewrite it), after it comes back (check or replace the result), or
// both. Every stage of the pipeline is one; an embedder's own
// (telemetry, redaction, call logging) go in [Options.Middleware].
type Middleware func(next Handler) Handler

// Dispatcher is the Discovery stage of a run: it answers tool_search
// itself, passes a call to an active tool on to next, and refuses any
// other name (a deferred tool not loaded yet, an unknown or departed
// name) with a Discovery-stage error result. *discovery.Run is one.
type Dispatcher interface {
	Dispatch(ctx context.Context, call *tool.Call, next func(context.Context, *tool.Call) *tool.Result) *tool.Result
}

// DispatcherFunc adapts a function to [Dispatcher] (the MCP gateway's,
// which unwraps its call_tool proxy before discovery).
type DispatcherFunc func(ctx context.Context, call *tool.Call, next func(context.Context, *tool.Call) *tool.Result) *tool.Result

// Dispatch calls f.
func (f DispatcherFunc) Dispatch(ctx context.Context, call *tool.Call, next func(context.Context, *tool.Call) *tool.Result) *tool.Result {
	return f(ctx, call, next)
}

// Options are the settings of a [Pipeline], shared by every run it
// serves. A nil *Options (or a zero field) means the default given.
type Options struct {
	// Store keeps the durable record of every call ("running" before the
	// call, the final record before its result is handed back) and of
	// every confirm exchange. Default nil: no record; results are still
	// bounded to MaxModelChars, with a marker saying the middle is not
	// kept.
	Store store.Store
	// Compactor receives every finished record and compacts large ones in
	// the background (compact.Compactor). Only with a Store. Default
	// none.
	Compactor result.Compactor
	// Background is the context background compaction runs under, for
	// hosts whose call contexts end with the reply (an MCP server: its
	// process's context). Default: each call's context.
	Background context.Context
	// MaxModelChars bounds the text of a result handed back, in
	// characters (runes); the record keeps it whole (result.Bound).
	// Default result.DefaultMaxModelChars (30,000): the settings'
	// limits.resultMaxChars.
	MaxModelChars int
	// Policy says which calls the Authorization stage refuses or puts to
	// a person (approval.Policy). Default nil: every call is authorized
	// (the tools' own checks, such as paths confined to the workspace,
	// still hold).
	Policy *approval.Policy
	// Confirmer asks a person about a call the Policy marks. nil refuses
	// every such call at the Authorization stage: a call never runs
	// unasked.
	Confirmer approval.Confirmer
	// Middleware are the embedder's own stages. They run after Discovery
	// (a call that reaches them names an active tool) and before
	// Parameters, first entry outermost: input they rewrite is still
	// checked against the schema and authorized, and what they see of
	// the result has been verified. The record, outside them, keeps the
	// input as received.
	Middleware []Middleware
	// Verify, when set, replaces the Verification stage's check: it gets
	// every result and returns the one to keep. Default [Verify]: the
	// check each tool declares (tool.Spec.Verify).
	Verify func(call *tool.Call, res *tool.Result) *tool.Result
	// Now is the clock of records and confirm exchanges. Default
	// time.Now.
	Now func() time.Time
	// NewCallID mints the toolCallId of a call that comes without one.
	// Default "call_" and 24 random hex digits (tool.NewCallID).
	NewCallID func() string
	// Logger receives store failures. Default: discard.
	Logger *slog.Logger
	// Observer, when set, is told of every call as it goes: its start,
	// each stage reached, its transient events and its end
	// ([Observer]; the web view's live page). Default nil: no observer
	// stage at all.
	Observer Observer
	// Workspace is the workspace root the per-path write lock resolves
	// relative paths in ([PathKey]), so "a.txt", "./a.txt" and its
	// absolute path share one lock. Default "": paths are only cleaned.
	Workspace string
	// Hooks runs the settings' PreToolUse and PostToolUse hooks
	// (package hooks; hooks.go: where they sit). Default nil: none.
	Hooks *hooks.Runner
}

// Pipeline is the chain of stages one call goes through, assembled once
// from its [Options] (ARCHITECTURE.md, "One call, end to end"). It holds
// no per-run state: [Pipeline.Handler] gives each run its own entry. Safe
// for concurrent use.
type Pipeline struct {
	opts  Options
	rec   *result.Recorder // nil without a Store
	locks *pathLocks       // the per-path write lock of every run served
}

// New returns the pipeline of opts (nil: defaults). aibuddy mcp, run and
// call build theirs with it from the settings file, and so does an
// embedder (agent.New, when not given one).
func New(opts *Options) *Pipeline {
	p := &Pipeline{}
	if opts != nil {
		p.opts = *opts
	}
	p.locks = &pathLocks{root: p.opts.Workspace, held: map[string]*pathLock{}}
	if p.opts.Now == nil {
		p.opts.Now = time.Now
	}
	if p.opts.NewCallID == nil {
		p.opts.NewCallID = func() string { return tool.NewCallID("call_") }
	}
	if p.opts.Logger == nil {
		p.opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if p.opts.Store != nil {
		p.rec = result.New(p.opts.Store, &result.Options{Background: p.opts.Background, Now: p.opts.Now,
			NewID: p.opts.NewCallID, Compactor: p.opts.Compactor, Logger: p.opts.Logger, MaxModelChars: p.opts.MaxModelChars})
	}
	return p
}

// Store is the pipeline's record store (Options.Store), nil when none.
func (p *Pipeline) Store() store.Store { return p.opts.Store }

// Run is one run the pipeline serves: an MCP session, an agent run, one
// aibuddy call. Its calls share a task id and a tool set.
type Run struct {
	// TaskID is the task the run's records belong to.
	TaskID string
	// Tools returns the run's tool set and its discovery state as they
	// are now (MCP servers come and go; tool_search activates). Each call
	// takes them once, as it enters the Discovery stage, and every later
	// stage of that call uses the same set. A nil Dispatcher makes every
	// tool of the set active: the Discovery stage then only refuses names
	// outside the set. Required.
	Tools func() (*capability.Set, Dispatcher)
	// OnAsk is called before a person is asked to confirm a call (the
	// action as it will be recorded). May be nil.
	OnAsk func(ctx context.Context, a approval.Action)
	// OnDecision is called with every completed confirm exchange, after
	// its record is written and before the call runs. May be nil.
	OnDecision func(ctx context.Context, e approval.Exchange)
	// OnRecordError is called when a confirm exchange's record could not
	// be written (also logged). May be nil.
	OnRecordError func(toolCallID string, err error)
}

// Fixed is Run.Tools for a run whose set and discovery state never
// change (one aibuddy call, a test).
func Fixed(set *capability.Set, d Dispatcher) func() (*capability.Set, Dispatcher) {
	return func() (*capability.Set, Dispatcher) { return set, d }
}

// Handler returns run's entry into the pipeline. A call goes through, in
// order:
//
//  1. Record (opens): a "running" record with the raw input (Store set);
//     a call without an ID gets one;
//  2. Discovery: run's Dispatcher (tool_search, inactive names refused);
//  3. Options.Middleware, the embedder's;
//  4. Parameters: the input checked against the tool's schema
//     (tool.Tool.Validate);
//  5. Authorization: the PreToolUse hooks (Options.Hooks; hooks.go),
//     then approval.Gate with Options.Policy and Confirmer (denied,
//     confirmed, rejected, or nobody to ask);
//  6. Execution: the set's Call (the tool's handler, its group's result
//     hook), for a call that writes files (tool.Access kind Edit) once no
//     other call of any run of this pipeline writes one of them (a lock
//     per path, [PathKey], held through Verification);
//  7. Verification: the tool's declared check of its effect ([Verify]),
//     then, on a success, the PostToolUse hooks (still inside the lock);
//  8. Record (closes): the final record (raw output with its evidence,
//     stage, outcome) is written, then the result is bounded for the
//     model (the projection) and handed back;
//  9. background compaction of large records (Options.Compactor).
//
// A stage that refuses a call returns its error result without calling
// the next; the record still closes with that stage. The record of every
// call, whichever entry point made it, thus carries the stage that
// failed, the evidence, and the Verification outcome
// (tool.EvidenceVerified, tool.EvidenceVerification) the same way.
func (p *Pipeline) Handler(run Run) Handler {
	h := Handler(execution)
	h = p.reached(tool.Execution)(h) // observe.go: a no-op without an Observer
	h = p.decisions(run)(h)          // decided.go: answers given during execution
	h = p.returned(tool.Verification)(h)
	h = p.verification(h)
	h = p.postToolUse(run)(h) // hooks.go: inside the path lock, after Verification
	h = p.pathLock(h)
	h = p.authorization(run)(h)
	h = p.preToolUse(run)(h) // hooks.go: before the gate and the lock
	h = p.reached(tool.Authorization)(h)
	h = parameters(h)
	h = p.reached(tool.Parameters)(h)
	for i := len(p.opts.Middleware) - 1; i >= 0; i-- {
		h = p.opts.Middleware[i](h)
	}
	h = discoveryStage(run)(h)
	h = p.reached(tool.Discovery)(h)
	h = p.observed(run)(h)
	h = p.record(run)(h)
	return never(h)
}

// readOnly reports whether the run's tool name declares readOnlyHint (its
// record may then be written once; see result.CallOptions).
func readOnly(run Run, name string) bool {
	if run.Tools == nil {
		return false
	}
	set, _ := run.Tools()
	if set == nil {
		return false
	}
	t, ok := set.Tool(name)
	if !ok {
		return false
	}
	a := t.Annotations()
	return a != nil && a.ReadOnlyHint
}

// never guarantees a non-nil result (a middleware that returned nil).
func never(h Handler) Handler {
	return func(ctx context.Context, call *tool.Call) *tool.Result {
		if call == nil {
			call = &tool.Call{}
		}
		if res := h(ctx, call); res != nil {
			return res
		}
		return tool.ErrorResult(tool.Errorf(tool.Execution, "the call returned no result").
			WithHint("report this as a bug in the middleware; inspect the state before retrying"), call.Name)
	}
}

// state is what one call's stages share: the tool set it was dispatched
// against.
type state struct {
	set *capability.Set
}

type stateKey struct{}

func stateOf(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey{}).(*state)
	if st == nil {
		return &state{}
	}
	return st
}

// lookup finds the call's tool in its set.
func (st *state) lookup(name string) (*tool.Tool, bool) {
	if st.set == nil {
		return nil, false
	}
	return st.set.Tool(name)
}

// record opens and closes the call's record around the rest (stages 1, 8
// and 9), or, without a Store, bounds the result all the same.
func (p *Pipeline) record(run Run) Middleware {
	return func(next Handler) Handler {
		if p.rec != nil {
			return func(ctx context.Context, call *tool.Call) *tool.Result {
				return p.rec.CallWith(ctx, run.TaskID, call, result.Next(next), result.CallOptions{ReadOnly: readOnly(run, call.Name)})
			}
		}
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			if call.ID == "" {
				call.ID = p.opts.NewCallID()
			}
			res := next(tool.WithTaskID(ctx, run.TaskID), call)
			if res == nil {
				res = &tool.Result{}
			}
			return result.Bound(res, call.ID, p.opts.MaxModelChars, false)
		}
	}
}

// discoveryStage takes the run's tools for this call and dispatches it
// (stage 2).
func discoveryStage(run Run) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			var set *capability.Set
			var d Dispatcher
			if run.Tools != nil {
				set, d = run.Tools()
			}
			if set == nil {
				return tool.ErrorResult(tool.Errorf(tool.Discovery, "this run has no tool set, so the call was not executed").
					WithHint("the host must resolve the run's tools before calling them"), call.Name)
			}
			st := &state{set: set}
			ctx = context.WithValue(ctx, stateKey{}, st)
			if d == nil {
				if _, ok := set.Tool(call.Name); !ok {
					return set.Call(ctx, call) // the set's own Discovery-stage refusal
				}
				return next(ctx, call)
			}
			return d.Dispatch(ctx, call, next)
		}
	}
}

// parameters checks the input against the tool's schema (stage 4).
func parameters(next Handler) Handler {
	return func(ctx context.Context, call *tool.Call) *tool.Result {
		if t, ok := stateOf(ctx).lookup(call.Name); ok {
			if err := t.Validate(call.Input); err != nil {
				return tool.ErrorResult(err, call.Name)
			}
			// Execution does not check the same bytes again.
			ctx = t.Validated(ctx, call.Input)
		}
		return next(ctx, call)
	}
}

// authorization is the confirm gate (stage 5), with the call's set for
// the tool and its MCP server, and confirm exchanges recorded.
func (p *Pipeline) authorization(run Run) Middleware {
	return func(next Handler) Handler {
		if p.opts.Policy == nil {
			return next
		}
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			st := stateOf(ctx)
			gate := &approval.Gate{
				Policy:    p.opts.Policy,
				Confirmer: p.opts.Confirmer,
				Now:       p.opts.Now,
				OnAsk:     run.OnAsk,
				OnDecision: func(ctx context.Context, ex approval.Exchange) {
					p.recordExchange(ctx, run, ex)
					if run.OnDecision != nil {
						run.OnDecision(ctx, ex)
					}
				},
			}
			if st.set != nil {
				gate.Lookup = st.set.Lookup
			}
			return gate.Wrap(next)(ctx, call)
		}
	}
}

// execution runs the call on the set (stage 6).
func execution(ctx context.Context, call *tool.Call) *tool.Result {
	st := stateOf(ctx)
	if st.set == nil {
		return tool.ErrorResult(tool.Errorf(tool.Discovery, "this run has no tool set, so the call was not executed").
			WithHint("the host must resolve the run's tools before calling them"), call.Name)
	}
	return st.set.Call(ctx, call)
}

// verification checks the result against the tool's declaration, or
// Options.Verify (stage 7).
func (p *Pipeline) verification(next Handler) Handler {
	return func(ctx context.Context, call *tool.Call) *tool.Result {
		res := next(ctx, call)
		if p.opts.Verify != nil {
			return p.opts.Verify(call, res)
		}
		t, _ := stateOf(ctx).lookup(call.Name)
		return Verify(t, call, res)
	}
}
