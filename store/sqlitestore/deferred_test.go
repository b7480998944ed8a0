package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// openCounted opens a store at path whose commits are counted.
func openCounted(t *testing.T, path string, delay time.Duration) (*sqlitestore.Store, *atomic.Int64) {
	t.Helper()
	s, err := sqlitestore.Open(path, &sqlitestore.Options{RunningDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	var commits atomic.Int64
	sqlitestore.SetHooks(s, nil, func(int) { commits.Add(1) })
	return s, &commits
}

func running(task, id string) *store.Record {
	r := record(task, id)
	r.Output, r.Model, r.Outcome = nil, nil, store.OutcomeRunning
	r.StartedAt = time.Unix(1700000000, 0)
	return r
}

// A call that ends before records.runningDelay commits once: its final
// Put takes over the queued running record; the record is the final one.
func TestDeferredShortCallCommitsOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, commits := openCounted(t, path, time.Hour)
	defer s.Close()
	if err := s.PutDeferred(ctx, running("t", "a")); err != nil {
		t.Fatal(err)
	}
	if n := commits.Load(); n != 0 {
		t.Fatalf("%d commits after PutDeferred, want 0", n)
	}
	fin := record("t", "a")
	fin.StartedAt, fin.EndedAt = time.Unix(1700000000, 0), time.Unix(1700000001, 0)
	if err := s.Put(ctx, fin); err != nil {
		t.Fatal(err)
	}
	if n := commits.Load(); n != 1 {
		t.Fatalf("%d commits for the call, want 1", n)
	}
	if fin.Seq != 1 {
		t.Errorf("Seq %d, want 1", fin.Seq)
	}
	other, err := sqlitestore.Open(path, nil) // another process's view
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	got, err := other.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != store.OutcomeOK || string(got.Output) != string(fin.Output) || string(got.Input) != string(fin.Input) ||
		!got.EndedAt.Equal(fin.EndedAt) || got.Seq != 1 {
		t.Fatalf("record %+v, want the final one", got)
	}
}

// Deferred running records keep the calls' start order: a call that
// started first keeps the lower Seq though it ends last.
func TestDeferredKeepsStartOrder(t *testing.T) {
	ctx := context.Background()
	s, commits := openCounted(t, filepath.Join(t.TempDir(), "s.db"), time.Hour)
	defer s.Close()
	for _, id := range []string{"first", "second"} {
		if err := s.PutDeferred(ctx, running("t", id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"second", "first"} {
		if err := s.Put(ctx, record("t", id)); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.ListTask(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ToolCallID != "first" || recs[0].Seq != 1 || recs[1].ToolCallID != "second" || recs[1].Seq != 2 {
		t.Fatalf("records %v", ids(recs))
	}
	for _, r := range recs {
		if r.Outcome != store.OutcomeOK {
			t.Errorf("%s: outcome %s, want ok", r.ToolCallID, r.Outcome)
		}
	}
	// "second"'s final Put committed "first"'s running record with it;
	// "first"'s final Put was then an update: two commits for two calls.
	if n := commits.Load(); n != 2 {
		t.Errorf("%d commits, want 2", n)
	}
}

func ids(recs []*store.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ToolCallID)
	}
	return out
}

// Another write's commit takes a queued running record along: it is
// visible to other processes from then on.
func TestDeferredRidesWithOtherCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, commits := openCounted(t, path, time.Hour)
	defer s.Close()
	if err := s.PutDeferred(ctx, running("t", "slow")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, running("t", "write")); err != nil {
		t.Fatal(err)
	}
	if n := commits.Load(); n != 1 {
		t.Fatalf("%d commits, want 1", n)
	}
	other, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	got, err := other.Get(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != store.OutcomeRunning || got.Seq != 1 {
		t.Fatalf("record %+v, want running with Seq 1", got)
	}
}

// A call that outlives RunningDelay has its running record committed at
// the delay, visible to another process while the call still runs (the
// web view, aibuddy ui and view_tool_call read it there).
func TestDeferredRunningVisibleAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "s.db")
		s, commits := openCounted(t, path, 50*time.Millisecond)
		other, err := sqlitestore.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PutDeferred(ctx, running("t", "long")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(49 * time.Millisecond)
		synctest.Wait()
		if _, err := other.Get(ctx, "long"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("before the delay: %v, want not found", err)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		got, err := other.Get(ctx, "long")
		if err != nil {
			t.Fatalf("after the delay: %v", err)
		}
		if got.Outcome != store.OutcomeRunning {
			t.Fatalf("after the delay: outcome %s, want running", got.Outcome)
		}
		if err := s.Put(ctx, record("t", "long")); err != nil {
			t.Fatal(err)
		}
		if n := commits.Load(); n != 2 {
			t.Errorf("%d commits, want 2 (running at the delay, then final)", n)
		}
		if got, err := other.Get(ctx, "long"); err != nil || got.Outcome != store.OutcomeOK || got.Seq != 1 {
			t.Fatalf("final: %+v, %v", got, err)
		}
		if err := errors.Join(other.Close(), s.Close()); err != nil {
			t.Fatal(err)
		}
	})
}

// Close commits the running records still queued.
func TestDeferredCommittedAtClose(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, _ := openCounted(t, path, time.Hour)
	if err := s.PutDeferred(ctx, running("t", "open")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, err := again.Get(ctx, "open")
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != store.OutcomeRunning && got.Outcome != store.OutcomeInterrupted {
		t.Fatalf("outcome %s", got.Outcome)
	}
}
