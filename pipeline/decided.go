package pipeline

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// InputRecordSuffix keys the record of the n-th human answer given during
// a call's execution: "<toolCallId>#input-<n>" (n from 1).
const InputRecordSuffix = "#input-"

type decidedKey struct{}

// decider is what Decided reaches: the call's run and its answer count.
type decider struct {
	p   *Pipeline
	run Run
	n   atomic.Int32
}

// decisions puts the call's decider into the context of the stages after
// Authorization, where a tool may ask a person during its execution.
func (p *Pipeline) decisions(run Run) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			return next(context.WithValue(ctx, decidedKey{}, &decider{p: p, run: run}), call)
		}
	}
}

// Decided reports a person's answer given while a call executes (an
// upstream MCP server's question put to the user: mcpclient.Elicitor)
// the way the confirm gate reports its own: a record of the run's task,
// keyed "<toolCallId>#input-<n>", and Run.OnDecision, through which
// `aibuddy run` adds the exchange's user-role text after the call's
// result (seed: completed human interactions become role=user text). It
// reports false when ctx is not a pipeline call's (nothing is recorded).
func Decided(ctx context.Context, ex approval.Exchange) bool {
	d, ok := ctx.Value(decidedKey{}).(*decider)
	if !ok {
		return false
	}
	n := d.n.Add(1)
	if st := d.p.opts.Store; st != nil {
		in, _ := json.Marshal(ex.Action)
		out, _ := json.Marshal(map[string]any{"approved": ex.Decision.Approved, "note": ex.Decision.Note, "text": ex.Text()})
		model, _ := json.Marshal(ex.Text())
		rec := &store.Record{ToolCallID: ex.Action.CallID + InputRecordSuffix + strconv.Itoa(int(n)), TaskID: d.run.TaskID,
			Tool: ConfirmTool, Input: in, Output: out, Model: model, Outcome: store.OutcomeOK, StartedAt: ex.AskedAt, EndedAt: ex.At}
		if err := st.Put(context.WithoutCancel(ctx), rec); err != nil {
			d.p.opts.Logger.Warn("pipeline: input record not written", "tool_call_id", ex.Action.CallID, "err", err)
			if d.run.OnRecordError != nil {
				d.run.OnRecordError(ex.Action.CallID, err)
			}
		}
	}
	if d.run.OnDecision != nil {
		d.run.OnDecision(ctx, ex)
	}
	return true
}
