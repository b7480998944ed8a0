package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Group commit. Each write is queued under wmu. A caller that finds no
// one leading leads: it takes the queue, up to Options.MaxBatch writes,
// and commits them in one BEGIN IMMEDIATE transaction on the write
// connection, each inside its own SAVEPOINT so that one failing write is
// rolled back alone; it answers every write of the batch, and when more
// have queued meanwhile it hands the lead to the oldest of them. A write
// returns only after the transaction holding it has committed. So an
// uncontended write runs on its caller's goroutine (no hand-off), and
// writes that arrive while a commit syncs share the next commit and its
// sync.
//
// Deferred writes (PutDeferred: a call's running record) are queued
// without leading: they ride with the next commit of any write, at their
// place in the queue (so a record's Seq still follows the calls' start
// order), or are committed by their timer once Options.RunningDelay has
// passed. The call's final Put, when its running record is still queued,
// takes that queued write over: one INSERT of the final record, one
// commit for the whole call.

// op is one queued write. Its fields other than done's result are
// guarded by Store.wmu.
type op struct {
	// lazy: the write may commit without a sync under SyncFull (it must
	// survive a process kill, not a power loss).
	lazy    bool
	fn      func(ctx context.Context) error
	err     error         // the outcome, set before done is closed
	done    chan struct{} // closed when answered
	lead    chan struct{} // closed when this op's caller is to lead
	claimed bool          // taken into a batch
	led     bool          // lead was closed

	// deferred: queued by PutDeferred; no caller waits on lead or done.
	deferred bool
	due      bool        // a deferred op whose timer fired: commit it now
	id, task string      // a deferred op's record
	timer    *time.Timer // a deferred op's RunningDelay
}

var errClosed = errors.New("store is closed")

// write queues fn and waits until the transaction holding it has
// committed (nil) or failed. A ctx done before a batch took the write
// fails with ctx's error and nothing is written; once taken, the write
// completes (bounded by the busy timeout) and its outcome is returned.
func (s *Store) write(ctx context.Context, lazy bool, fn func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{lazy: lazy, fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	s.wmu.Lock()
	if s.closed {
		s.wmu.Unlock()
		return errClosed
	}
	s.queue = append(s.queue, o)
	if !s.leading {
		s.leading = true
		s.wmu.Unlock()
		s.leadBatch()
		<-o.done
		return o.err
	}
	if s.onQueue != nil {
		s.onQueue(len(s.queue))
	}
	s.wmu.Unlock()
	select {
	case <-o.done:
		return o.err
	case <-o.lead:
	case <-ctx.Done():
		s.wmu.Lock()
		if !o.claimed && !o.led {
			s.queue = slices.DeleteFunc(s.queue, func(q *op) bool { return q == o })
			s.wmu.Unlock()
			return ctx.Err()
		}
		s.wmu.Unlock()
		select {
		case <-o.done:
			return o.err
		case <-o.lead:
		}
	}
	s.leadBatch()
	<-o.done
	return o.err
}

// leadBatch commits one batch from the head of the queue, then hands the
// lead to the next queued write or, with none, gives it up.
func (s *Store) leadBatch() {
	s.wmu.Lock()
	n := min(len(s.queue), s.maxBatch)
	batch := slices.Clone(s.queue[:n])
	s.queue = append(s.queue[:0], s.queue[n:]...)
	for _, o := range batch {
		o.claimed = true
		if o.deferred {
			o.timer.Stop()
			if s.pending[o.id] == o {
				delete(s.pending, o.id)
			}
		}
	}
	s.wmu.Unlock()

	if s.beforeCommit != nil {
		s.beforeCommit(len(batch))
	}
	s.full = s.commit(batch, s.full)

	s.wmu.Lock()
	// The lead goes to the oldest write whose caller waits; deferred
	// writes left in the queue wait for the next commit or their timer,
	// unless a timer already fired (then a new leader commits them now).
	due := false
	for _, o := range s.queue {
		if !o.deferred {
			o.led = true
			close(o.lead)
			s.wmu.Unlock()
			return
		}
		due = due || o.due
	}
	if due {
		s.wmu.Unlock()
		go s.leadBatch()
		return
	}
	s.leading = false
	s.idle.Broadcast()
	s.wmu.Unlock()
}

// fire is a deferred op's timer: commit it now, unless a commit took it.
func (s *Store) fire(o *op) {
	s.wmu.Lock()
	if o.claimed || !o.deferred || s.closed {
		s.wmu.Unlock()
		return
	}
	o.due = true
	if s.leading {
		s.wmu.Unlock() // the leader's hand-off sees it due
		return
	}
	s.leading = true
	s.wmu.Unlock()
	s.leadBatch()
}

// writeDeferred queues fn, the write of record id of task, to be committed
// with the next commit or after delay at the latest, and returns at once.
// It reports false (nothing queued) when a deferred write of id is
// already queued.
func (s *Store) writeDeferred(id, task string, delay time.Duration, fn func(ctx context.Context) error) (bool, error) {
	o := &op{lazy: true, deferred: true, id: id, task: task, fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return false, errClosed
	}
	if _, dup := s.pending[id]; dup {
		return false, nil
	}
	if s.pending == nil {
		s.pending = map[string]*op{}
	}
	s.pending[id] = o
	s.queue = append(s.queue, o)
	o.timer = time.AfterFunc(delay, func() { s.fire(o) })
	return true, nil
}

// takeOver makes the deferred write of record id of task, when it is
// still queued, run fn instead (lazy: whether fn needs no sync), commits
// it and returns its outcome; taken is false when there is no such write
// (the caller writes as usual).
func (s *Store) takeOver(id, task string, lazy bool, fn func(ctx context.Context) error) (taken bool, err error) {
	s.wmu.Lock()
	o := s.pending[id]
	if o == nil || o.claimed || o.task != task || s.closed {
		s.wmu.Unlock()
		return false, nil
	}
	delete(s.pending, id)
	o.timer.Stop()
	o.deferred, o.due, o.lazy, o.fn = false, false, lazy, fn
	if !s.leading {
		s.leading = true
		s.wmu.Unlock()
		s.leadBatch()
		<-o.done
		return true, o.err
	}
	s.wmu.Unlock()
	select {
	case <-o.done:
		return true, o.err
	case <-o.lead:
	}
	s.leadBatch()
	<-o.done
	return true, o.err
}

// commit runs one batch in one transaction and answers each op. full is
// whether the connection syncs commits now; commit returns it as it left
// it.
func (s *Store) commit(ops []*op, full bool) bool {
	if len(ops) == 0 {
		return full
	}
	reply := func(o *op, err error) {
		o.err = err
		close(o.done)
	}
	answer := func(err error) {
		for _, o := range ops {
			reply(o, err)
		}
	}
	ctx := context.Background()
	w := &s.ws
	if s.sync == SyncFull {
		// Lazy writes alone commit without a sync; the next synced commit
		// makes them durable too (it syncs the whole -wal file).
		want := false
		for _, o := range ops {
			want = want || !o.lazy
		}
		if want != full {
			// Not a prepared statement: SQLite applies PRAGMA synchronous
			// when the statement is prepared, not when it runs.
			q := "PRAGMA synchronous = NORMAL"
			if want {
				q = "PRAGMA synchronous = FULL"
			}
			if _, err := s.conn.ExecContext(ctx, q); err != nil {
				answer(fmt.Errorf("set synchronous: %w", err))
				return full
			}
			full = want
		}
	}
	if _, err := w.begin.ExecContext(ctx); err != nil {
		answer(err)
		return full
	}
	errs := make([]error, len(ops))
	failed := 0
	for i, o := range ops {
		if len(ops) == 1 {
			errs[i] = o.fn(ctx)
		} else {
			var aborted bool
			if aborted, errs[i] = s.inSavepoint(ctx, o.fn); aborted {
				// SQLite rolled the whole transaction back (a disk
				// error, say): nothing of this batch is written.
				for j := range ops {
					if j != i && errs[j] == nil {
						errs[j] = fmt.Errorf("transaction rolled back by another write's failure: %w", errs[i])
					}
				}
				failed = len(ops)
				break
			}
		}
		if errs[i] != nil {
			failed++
		}
	}
	if failed == len(ops) {
		_, _ = w.rollback.ExecContext(ctx)
		for i, o := range ops {
			reply(o, errs[i])
		}
		return full
	}
	if _, err := w.commit.ExecContext(ctx); err != nil {
		_, _ = w.rollback.ExecContext(ctx)
		for i, o := range ops {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("commit: %w", err)
			}
			reply(o, errs[i])
		}
		return full
	}
	for i, o := range ops {
		reply(o, errs[i])
	}
	return full
}

// inSavepoint runs fn inside a savepoint and rolls back to it when fn
// fails, so the rest of the transaction stands. aborted reports that the
// transaction itself is gone (the savepoint could not be rolled back to).
func (s *Store) inSavepoint(ctx context.Context, fn func(context.Context) error) (aborted bool, err error) {
	w := &s.ws
	if _, err := w.savepoint.ExecContext(ctx); err != nil {
		return true, err
	}
	err = fn(ctx)
	if err != nil {
		if _, rerr := w.rollbackTo.ExecContext(ctx); rerr != nil {
			return true, errors.Join(err, rerr)
		}
	}
	if _, rerr := w.release.ExecContext(ctx); rerr != nil {
		return true, errors.Join(err, rerr)
	}
	return false, err
}

// writeStmts are the write connection's statements, prepared once.
type writeStmts struct {
	begin, commit, rollback           *sql.Stmt
	savepoint, rollbackTo, release    *sql.Stmt
	lookup, nextSeq, touch            *sql.Stmt
	putCall, putRaw, forgetTask       *sql.Stmt
	insertCall, finishCall, finishRaw *sql.Stmt
	modelLen, replace                 *sql.Stmt
}

func (w *writeStmts) prepare(ctx context.Context, c *sql.Conn) error {
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&w.begin, `BEGIN IMMEDIATE`},
		{&w.commit, `COMMIT`},
		{&w.rollback, `ROLLBACK`},
		{&w.savepoint, `SAVEPOINT w`},
		{&w.rollbackTo, `ROLLBACK TO w`},
		{&w.release, `RELEASE w`},
		{&w.lookup, `SELECT task_id, seq FROM calls WHERE tool_call_id = ?`},
		{&w.nextSeq, `SELECT coalesce(max(seq), 0) + 1 FROM calls WHERE task_id = ?`},
		{&w.touch, `
INSERT INTO tasks (task_id, touched) VALUES (?, (SELECT coalesce(max(touched), 0) + 1 FROM tasks))
ON CONFLICT (task_id) DO UPDATE SET touched = excluded.touched
WHERE tasks.touched < (SELECT max(touched) FROM tasks)`}, // already the latest task: nothing written
		// A new record, its Seq (?3, 0: the task's next) computed in place.
		{&w.insertCall, `
INSERT INTO calls (tool_call_id, task_id, seq, tool, model, stage, outcome,
                   started_at, ended_at, compaction, pointer, interrupted_at, owner, provider_call_id)
VALUES (?1, ?2, CASE WHEN ?3 > 0 THEN ?3 ELSE (SELECT coalesce(max(seq), 0) + 1 FROM calls WHERE task_id = ?2) END,
        ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
RETURNING seq`},
		// A record finished in place: same task, Seq kept (?11, 0) or equal.
		{&w.finishCall, `
UPDATE calls SET tool = ?1, model = ?2, stage = ?3, outcome = ?4, started_at = ?5, ended_at = ?6,
  compaction = ?7, pointer = ?8, interrupted_at = ?12, owner = ?13, provider_call_id = ?14
WHERE tool_call_id = ?9 AND task_id = ?10 AND (?11 = 0 OR seq = ?11)
RETURNING seq`},
		{&w.finishRaw, `UPDATE raws SET input = ?, output = ? WHERE tool_call_id = ?`},
		{&w.putCall, `
INSERT INTO calls (tool_call_id, task_id, seq, tool, model, stage, outcome,
                   started_at, ended_at, compaction, pointer, interrupted_at, owner, provider_call_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tool_call_id) DO UPDATE SET
  task_id = excluded.task_id, seq = excluded.seq, tool = excluded.tool,
  model = excluded.model, stage = excluded.stage, outcome = excluded.outcome,
  started_at = excluded.started_at, ended_at = excluded.ended_at,
  compaction = excluded.compaction, pointer = excluded.pointer,
  interrupted_at = excluded.interrupted_at, owner = excluded.owner,
  provider_call_id = excluded.provider_call_id`},
		{&w.putRaw, `
INSERT INTO raws (tool_call_id, input, output) VALUES (?, ?, ?)
ON CONFLICT (tool_call_id) DO UPDATE SET input = excluded.input, output = excluded.output`},
		{&w.forgetTask, `DELETE FROM tasks WHERE task_id = ? AND NOT EXISTS (SELECT 1 FROM calls WHERE task_id = ?)`},
		{&w.modelLen, `SELECT coalesce(octet_length(model), 0) FROM calls WHERE tool_call_id = ?`},
		{&w.replace, `UPDATE calls SET model = ?, compaction = ?, pointer = ? WHERE tool_call_id = ?`},
	} {
		st, err := c.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("%s: %w", p.sql, err)
		}
		*p.st = st
	}
	return nil
}

func (w *writeStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.begin, w.commit, w.rollback, w.savepoint, w.rollbackTo, w.release,
		w.lookup, w.nextSeq, w.touch, w.putCall, w.putRaw, w.forgetTask, w.insertCall, w.finishCall, w.finishRaw, w.modelLen, w.replace} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// readStmts are the read pool's statements, prepared once (database/sql
// prepares each on a connection at its first use there).
type readStmts struct {
	get, list, tasks, byProvider *sql.Stmt
}

func (r *readStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&r.get, selectRecords + `WHERE c.tool_call_id = ?`},
		{&r.list, selectRecords + `WHERE c.task_id = ? ORDER BY c.seq, c.rowid`},
		{&r.tasks, `SELECT task_id FROM tasks WHERE EXISTS (SELECT 1 FROM calls WHERE calls.task_id = tasks.task_id) ORDER BY touched DESC LIMIT ?`},
		{&r.byProvider, `SELECT tool_call_id FROM calls WHERE task_id = ? AND provider_call_id = ? AND provider_call_id != '' ORDER BY seq, rowid`},
	} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("%s: %w", p.sql, err)
		}
		*p.st = st
	}
	return nil
}

func (r *readStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{r.get, r.list, r.tasks, r.byProvider} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
