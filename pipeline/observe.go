package pipeline

import (
	"context"
	"time"

	"github.com/aibuddy/aibuddy/tool"
)

// Observer watches the calls of a pipeline as they go through it: the
// live page of the web view (package web) is one. Its methods are called
// from the calls' goroutines and must return quickly (publish, never
// wait); a nil [Options.Observer] adds no stage to the pipeline at all.
type Observer interface {
	// Begin is called when a call of taskID enters the pipeline, after
	// its record opened (call.ID is set). The context it returns is the
	// one the call runs under, so an observer that offers a stop returns
	// a cancellable child of ctx (cancelling it stops the call as Ctrl-C
	// does: execute stops its process group). It must return ctx or a
	// context derived from it.
	Begin(ctx context.Context, taskID string, call *tool.Call) context.Context
	// Stage is called as the call reaches each stage: tool.Discovery,
	// tool.Parameters, tool.Authorization, tool.Execution,
	// tool.Verification, in that order, as far as the call gets.
	Stage(callID string, s tool.Stage)
	// Event is every transient event of the call (output chunks,
	// heartbeats, progress), as the call's own Events sink gets it.
	Event(callID string, e tool.Event)
	// End is called once with the call's result (before it is bounded
	// for the model) and how long the call took since Begin.
	End(callID string, res *tool.Result, took time.Duration)
}

// observed is the outermost observer stage, just inside the record: Begin,
// the event tee, End.
func (p *Pipeline) observed(run Run) Middleware {
	o := p.opts.Observer
	return func(next Handler) Handler {
		if o == nil {
			return next
		}
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			start := p.opts.Now()
			ctx = o.Begin(ctx, run.TaskID, call)
			c := *call // the tee is this call's only: the caller's Call is left as given
			id, sink := call.ID, call.Events
			c.Events = func(e tool.Event) {
				o.Event(id, e)
				if sink != nil {
					sink(e)
				}
			}
			res := next(ctx, &c)
			o.End(id, res, p.opts.Now().Sub(start))
			return res
		}
	}
}

// reached tells the Observer that a call reached stage s.
func (p *Pipeline) reached(s tool.Stage) Middleware {
	o := p.opts.Observer
	return func(next Handler) Handler {
		if o == nil {
			return next
		}
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			o.Stage(call.ID, s)
			return next(ctx, call)
		}
	}
}

// returned tells the Observer that a call reached stage s once the rest
// of the chain returned (Verification checks what Execution did).
func (p *Pipeline) returned(s tool.Stage) Middleware {
	o := p.opts.Observer
	return func(next Handler) Handler {
		if o == nil {
			return next
		}
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			res := next(ctx, call)
			o.Stage(call.ID, s)
			return res
		}
	}
}
