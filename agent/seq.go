package agent

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// reserveSeqs gives the calls of a batch their places in the task's
// record, in call order, before any of them starts (BH-071): a "running"
// record per call, Put one after another, takes the task's next Seq; the
// pipeline's own start and end Puts of the call keep it (store.Store: a
// zero Seq on a replacement within the task keeps the record's Seq). The
// calls then start and end in any order, and ListTask still lists them as
// the model made them. It returns which calls got a reservation; a Put
// that fails is logged and counted in Summary.RecordErrors, and that call
// takes its place when it starts, as a single call does.
func (r *run) reserveSeqs(ctx context.Context, uses []provider.Block) []bool {
	st := r.a.opts.Store
	if st == nil || len(uses) < 2 {
		return nil
	}
	sctx := context.WithoutCancel(ctx)
	held := make([]bool, len(uses))
	for i, u := range uses {
		err := st.Put(sctx, &store.Record{ToolCallID: u.ID, ProviderCallID: u.ProviderID, TaskID: r.taskID, Tool: u.Name,
			Input: recordInput(u.Input), Outcome: store.OutcomeRunning, StartedAt: r.a.opts.Now()})
		if err != nil {
			r.a.opts.Logger.Warn("agent: reserve the record of a call of a batch", "toolCallId", u.ID, "err", err)
			r.mu.Lock()
			r.sum.RecordErrors++
			r.mu.Unlock()
			continue
		}
		held[i] = true
	}
	return held
}

// recordNotRun writes the final record of a reserved call that never
// started (the run was cancelled first), so no record stays "running":
// outcome cancelled, its not-run result as output and model form.
func (r *run) recordNotRun(ctx context.Context, u provider.Block, res *tool.Result) {
	now := r.a.opts.Now()
	err := r.a.opts.Store.Put(context.WithoutCancel(ctx), &store.Record{ToolCallID: u.ID, ProviderCallID: u.ProviderID, TaskID: r.taskID, Tool: u.Name,
		Input: recordInput(u.Input), Output: result.EncodeOutput(res), Model: result.EncodeModel(res),
		Stage: string(res.Stage), Outcome: store.OutcomeCancelled, StartedAt: now, EndedAt: now})
	if err != nil {
		r.a.opts.Logger.Warn("agent: record a call that did not run", "toolCallId", u.ID, "err", err)
		r.mu.Lock()
		r.sum.RecordErrors++
		r.mu.Unlock()
	}
}

// recordInput is a call's input as the pipeline's recorder keeps it:
// trimmed, "{}" when empty.
func recordInput(in json.RawMessage) json.RawMessage {
	in = bytes.TrimSpace(in)
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	return append(json.RawMessage(nil), in...)
}
