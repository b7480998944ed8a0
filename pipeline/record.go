package pipeline

import (
	"context"
	"encoding/json"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/store"
)

// ConfirmRecordSuffix is appended to a call's toolCallId to key the record
// of its confirm exchange ("<toolCallId>#confirm", Tool [ConfirmTool]).
const ConfirmRecordSuffix = "#confirm"

// ConfirmTool is the Tool of a confirm exchange's record.
const ConfirmTool = "confirm"

// recordExchange writes a confirm exchange as its own record of the run's
// task, keyed "<toolCallId>#confirm": Input is the Action (target, scope,
// consequence, reasons), Output the decision ({"approved", "note", "text"},
// and "error" when nobody decided), Model the exchange's user-role text.
func (p *Pipeline) recordExchange(ctx context.Context, run Run, ex approval.Exchange) {
	p.putExchange(ctx, run, ex, ConfirmRecordSuffix)
}

// putExchange writes ex as the record "<toolCallId><suffix>" (the
// gate's confirm, a hook's ask); a failed write is logged and reported
// to run.OnRecordError, never returned: the exchange already happened.
func (p *Pipeline) putExchange(ctx context.Context, run Run, ex approval.Exchange, suffix string) {
	st := p.opts.Store
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
	rec := &store.Record{ToolCallID: ex.Action.CallID + suffix, TaskID: run.TaskID, Tool: ConfirmTool,
		Input: in, Output: out, Model: model, Outcome: outcome, StartedAt: ex.AskedAt, EndedAt: ex.At}
	if err := st.Put(context.WithoutCancel(ctx), rec); err != nil {
		p.opts.Logger.Warn("pipeline: confirm record not written", "record", suffix, "tool_call_id", ex.Action.CallID, "err", err)
		if run.OnRecordError != nil {
			run.OnRecordError(ex.Action.CallID, err)
		}
	}
}
