package result_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// countingStore is a real SQLite store that counts how the recorder
// writes to it.
type countingStore struct {
	*sqlitestore.Store
	puts, deferred atomic.Int64
}

func (c *countingStore) Put(ctx context.Context, r *store.Record) error {
	c.puts.Add(1)
	return c.Store.Put(ctx, r)
}

func (c *countingStore) PutDeferred(ctx context.Context, r *store.Record) error {
	c.deferred.Add(1)
	return c.Store.PutDeferred(ctx, r)
}

func openCounting(t *testing.T, path string, delay time.Duration) *countingStore {
	t.Helper()
	st, err := sqlitestore.Open(path, &sqlitestore.Options{RunningDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	return &countingStore{Store: st}
}

func okResult(text string) *tool.Result {
	return &tool.Result{Content: []tool.Content{{Type: tool.TextContent, Text: text}}}
}

// A read-only call's running record goes through PutDeferred, any other
// call's through Put; both end with the same final record.
func TestRecorderReadOnlyCallDefersItsStart(t *testing.T) {
	ctx := context.Background()
	st := openCounting(t, filepath.Join(t.TempDir(), "calls.db"), time.Hour)
	defer st.Close()
	rec := result.New(st, nil)
	next := func(context.Context, *tool.Call) *tool.Result { return okResult("a.txt") }
	rec.CallWith(ctx, "task", &tool.Call{ID: "ro", Name: "ls", Input: []byte(`{}`)}, next, result.CallOptions{ReadOnly: true})
	if st.deferred.Load() != 1 || st.puts.Load() != 1 {
		t.Fatalf("read-only call: %d PutDeferred, %d Put; want 1 and 1 (the final)", st.deferred.Load(), st.puts.Load())
	}
	rec.Call(ctx, "task", &tool.Call{ID: "rw", Name: "write_file", Input: []byte(`{}`)}, next)
	if st.deferred.Load() != 1 || st.puts.Load() != 3 {
		t.Fatalf("other call: %d PutDeferred, %d Put; want 1 and 3", st.deferred.Load(), st.puts.Load())
	}
	recs, err := st.ListTask(ctx, "task")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ToolCallID != "ro" || recs[0].Seq != 1 || recs[1].Seq != 2 {
		t.Fatalf("records %+v", recs)
	}
	for _, r := range recs {
		if r.Outcome != store.OutcomeOK || string(r.Input) != "{}" || len(r.Output) == 0 || r.EndedAt.IsZero() {
			t.Errorf("record %+v, want the final one", r)
		}
	}
}

// A read-only call that outlives records.runningDelay is visible as
// running to another process while it runs.
func TestRecorderLongReadOnlyCallVisibleRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "calls.db")
		st := openCounting(t, path, 50*time.Millisecond)
		other, err := sqlitestore.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec := result.New(st, nil)
		var seen *store.Record
		next := func(context.Context, *tool.Call) *tool.Result {
			time.Sleep(time.Second) // the tool runs (fake time)
			synctest.Wait()
			seen, err = other.Get(ctx, "long")
			return okResult("done")
		}
		rec.CallWith(ctx, "task", &tool.Call{ID: "long", Name: "grep", Input: []byte(`{}`)}, next, result.CallOptions{ReadOnly: true})
		if err != nil || seen.Outcome != store.OutcomeRunning {
			t.Fatalf("while running, another reader got %+v, %v; want the running record", seen, err)
		}
		got, err := other.Get(ctx, "long")
		if err != nil || got.Outcome != store.OutcomeOK {
			t.Fatalf("after: %+v, %v", got, err)
		}
		if err := errors.Join(other.Close(), st.Close()); err != nil {
			t.Fatal(err)
		}
	})
}
