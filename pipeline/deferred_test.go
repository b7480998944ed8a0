package pipeline_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// deferring is the rig's real store, noting which calls' running records
// went through PutDeferred.
type deferring struct {
	store.Store
	mu  sync.Mutex
	ids []string
}

func (d *deferring) PutDeferred(ctx context.Context, r *store.Record) error {
	d.mu.Lock()
	d.ids = append(d.ids, r.Tool)
	d.mu.Unlock()
	return d.Store.(store.Deferrer).PutDeferred(ctx, r)
}

// The record stage defers the running record of a tool that declares
// readOnlyHint (ls), not of one that writes (write_file); both records
// end complete.
func TestRecordDefersReadOnlyStarts(t *testing.T) {
	r := newRig(t)
	st := &deferring{Store: r.st}
	p := pipeline.New(&pipeline.Options{Store: st, Policy: approval.DefaultPolicy()})
	h := p.Handler(r.run("task-ro"))
	ctx := context.Background()
	for _, c := range []*tool.Call{
		{ID: "c-ls", Name: "ls", Input: json.RawMessage(`{"path":"."}`)},
		{ID: "c-write", Name: "write_file", Input: json.RawMessage(`{"path":"a.txt","content":"x"}`)},
	} {
		if res := h(ctx, c); res.IsError {
			t.Fatalf("%s: %+v", c.Name, res)
		}
	}
	if len(st.ids) != 1 || st.ids[0] != "ls" {
		t.Fatalf("deferred starts %v, want [ls]", st.ids)
	}
	for _, id := range []string{"c-ls", "c-write"} {
		rec, _ := record(t, r.st, id)
		if rec.Outcome != store.OutcomeOK || rec.EndedAt.IsZero() {
			t.Errorf("%s: %+v", id, rec)
		}
	}
}
