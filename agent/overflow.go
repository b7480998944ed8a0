package agent

import (
	"errors"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/provider"
)

// Defaults of the context budget ([Options.ContextBudget]).
const (
	// DefaultContextBudget is the input budget of one request, in tokens
	// (o200k estimate): a 200,000-token window less room for the answer
	// and for the estimate's error (Claude's tokenizer counts 10-30% more
	// than o200k for the same text).
	DefaultContextBudget = 150_000
	// MaxOverflowRetries bounds the retries of one step after the provider
	// refused its request as too long; each halves the budget.
	MaxOverflowRetries = 3
)

// contextState is the run's context budget and the cut made so far.
type contextState struct {
	budget, target int // tokens; budget <= 0: no budget yet
	dropped        int // exchanges dropped from the last request (provider.Fit's MinDrop)
	lastTokens     int // estimate of the last request (messages, system, tools)
	overflows      int // refusals of the current step
	counts         map[string]int
}

// initContext sets the run's budget from the Options.
func (r *run) initContext() {
	f := &r.fit
	f.budget = r.a.opts.ContextBudget
	if f.budget == 0 {
		f.budget = DefaultContextBudget
	}
	f.target = r.a.opts.ContextTarget
	if f.target <= 0 || f.target > f.budget {
		f.target = f.budget * 3 / 4
	}
	f.counts = map[string]int{}
}

// count is compact.Count with a cache of long texts: the same results are
// counted at every step.
func (r *run) count(s string) int {
	if len(s) < 64 {
		return compact.Count(s)
	}
	if n, ok := r.fit.counts[s]; ok {
		return n
	}
	n := compact.Count(s)
	r.fit.counts[s] = n
	return n
}

// fitContext cuts the rebuilt messages of one request to the run's budget
// (provider.Fit over what is left after the system prompt and the tools),
// keeping the previous cut while it still fits. The estimate of the whole
// request is kept for an overflow without a budget.
func (r *run) fitContext(sent []provider.Message, native bool) []provider.Message {
	f := &r.fit
	overhead := r.count(r.a.opts.System)
	for _, t := range r.present(native) {
		overhead += provider.BlockOverheadTokens + r.count(t.Name) + r.count(t.Description) + r.count(string(t.InputSchema))
	}
	if f.budget <= 0 {
		f.lastTokens = overhead + provider.EstimateTokens(sent, r.count)
		return sent
	}
	hasView := false
	if _, ok := r.set().Tool(compact.ViewToolCallName); ok && r.a.opts.Store != nil {
		hasView = true
	}
	out, rep := provider.Fit(sent, provider.FitOptions{
		Budget:  max(f.budget-overhead, 1),
		Target:  max(f.target-overhead, 1),
		MinDrop: f.dropped,
		Count:   r.count,
		Note: func(steps int, calls []provider.DroppedCall) string {
			o := &provider.NoteOptions{MaxCalls: r.a.opts.ContextNoteCalls, Unrecoverable: !hasView}
			if hasView {
				o.ListCommand = r.a.opts.ListCallsCommand(r.taskID)
			}
			return provider.DroppedNote(steps, calls, o)
		},
	})
	if rep.Exchanges != f.dropped {
		r.a.opts.Logger.Info("agent: older exchanges dropped to fit the context budget",
			"task", r.taskID, "step", r.step, "exchanges", rep.Exchanges, "steps", rep.Steps,
			"tokens", rep.Tokens+overhead, "budget", f.budget)
	}
	if rep.Over {
		r.a.opts.Logger.Warn("agent: the task and the newest exchange alone exceed the context budget",
			"task", r.taskID, "step", r.step, "tokens", rep.Tokens+overhead, "budget", f.budget)
	}
	f.dropped = rep.Exchanges
	f.lastTokens = rep.Tokens + overhead
	return out
}

// shrinkAfterOverflow reports whether err is the provider's refusal of a
// prompt too long for the context window (provider.ErrContextOverflow)
// that the step may retry: then the budget is halved (from the last
// request's estimate when it was lower or there was none), at most
// MaxOverflowRetries times per step.
func (r *run) shrinkAfterOverflow(err error) bool {
	f := &r.fit
	if !errors.Is(err, provider.ErrContextOverflow) || f.overflows >= MaxOverflowRetries {
		return false
	}
	f.overflows++
	base := f.budget
	if base <= 0 || (f.lastTokens > 0 && f.lastTokens < base) {
		base = f.lastTokens
	}
	f.budget = max(base/2, 1)
	f.target = f.budget * 3 / 4
	f.dropped = 0 // the cut is recomputed for the new budget
	r.a.opts.Logger.Warn("agent: the provider refused the request as too long; retrying over fewer exchanges",
		"task", r.taskID, "step", r.step, "estimate", f.lastTokens, "budget", f.budget, "retry", f.overflows, "err", err)
	return true
}
