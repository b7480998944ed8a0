package sqlitestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// heldStore is a store whose first commit waits for release, so that the
// writes started meanwhile queue behind it; batches receives the size of
// every batch, queued the queue length at every queued write.
type heldStore struct {
	*sqlitestore.Store
	batches chan int
	queued  chan int
	release chan struct{}
}

func openHeld(t *testing.T, opts *sqlitestore.Options) *heldStore {
	t.Helper()
	s, err := sqlitestore.Open(filepath.Join(t.TempDir(), "s.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldStore{Store: s, batches: make(chan int, 100), queued: make(chan int, 100), release: make(chan struct{})}
	first := true
	sqlitestore.SetHooks(s, func(n int) { h.queued <- n }, func(n int) {
		h.batches <- n
		if first {
			first = false
			<-h.release
		}
	})
	t.Cleanup(func() { s.Close() })
	return h
}

// waitQueued waits until n writes are queued behind the held commit.
func (h *heldStore) waitQueued(t *testing.T, n int) {
	t.Helper()
	for q := range h.queued {
		if q == n {
			return
		}
	}
}

func record(task, id string) *store.Record {
	return &store.Record{ToolCallID: id, TaskID: task, Tool: "ls", Input: json.RawMessage(`{"path":"."}`),
		Output: json.RawMessage(`{"content":[{"type":"text","text":"a.txt"}]}`), Model: json.RawMessage(`{"content":[{"type":"text","text":"a.txt"}]}`),
		Outcome: store.OutcomeOK}
}

func TestGroupCommitSharesOneTransaction(t *testing.T) {
	h := openHeld(t, nil)
	ctx := context.Background()
	firstDone := make(chan error, 1)
	go func() { firstDone <- h.Put(ctx, record("t", "lead")) }()
	if n := <-h.batches; n != 1 {
		t.Fatalf("first batch holds %d writes, want 1", n)
	}
	const n = 10
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- h.Put(ctx, record("t", fmt.Sprintf("w%d", i))) })
	}
	h.waitQueued(t, n)
	close(h.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if got := <-h.batches; got != n {
		t.Errorf("the %d writes queued behind one commit went into a batch of %d, want all %d in one", n, got, n)
	}
	l, err := h.ListTask(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, r := range l {
		seqs = append(seqs, r.Seq)
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(seqs, want) {
		t.Errorf("Seqs after the group commit %v, want %v", seqs, want)
	}
}

func TestGroupCommitRollsBackOnlyTheFailingWrite(t *testing.T) {
	h := openHeld(t, nil)
	ctx := context.Background()
	go h.Put(ctx, record("t", "lead"))
	<-h.batches
	results := make(chan error, 3)
	go func() { results <- h.Put(ctx, record("t", "before")) }()
	h.waitQueued(t, 1)
	go func() {
		_, err := h.ReplaceModel(ctx, "no-such-call", json.RawMessage(`""`), store.CompactionDrop, "")
		results <- err
	}()
	h.waitQueued(t, 2)
	go func() { results <- h.Put(ctx, record("t", "after")) }()
	h.waitQueued(t, 3)
	close(h.release)
	if n := <-h.batches; n != 3 {
		t.Fatalf("batch of %d, want the 3 queued writes", n)
	}
	var notFound, ok int
	for range 3 {
		switch err := <-results; {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrNotFound):
			notFound++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 2 || notFound != 1 {
		t.Errorf("%d writes succeeded and %d failed with ErrNotFound, want 2 and 1", ok, notFound)
	}
	for _, id := range []string{"before", "after"} {
		if _, err := h.Get(ctx, id); err != nil {
			t.Errorf("%s, committed in the batch beside a failing write: %v", id, err)
		}
	}
}

func TestWriteCancelledWhileQueuedWritesNothing(t *testing.T) {
	h := openHeld(t, nil)
	ctx := context.Background()
	leadDone := make(chan error, 1)
	go func() { leadDone <- h.Put(ctx, record("t", "lead")) }()
	<-h.batches
	cctx, cancel := context.WithCancel(ctx)
	gave := make(chan error, 1)
	go func() { gave <- h.Put(cctx, record("t", "given-up")) }()
	h.waitQueued(t, 1)
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("Put cancelled while queued returned %v, want context.Canceled", err)
	}
	close(h.release)
	if err := <-leadDone; err != nil {
		t.Fatal(err)
	}
	if _, err := h.Get(ctx, "given-up"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a write cancelled before it was taken was stored (Get: %v)", err)
	}
	if err := h.Put(ctx, record("t", "next")); err != nil {
		t.Fatalf("write after a cancelled one: %v", err)
	}
	if r, err := h.Get(ctx, "next"); err != nil || r.Seq != 2 {
		t.Errorf("next write: %+v, %v; want Seq 2", r, err)
	}
}

func TestRunningRecordsCommitWithoutSync(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		sync                                sqlitestore.Sync
		afterRunning, afterOK, afterReplace bool
	}{
		{sqlitestore.SyncFull, false, true, false},
		{sqlitestore.SyncNormal, false, false, false},
	} {
		t.Run(map[sqlitestore.Sync]string{sqlitestore.SyncFull: "full", sqlitestore.SyncNormal: "normal"}[c.sync], func(t *testing.T) {
			s, err := sqlitestore.Open(filepath.Join(t.TempDir(), "s.db"), &sqlitestore.Options{Sync: c.sync})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := record("t", "c1")
			r.Outcome, r.Output, r.Model = store.OutcomeRunning, nil, nil
			if err := s.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
			if got := sqlitestore.Syncing(s); got != c.afterRunning {
				t.Errorf("after the running record: syncing %v, want %v", got, c.afterRunning)
			}
			if err := s.Put(ctx, record("t", "c1")); err != nil {
				t.Fatal(err)
			}
			if got := sqlitestore.Syncing(s); got != c.afterOK {
				t.Errorf("after the final record: syncing %v, want %v", got, c.afterOK)
			}
			if _, err := s.ReplaceModel(ctx, "c1", json.RawMessage(`""`), store.CompactionDrop, ""); err != nil {
				t.Fatal(err)
			}
			if got := sqlitestore.Syncing(s); got != c.afterReplace {
				t.Errorf("after ReplaceModel: syncing %v, want %v", got, c.afterReplace)
			}
		})
	}
}
