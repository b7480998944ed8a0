package agent

import (
	"context"

	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
)

// ConfirmRecordSuffix is appended to a call's toolCallId to key the record
// of its confirm exchange ("<toolCallId>#confirm", Tool "confirm"), which
// the pipeline writes (pipeline.ConfirmRecordSuffix).
const ConfirmRecordSuffix = pipeline.ConfirmRecordSuffix

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
