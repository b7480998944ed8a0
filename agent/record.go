package agent

import (
	"context"
	"encoding/json"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
)

// ConfirmRecordSuffix is appended to a call's toolCallId to key the record
// of its confirm exchange ("<toolCallId>#confirm", Tool "confirm").
const ConfirmRecordSuffix = "#confirm"

// recordExchange writes a confirm exchange as its own record, keyed
// "<toolCallId>#confirm": Input is the Action (target, scope,
// consequence, reasons), Output the decision.
func (r *run) recordExchange(ctx context.Context, ex approval.Exchange) {
	st := r.a.opts.Store
	if st == nil {
		return
	}
	in, _ := json.Marshal(ex.Action)
	dec := map[string]any{"approved": ex.Decision.Approved, "note": ex.Decision.Note, "text": ex.Text()}
	outcome := store.OutcomeOK
	if ex.Err != nil {
		dec["error"] = ex.Err.Error()
		outcome = store.OutcomeError
	}
	out, _ := json.Marshal(dec)
	model, _ := json.Marshal(ex.Text())
	rec := &store.Record{ToolCallID: ex.Action.CallID + ConfirmRecordSuffix, TaskID: r.taskID, Tool: "confirm",
		Input: in, Output: out, Model: model, Outcome: outcome, StartedAt: ex.AskedAt, EndedAt: ex.At}
	if err := st.Put(context.WithoutCancel(ctx), rec); err != nil {
		r.mu.Lock()
		r.sum.RecordErrors++
		r.mu.Unlock()
		r.a.opts.Logger.Warn("agent: confirm record not written", "tool_call_id", ex.Action.CallID, "err", err)
	}
}

// compacted returns the lookup Rebuild uses: a record whose model form was
// replaced by compaction supplies that form and its recovery pointer.
func (a *Agent) compacted(ctx context.Context) func(id string) (Compacted, bool) {
	st := a.opts.Store
	if st == nil {
		return nil
	}
	return func(id string) (Compacted, bool) {
		rec, err := st.Get(ctx, id)
		if err != nil || rec.Compaction == store.CompactionNone {
			return Compacted{}, false
		}
		m, err := result.ModelOf(rec)
		if err != nil {
			return Compacted{}, false
		}
		return Compacted{Text: m.Text, Kind: rec.Compaction, Pointer: rec.Pointer}, true
	}
}
