package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aibuddy/aibuddy/store"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// ErrSchemaTooNew: the file's schema version (PRAGMA user_version) is newer
// than the migrations this build knows; it was written by a newer aibuddy
// and is left untouched.
var ErrSchemaTooNew = errors.New("sqlitestore: schema version is newer than this build")

// Sync is the SQLite synchronous level of every connection.
type Sync int

// Sync levels (the zero value is SyncFull). See the package doc for what
// each one survives.
const (
	// SyncFull (PRAGMA synchronous=FULL): every commit syncs the -wal file;
	// a Put that returned survives power loss.
	SyncFull Sync = iota
	// SyncNormal (PRAGMA synchronous=NORMAL): syncs at checkpoints only; a
	// Put that returned survives a process kill, not necessarily an OS crash
	// or power loss. Never corrupts the file.
	SyncNormal
)

func (s Sync) pragma() (string, error) {
	switch s {
	case SyncFull:
		return "FULL", nil
	case SyncNormal:
		return "NORMAL", nil
	}
	return "", fmt.Errorf("sqlitestore: unknown Sync %d", int(s))
}

// Options configures [Open]. A nil *Options means all defaults.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection (in practice: another process writing the same file)
	// before it fails with SQLITE_BUSY ("database is locked"). Duration,
	// rounded down to whole milliseconds. Default (0): 10 s. Negative: do
	// not wait at all.
	BusyTimeout time.Duration
	// Sync is the durability of a commit. Default (zero value): SyncFull.
	Sync Sync
	// Readers is the most read connections open at once (Get, ListTask,
	// Tasks); more concurrent reads queue for a free one. Count. Default
	// (0): 4. Writes always use one connection of their own.
	Readers int
	// MaxBatch is the most writes committed in one transaction (group
	// commit): writes that arrive while a commit is under way wait and
	// go together into the next one, one sync for all. Count. Default
	// (0): 64.
	MaxBatch int
	// RunningDelay bounds how long a running record given to
	// [Store.PutDeferred] may wait uncommitted: a call that ends sooner
	// commits once, its running record replaced by the final one in the
	// same write; a call that runs longer has its running record
	// committed (visible to other processes, marked interrupted if the
	// process dies) at this delay. Any other commit meanwhile takes it
	// along. Duration. Default (0): DefaultRunningDelay. Negative: no
	// deferral (PutDeferred is Put).
	RunningDelay time.Duration
	// Now is the clock of InterruptedAt. Default time.Now.
	Now func() time.Time
}

// DefaultRunningDelay is Options.RunningDelay when unset (setting
// records.runningDelay).
const DefaultRunningDelay = 50 * time.Millisecond

const (
	defaultBusyTimeout = 10 * time.Second
	defaultReaders     = 4
	defaultMaxBatch    = 64
)

// Store is a [store.Store] on one SQLite file. Create one with [Open]; it is
// safe for concurrent use by many goroutines, and its file for two or more
// processes at once.
type Store struct {
	path     string
	sync     Sync
	maxBatch int
	w        *sql.DB   // one connection: migrations, then the writer's
	conn     *sql.Conn // the write connection, used by the writer goroutine only
	ws       writeStmts
	r        *sql.DB // read-only connections
	rs       readStmts

	// Group commit (writer.go): writes queue under wmu; one caller at a
	// time leads, committing the queue in batches.
	wmu     sync.Mutex
	idle    *sync.Cond // signalled when no one leads
	queue   []*op
	leading bool
	closed  bool
	pending map[string]*op // deferred writes queued, not yet claimed, by ToolCallID
	// runningDelay is Options.RunningDelay (negative: no deferral).
	runningDelay time.Duration
	full         bool // the write connection's synchronous level is FULL now (leader only)

	owner string   // this instance's owner id (owner.go)
	lock  *os.File // its lock file, locked while the store is open

	// Test hooks (export_test.go); nil in use.
	onQueue      func(queued int) // a write was queued behind a leader (under wmu)
	beforeCommit func(batch int)  // the leader is about to begin a batch
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.ProviderIDs = (*Store)(nil)
)

// Open opens the store at path (a file name; created with mode 0600, and its
// missing parent folders with mode 0700), brings its schema up to date and
// returns it. opts may be nil. Errors name the file; a file written by a
// newer build fails with an error wrapping [ErrSchemaTooNew], a file that is
// not a SQLite database fails with the driver's "file is not a database".
// Close the store when done.
func Open(path string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	if path == "" {
		return nil, errors.New("sqlitestore: open: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	syncPragma, err := opts.Sync.pragma()
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", abs, err)
	}
	busy := opts.BusyTimeout
	switch {
	case busy == 0:
		busy = defaultBusyTimeout
	case busy < 0:
		busy = 0
	}
	readers := opts.Readers
	if readers <= 0 {
		readers = defaultReaders
	}
	maxBatch := opts.MaxBatch
	if maxBatch <= 0 {
		maxBatch = defaultMaxBatch
	}

	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: create folder: %w", abs, err)
	}
	// Create the file ourselves so it gets 0600: records hold raw tool
	// output. SQLite gives the -wal and -shm files the database's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", abs, err)
	}
	f.Close()

	s := &Store{path: abs, sync: opts.Sync, maxBatch: maxBatch, owner: newOwner(), runningDelay: opts.RunningDelay}
	if s.runningDelay == 0 {
		s.runningDelay = DefaultRunningDelay
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	common := url.Values{}
	common.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	common.Set("_foreign_keys", "on")
	common.Set("_synchronous", syncPragma)

	wq := cloneValues(common)
	wq.Set("_journal_mode", "WAL")
	wq.Set("_txlock", "immediate")
	s.w, err = sql.Open("sqlite", dsn(abs, wq))
	if err != nil {
		return nil, s.fail("open", err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxIdleTime(0)
	s.w.SetConnMaxLifetime(0)

	ctx := context.Background()
	// The first connection switches a new file to WAL; a second process
	// doing the same at that moment gets SQLITE_BUSY without waiting.
	pause, deadline := 5*time.Millisecond, time.Now().Add(busyRetryFor)
	for {
		err := s.w.PingContext(ctx)
		if err == nil {
			break
		}
		if !isBusy(err) || time.Now().After(deadline) {
			s.w.Close()
			return nil, s.fail("open", err)
		}
		time.Sleep(pause)
		pause = min(pause*2, 200*time.Millisecond)
	}
	if err := migrate(ctx, s.w, migrations); err != nil {
		s.w.Close()
		return nil, s.fail("migrate", err)
	}
	if s.conn, err = s.w.Conn(ctx); err != nil {
		s.w.Close()
		return nil, s.fail("open", err)
	}
	if err := s.ws.prepare(ctx, s.conn); err != nil {
		s.closeAll()
		return nil, s.fail("prepare", err)
	}

	rq := cloneValues(common)
	rq.Set("_query_only", "on")
	s.r, err = sql.Open("sqlite", dsn(abs, rq))
	if err != nil {
		s.closeAll()
		return nil, s.fail("open", err)
	}
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	s.r.SetConnMaxIdleTime(0)
	s.r.SetConnMaxLifetime(0)
	if err := s.r.PingContext(ctx); err != nil {
		s.closeAll()
		return nil, s.fail("open", err)
	}
	if err := s.rs.prepare(ctx, s.r); err != nil {
		s.closeAll()
		return nil, s.fail("prepare", err)
	}
	s.idle = sync.NewCond(&s.wmu)
	s.full = s.sync == SyncFull
	if canLock {
		if err := s.takeOwnership(); err != nil {
			s.closeAll()
			return nil, s.fail("open", fmt.Errorf("owner lock: %w", err))
		}
	}
	if err := s.markInterrupted(ctx, now()); err != nil {
		s.Close()
		return nil, s.fail("open", err)
	}
	return s, nil
}

// Path returns the absolute file name of the database.
func (s *Store) Path() string { return s.path }

func cloneValues(v url.Values) url.Values {
	c := make(url.Values, len(v))
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// dsn builds a file: URI so that any byte of the path ('?', '#', '%')
// reaches SQLite intact.
func dsn(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	if u.Path != "" && u.Path[0] != '/' { // Windows: C:/x -> /C:/x
		u.Path = "/" + u.Path
	}
	return u.String()
}

func (s *Store) fail(op string, err error) error {
	return fmt.Errorf("sqlitestore: %s %s: %w", op, s.path, err)
}

func (s *Store) failID(op, id string, err error) error {
	return fmt.Errorf("sqlitestore: %s %s in %s: %w", op, id, s.path, err)
}

// Put inserts r or replaces the record with the same ToolCallID, in one
// transaction. A zero r.Seq keeps the existing record's Seq when the record
// stays in the same task, and otherwise gets the task's highest Seq + 1;
// Put writes the assigned Seq back into r. Every Put makes r.TaskID the most
// recent task for [Store.Tasks]. ToolCallID and TaskID must be non-empty and
// Seq non-negative; StartedAt and EndedAt must be zero or within the years
// 1678-2262 (Unix nanoseconds). Input, Output and Model are stored byte for
// byte (nil stays nil); one record is at most about 1 GB (SQLite's
// SQLITE_MAX_LENGTH).
func (s *Store) Put(ctx context.Context, r *store.Record) error {
	started, ended, interrupted, err := s.check(r)
	if err != nil {
		return err
	}
	var seq int64
	if r.Outcome != store.OutcomeRunning {
		// The call's running record may still be queued (PutDeferred):
		// this write takes its place, one INSERT of the final record.
		taken, err := s.takeOver(r.ToolCallID, r.TaskID, false, func(ctx context.Context) error {
			var err error
			seq, err = s.put(ctx, r, started, ended, interrupted, true)
			return err
		})
		if taken {
			if err != nil {
				return s.failID("put", r.ToolCallID, err)
			}
			r.Seq = seq
			return nil
		}
	}
	err = s.write(ctx, r.Outcome == store.OutcomeRunning, func(ctx context.Context) error {
		var err error
		seq, err = s.put(ctx, r, started, ended, interrupted, false)
		return err
	})
	if err != nil {
		return s.failID("put", r.ToolCallID, err)
	}
	r.Seq = seq
	return nil
}

// PutDeferred implements [store.Deferrer]: r, a call's running record
// (Outcome running; any other record is simply Put), is queued and
// PutDeferred returns without waiting for a commit. The record is
// committed with the next commit of this store (of any write), or when
// Options.RunningDelay has passed, whichever comes first; the call's
// final Put before then replaces it in the queue, so the call commits
// once. r.Seq is not set (the Seq is assigned at the commit, in the
// order the records were given). Until committed the record is not
// visible, nor kept if the process dies: use it only for a call whose
// result has not been handed back and whose effects, should it be
// killed, need no record (a read-only tool). Errors: the checks of Put
// (nothing queued), or the store is closed. A failure of the deferred
// commit itself is not reported (the final Put then writes the whole
// record).
func (s *Store) PutDeferred(ctx context.Context, r *store.Record) error {
	if r == nil || r.Outcome != store.OutcomeRunning || s.runningDelay < 0 {
		return s.Put(ctx, r)
	}
	started, ended, interrupted, err := s.check(r)
	if err != nil {
		return err
	}
	rec := *r // the caller may reuse r once we return
	queued, err := s.writeDeferred(rec.ToolCallID, rec.TaskID, s.runningDelay, func(ctx context.Context) error {
		_, err := s.put(ctx, &rec, started, ended, interrupted, false)
		return err
	})
	if err != nil {
		return s.failID("put", r.ToolCallID, err)
	}
	if !queued {
		return s.Put(ctx, r)
	}
	return nil
}

// check validates r for Put and returns its times as stored.
func (s *Store) check(r *store.Record) (started, ended, interrupted any, err error) {
	if r == nil {
		return nil, nil, nil, s.fail("put", errors.New("nil record"))
	}
	if r.ToolCallID == "" {
		return nil, nil, nil, s.fail("put", errors.New("empty ToolCallID"))
	}
	if r.TaskID == "" {
		return nil, nil, nil, s.failID("put", r.ToolCallID, errors.New("empty TaskID"))
	}
	if r.Seq < 0 {
		return nil, nil, nil, s.failID("put", r.ToolCallID, fmt.Errorf("negative Seq %d", r.Seq))
	}
	if started, err = nanos(r.StartedAt); err != nil {
		return nil, nil, nil, s.failID("put", r.ToolCallID, fmt.Errorf("StartedAt: %w", err))
	}
	if ended, err = nanos(r.EndedAt); err != nil {
		return nil, nil, nil, s.failID("put", r.ToolCallID, fmt.Errorf("EndedAt: %w", err))
	}
	if interrupted, err = nanos(r.InterruptedAt); err != nil {
		return nil, nil, nil, s.failID("put", r.ToolCallID, fmt.Errorf("InterruptedAt: %w", err))
	}
	return started, ended, interrupted, nil
}

// put writes r inside the current transaction and returns its Seq. The two
// Puts of a call take a short path each: a new record is one INSERT (its
// Seq computed in it), a record finished in place one UPDATE, neither
// touching an index; anything else (a replacement that changes task or
// Seq, a new record with an id in use) takes the general path. fresh: r
// is new whatever its Outcome (a final record taking over its deferred
// running record), so it takes the INSERT path.
func (s *Store) put(ctx context.Context, r *store.Record, started, ended, interrupted any, fresh bool) (int64, error) {
	w := &s.ws
	if _, err := w.touch.ExecContext(ctx, r.TaskID); err != nil {
		return 0, err
	}
	var seq int64
	if fresh || r.Outcome == store.OutcomeRunning {
		err := w.insertCall.QueryRowContext(ctx, r.ToolCallID, r.TaskID, r.Seq, r.Tool, blob(r.Model),
			r.Stage, string(r.Outcome), started, ended, string(r.Compaction), r.Pointer, interrupted, s.owner, r.ProviderCallID).Scan(&seq)
		if err == nil {
			_, err = w.putRaw.ExecContext(ctx, r.ToolCallID, blob(r.Input), blob(r.Output))
			return seq, err
		}
		if !isConstraint(err) {
			return 0, err
		}
	} else {
		err := w.finishCall.QueryRowContext(ctx, r.Tool, blob(r.Model), r.Stage, string(r.Outcome),
			started, ended, string(r.Compaction), r.Pointer, r.ToolCallID, r.TaskID, r.Seq, interrupted, s.owner, r.ProviderCallID).Scan(&seq)
		if err == nil {
			res, err := w.finishRaw.ExecContext(ctx, blob(r.Input), blob(r.Output), r.ToolCallID)
			if err != nil {
				return 0, err
			}
			if n, err := res.RowsAffected(); err != nil || n == 1 {
				return seq, err
			}
		} else if !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
	}

	var oldTask string
	var oldSeq int64
	err := w.lookup.QueryRowContext(ctx, r.ToolCallID).Scan(&oldTask, &oldSeq)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	seq = r.Seq
	if seq == 0 {
		if exists && oldTask == r.TaskID {
			seq = oldSeq
		} else if err := w.nextSeq.QueryRowContext(ctx, r.TaskID).Scan(&seq); err != nil {
			return 0, err
		}
	}
	if _, err := w.putCall.ExecContext(ctx, r.ToolCallID, r.TaskID, seq, r.Tool, blob(r.Model),
		r.Stage, string(r.Outcome), started, ended, string(r.Compaction), r.Pointer, interrupted, s.owner, r.ProviderCallID); err != nil {
		return 0, err
	}
	if _, err := w.putRaw.ExecContext(ctx, r.ToolCallID, blob(r.Input), blob(r.Output)); err != nil {
		return 0, err
	}
	if exists && oldTask != r.TaskID {
		// The record moved: forget the old task if it is now empty.
		if _, err := w.forgetTask.ExecContext(ctx, oldTask, oldTask); err != nil {
			return 0, err
		}
	}
	return seq, nil
}

// isConstraint reports whether err is SQLITE_CONSTRAINT (any extended
// code).
func isConstraint(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 19
}

// selectRecords reads whole records; append a WHERE clause.
const selectRecords = `SELECT c.tool_call_id, c.task_id, c.seq, c.tool, r.input, r.output, c.model,
  c.stage, c.outcome, c.started_at, c.ended_at, c.compaction, c.pointer, c.interrupted_at, c.provider_call_id
FROM calls c LEFT JOIN raws r ON r.tool_call_id = c.tool_call_id `

// Get returns the record with toolCallID, or an error wrapping
// [store.ErrNotFound]. Timestamps come back in UTC with their nanoseconds.
func (s *Store) Get(ctx context.Context, toolCallID string) (*store.Record, error) {
	row := s.rs.get.QueryRowContext(ctx, toolCallID)
	r, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.failID("get", toolCallID, err)
	}
	return r, nil
}

// ListTask returns the task's records in Seq order (ties, possible only
// with explicit Seqs, in insertion order); an unknown task gives an empty
// list and no error. The list is one consistent snapshot.
func (s *Store) ListTask(ctx context.Context, taskID string) ([]*store.Record, error) {
	rows, err := s.rs.list.QueryContext(ctx, taskID)
	if err != nil {
		return nil, s.failID("list task", taskID, err)
	}
	defer rows.Close()
	var out []*store.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, s.failID("list task", taskID, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failID("list task", taskID, err)
	}
	return out, nil
}

// ByProviderID implements [store.ProviderIDs].
func (s *Store) ByProviderID(ctx context.Context, taskID, providerID string) ([]string, error) {
	rows, err := s.rs.byProvider.QueryContext(ctx, taskID, providerID)
	if err != nil {
		return nil, s.failID("by provider id", providerID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.failID("by provider id", providerID, err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failID("by provider id", providerID, err)
	}
	return out, nil
}

// Tasks returns the ids of the tasks that have records, the task of the
// latest Put first, at most limit of them (0 means all; negative is an
// error). ReplaceModel does not change the order.
func (s *Store) Tasks(ctx context.Context, limit int) ([]string, error) {
	if limit < 0 {
		return nil, s.fail("tasks", fmt.Errorf("negative limit %d", limit))
	}
	n := int64(limit)
	if limit == 0 {
		n = -1 // SQLite: no limit
	}
	rows, err := s.rs.tasks.QueryContext(ctx, n)
	if err != nil {
		return nil, s.fail("tasks", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.fail("tasks", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("tasks", err)
	}
	return out, nil
}

// ReplaceModel sets the record's Model, Compaction and Pointer in one
// transaction, only when len(model) is smaller than the current Model's
// length in bytes; it reports whether it replaced (false leaves the record
// untouched). An unknown id gives an error wrapping [store.ErrNotFound].
func (s *Store) ReplaceModel(ctx context.Context, toolCallID string, model json.RawMessage, c store.Compaction, pointer string) (bool, error) {
	var replaced bool
	// Lazy: a compaction undone by a power loss leaves the whole model
	// form, which is still correct.
	err := s.write(ctx, true, func(ctx context.Context) error {
		replaced = false
		var cur int64
		err := s.ws.modelLen.QueryRowContext(ctx, toolCallID).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if int64(len(model)) >= cur {
			return nil
		}
		if _, err := s.ws.replace.ExecContext(ctx, blob(model), string(c), pointer, toolCallID); err != nil {
			return err
		}
		replaced = true
		return nil
	})
	if err != nil {
		return false, s.failID("replace model", toolCallID, err)
	}
	return replaced, nil
}

// Close commits the writes already handed to the store, then closes its
// connections; the last connection to the file checkpoints the -wal file
// into the database. Calls after Close fail.
func (s *Store) Close() error {
	s.wmu.Lock()
	if s.closed {
		s.wmu.Unlock()
		return s.fail("close", errors.New("already closed"))
	}
	s.closed = true
	for s.leading || len(s.queue) > 0 {
		if !s.leading {
			// Only deferred writes are left: commit them before closing.
			s.leading = true
			s.wmu.Unlock()
			s.leadBatch()
			s.wmu.Lock()
			continue
		}
		s.idle.Wait()
	}
	s.wmu.Unlock()
	if err := errors.Join(s.closeAll(), s.releaseOwnership()); err != nil {
		return s.fail("close", err)
	}
	return nil
}

// closeAll closes the statements and connections that are open.
func (s *Store) closeAll() error {
	errs := []error{s.rs.close(), s.ws.close()}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

type scanner interface{ Scan(dest ...any) error }

func scanRecord(sc scanner) (*store.Record, error) {
	var (
		r                    store.Record
		input, output, model any
		outcome, compaction  string
		startedAt, endedAt   sql.NullInt64
		interruptedAt        sql.NullInt64
	)
	if err := sc.Scan(&r.ToolCallID, &r.TaskID, &r.Seq, &r.Tool, &input, &output, &model,
		&r.Stage, &outcome, &startedAt, &endedAt, &compaction, &r.Pointer, &interruptedAt, &r.ProviderCallID); err != nil {
		return nil, err
	}
	var err error
	if r.Input, err = raw(input); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	if r.Output, err = raw(output); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	if r.Model, err = raw(model); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	r.Outcome = store.Outcome(outcome)
	r.Compaction = store.Compaction(compaction)
	if startedAt.Valid {
		r.StartedAt = time.Unix(0, startedAt.Int64).UTC()
	}
	if endedAt.Valid {
		r.EndedAt = time.Unix(0, endedAt.Int64).UTC()
	}
	if interruptedAt.Valid {
		r.InterruptedAt = time.Unix(0, interruptedAt.Int64).UTC()
	}
	return &r, nil
}

// blob is the column value of a raw message: NULL for nil, else a BLOB
// (never TEXT, so no byte is reinterpreted).
func blob(m json.RawMessage) any {
	if m == nil {
		return nil
	}
	return []byte(m)
}

// raw is the inverse of blob.
func raw(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		if v == nil {
			return json.RawMessage{}, nil
		}
		return json.RawMessage(v), nil
	}
	return nil, fmt.Errorf("column holds %T, want BLOB", v)
}

// nanos is t as Unix nanoseconds, NULL for the zero time.
func nanos(t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	minT, maxT := time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)
	if t.Before(minT) || t.After(maxT) {
		return nil, fmt.Errorf("%s is outside the years 1678-2262", t.Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

// PruneBefore implements [store.Pruner]; a pruned task's payloads and
// jobs go in the same transaction as its records.
func (s *Store) PruneBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	var tasks []string
	err := s.write(ctx, false, func(ctx context.Context) error {
		tasks = tasks[:0]
		rows, err := s.conn.QueryContext(ctx, `
SELECT task_id FROM calls GROUP BY task_id
HAVING max(COALESCE(started_at, ended_at, 0)) < ? AND min(COALESCE(started_at, ended_at, 0)) > 0
ORDER BY task_id`, cutoff.UnixNano())
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			tasks = append(tasks, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range tasks {
			for _, q := range []string{
				`DELETE FROM raws WHERE tool_call_id IN (SELECT tool_call_id FROM calls WHERE task_id = ?)`,
				`DELETE FROM calls WHERE task_id = ?`,
				`DELETE FROM tasks WHERE task_id = ?`,
				`DELETE FROM payload_chunks WHERE task_id = ?`,
				`DELETE FROM payloads WHERE task_id = ?`,
				`DELETE FROM jobs WHERE task_id = ?`,
			} {
				if _, err := s.conn.ExecContext(ctx, q, id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("prune", err)
	}
	return tasks, nil
}
