package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aibuddy/aibuddy/store"
)

// Options configures [Open]. A nil *Options means all defaults.
type Options struct {
	// Schema is the PostgreSQL schema that holds the tables (created
	// when missing). Default (""): "aibuddy". Two stores on one database
	// with different schemas share nothing.
	Schema string
	// MaxConns is the most connections of the store's pool. Count.
	// Default (0): 8. One more connection, outside the pool, holds the
	// owner lock while the store is open.
	MaxConns int
	// SweepInterval is how often an open store marks the running records
	// of owners that are gone as interrupted (besides at Open), so a
	// replica that keeps running notices a peer that was killed. Duration.
	// Default (0): 1 minute. Negative: only at Open.
	SweepInterval time.Duration
	// Now is the clock of InterruptedAt. Default time.Now.
	Now func() time.Time
}

const (
	defaultSchema   = "aibuddy"
	defaultMaxConns = 8
	defaultSweep    = time.Minute
)

// Store is a [store.Store] (with [store.Payloads], [store.Jobs],
// [store.Pruner] and [store.ProviderIDs]) on a PostgreSQL database. It is
// safe for concurrent use by many goroutines, and its database for many
// processes (replicas) at once.
type Store struct {
	pool   *pgxpool.Pool
	where  string // the URL without password, and the schema, for errors
	now    func() time.Time
	owner  string     // this store's owner id (owner.go)
	lockMu sync.Mutex // guards lockConn
	// lockConn holds the owner's session advisory lock.
	lockConn *pgx.Conn
	lockCfg  *pgx.ConnConfig
	stop     chan struct{} // closed by Close: ends the sweeper
	swept    sync.WaitGroup
	closeMu  sync.Mutex
	closed   bool
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.ProviderIDs = (*Store)(nil)
	_ store.Pruner      = (*Store)(nil)
	_ store.Payloads    = (*Store)(nil)
	_ store.Jobs        = (*Store)(nil)
)

// Open connects to the database at connURL (a "postgres://" or
// "postgresql://" URL, or a libpq key=value string; pgx's syntax,
// including sslmode and the PG* environment variables), brings the
// schema up to date under an advisory lock, takes this store's owner lock,
// marks the running records of owners that are gone as interrupted, and
// returns the store. opts may be nil. Errors name the server (never the
// password); a schema written by a newer build fails with an error
// wrapping [ErrSchemaTooNew]. Close the store when done.
func Open(ctx context.Context, connURL string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	schema := opts.Schema
	if schema == "" {
		schema = defaultSchema
	}
	where := redact(connURL) + " schema " + schema
	fail := func(op string, err error) error { return fmt.Errorf("pgstore: %s %s: %w", op, where, err) }
	cfg, err := pgxpool.ParseConfig(connURL)
	if err != nil {
		return nil, fail("open", fmt.Errorf("parse the URL: %w", err))
	}
	cfg.MaxConns = int32(defaultMaxConns)
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(opts.MaxConns)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.ConnConfig.RuntimeParams["application_name"] = "aibuddy"
	s := &Store{where: where, now: opts.Now, stop: make(chan struct{})}
	if s.now == nil {
		s.now = time.Now
	}
	s.lockCfg = cfg.ConnConfig.Copy()
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fail("open", err)
	}
	if err := migrate(ctx, s.pool, schema, migrations); err != nil {
		s.pool.Close()
		return nil, fail("migrate", err)
	}
	if err := s.takeOwnership(ctx); err != nil {
		s.pool.Close()
		return nil, fail("open", fmt.Errorf("owner lock: %w", err))
	}
	if err := s.MarkInterrupted(ctx); err != nil {
		s.Close()
		return nil, err
	}
	sweep := opts.SweepInterval
	if sweep == 0 {
		sweep = defaultSweep
	}
	if sweep > 0 {
		s.swept.Go(func() { s.sweeper(sweep) })
	}
	return s, nil
}

// redact is the URL without its password, for errors and logs.
func redact(connURL string) string {
	u, err := url.Parse(connURL)
	if err != nil || u.Scheme == "" {
		return "postgres"
	}
	return u.Redacted()
}

func (s *Store) fail(op string, err error) error {
	return fmt.Errorf("pgstore: %s in %s: %w", op, s.where, err)
}

func (s *Store) failID(op, id string, err error) error {
	return fmt.Errorf("pgstore: %s %s in %s: %w", op, id, s.where, err)
}

// retryable reports whether err is a serialization failure or a deadlock
// that PostgreSQL resolved by aborting this transaction: run it again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// inTx runs fn in a transaction, again when PostgreSQL aborted it for a
// deadlock or serialization failure (a few times). lazy commits with
// synchronous_commit off: the commit survives this process being killed
// (the server has it) but not the server's crash.
func (s *Store) inTx(ctx context.Context, lazy bool, fn func(tx pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if lazy {
				if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
					return err
				}
			}
			return fn(tx)
		})
		if err == nil || !retryable(err) || attempt >= 5 {
			return err
		}
	}
}

// Put implements [store.Store]. A record whose Outcome is running commits
// with synchronous_commit off (see the package doc). ToolCallID and TaskID
// must be non-empty and Seq non-negative; StartedAt and EndedAt zero or
// within the years 1678-2262 (Unix nanoseconds). Puts into one task are
// serialized by a lock on the task's row, which keeps Seqs unique and
// gapless across processes.
func (s *Store) Put(ctx context.Context, r *store.Record) error {
	if r == nil {
		return s.fail("put", errors.New("nil record"))
	}
	if r.ToolCallID == "" {
		return s.fail("put", errors.New("empty ToolCallID"))
	}
	if r.TaskID == "" {
		return s.failID("put", r.ToolCallID, errors.New("empty TaskID"))
	}
	if r.Seq < 0 {
		return s.failID("put", r.ToolCallID, fmt.Errorf("negative Seq %d", r.Seq))
	}
	var times [3]*int64
	for i, t := range []time.Time{r.StartedAt, r.EndedAt, r.InterruptedAt} {
		n, err := nanos(t)
		if err != nil {
			return s.failID("put", r.ToolCallID, fmt.Errorf("%s: %w", [3]string{"StartedAt", "EndedAt", "InterruptedAt"}[i], err))
		}
		times[i] = n
	}
	var seq int64
	var oldTask *string
	err := s.pipelined(ctx, r.Outcome == store.OutcomeRunning, func(b *pgx.Batch) {
		b.Queue(`
INSERT INTO tasks (task_id, touched) VALUES ($1, nextval('aibuddy_touch'))
ON CONFLICT (task_id) DO UPDATE SET touched = excluded.touched`, r.TaskID)
		// A statement of its own after the task's row lock: its snapshot
		// sees every Put into the task committed before, so the Seq it
		// computes (the record's own when it stays in its task, else the
		// task's next) is unique and gapless.
		b.Queue(putCall, r.ToolCallID, r.TaskID, r.Seq, r.Tool, r.ProviderCallID, blob(r.Input), blob(r.Output), blob(r.Model),
			r.Stage, string(r.Outcome), times[0], times[1], string(r.Compaction), r.Pointer, s.owner, times[2])
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		return br.QueryRow().Scan(&seq, &oldTask)
	}, func(ctx context.Context, conn *pgxpool.Conn) error {
		if oldTask != nil && *oldTask != r.TaskID {
			// The record moved: forget the old task if it is now empty.
			_, err := conn.Exec(ctx, `DELETE FROM tasks WHERE task_id = $1 AND NOT EXISTS (SELECT 1 FROM calls WHERE task_id = $1)`, *oldTask)
			return err
		}
		return nil
	})
	if err != nil {
		return s.failID("put", r.ToolCallID, err)
	}
	r.Seq = seq
	return nil
}

// putCall upserts a record and returns its Seq and the task it was in
// before (NULL for a new record). Seq: $3 when positive, else the
// record's own when it stays in its task, else the task's next.
const putCall = `
WITH old AS (SELECT task_id, seq FROM calls WHERE tool_call_id = $1)
INSERT INTO calls (tool_call_id, task_id, seq, tool, provider_call_id, input, output, model, stage, outcome,
                   started_at, ended_at, compaction, pointer, owner, interrupted_at)
VALUES ($1, $2,
  CASE WHEN $3::bigint > 0 THEN $3::bigint
       ELSE coalesce((SELECT seq FROM old WHERE task_id = $2),
                     (SELECT coalesce(max(seq), 0) + 1 FROM calls WHERE task_id = $2)) END,
  $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
ON CONFLICT (tool_call_id) DO UPDATE SET
  task_id = excluded.task_id, seq = excluded.seq, tool = excluded.tool, provider_call_id = excluded.provider_call_id,
  input = excluded.input, output = excluded.output, model = excluded.model, stage = excluded.stage,
  outcome = excluded.outcome, started_at = excluded.started_at, ended_at = excluded.ended_at,
  compaction = excluded.compaction, pointer = excluded.pointer, owner = excluded.owner,
  interrupted_at = excluded.interrupted_at
RETURNING seq, (SELECT task_id FROM old)`

// pipelined runs one transaction in two round trips: BEGIN (with
// synchronous_commit off when lazy) and the statements queue adds go in
// one batch, read reads their results; then after (when not nil) may run
// more statements on the connection inside the transaction, and COMMIT
// ends it. Any error rolls it back; a deadlock or serialization failure
// runs it again (a few times).
func (s *Store) pipelined(ctx context.Context, lazy bool, queue func(b *pgx.Batch), read func(br pgx.BatchResults) error,
	after func(ctx context.Context, conn *pgxpool.Conn) error) error {
	for attempt := 0; ; attempt++ {
		err := s.pipelineOnce(ctx, lazy, queue, read, after)
		if err == nil || !retryable(err) || attempt >= 5 {
			return err
		}
	}
}

func (s *Store) pipelineOnce(ctx context.Context, lazy bool, queue func(b *pgx.Batch), read func(br pgx.BatchResults) error,
	after func(ctx context.Context, conn *pgxpool.Conn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	if lazy {
		b.Queue(`SET LOCAL synchronous_commit = off`)
	}
	queue(b)
	br := conn.SendBatch(ctx, b)
	err = func() error {
		for range 1 + map[bool]int{true: 1}[lazy] {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return read(br)
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && after != nil {
		err = after(ctx, conn)
	}
	if err == nil {
		_, err = conn.Exec(ctx, `COMMIT`)
		if err == nil {
			return nil
		}
	}
	// The transaction is aborted or unfinished: end it, so the connection
	// goes back to the pool clean (a broken one is closed by pgx).
	if _, rerr := conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`); rerr != nil {
		conn.Conn().Close(context.WithoutCancel(ctx))
	}
	return err
}

const selectRecords = `SELECT tool_call_id, task_id, seq, tool, input, output, model, stage, outcome,
  started_at, ended_at, compaction, pointer, interrupted_at, provider_call_id FROM calls `

// Get implements [store.Store]. Timestamps come back in UTC with their
// nanoseconds.
func (s *Store) Get(ctx context.Context, toolCallID string) (*store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.failID("get", toolCallID, err)
	}
	rows, err := s.pool.Query(ctx, selectRecords+`WHERE tool_call_id = $1`, toolCallID)
	if err != nil {
		return nil, s.failID("get", toolCallID, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRecord)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.failID("get", toolCallID, err)
	}
	return r, nil
}

// ListTask implements [store.Store]: Seq order, ties (explicit Seqs) in
// insertion order; one consistent snapshot.
func (s *Store) ListTask(ctx context.Context, taskID string) ([]*store.Record, error) {
	rows, err := s.pool.Query(ctx, selectRecords+`WHERE task_id = $1 ORDER BY seq, added`, taskID)
	if err != nil {
		return nil, s.failID("list task", taskID, err)
	}
	out, err := pgx.CollectRows(rows, scanRecord)
	if err != nil {
		return nil, s.failID("list task", taskID, err)
	}
	return out, nil
}

// ByProviderID implements [store.ProviderIDs].
func (s *Store) ByProviderID(ctx context.Context, taskID, providerID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT tool_call_id FROM calls WHERE task_id = $1 AND provider_call_id = $2 AND provider_call_id <> '' ORDER BY seq, added`,
		taskID, providerID)
	if err != nil {
		return nil, s.failID("by provider id", providerID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.failID("by provider id", providerID, err)
	}
	return out, nil
}

// Tasks implements [store.Store]: the task of the latest Put first, at
// most limit (0 means all; negative is an error).
func (s *Store) Tasks(ctx context.Context, limit int) ([]string, error) {
	if limit < 0 {
		return nil, s.fail("tasks", fmt.Errorf("negative limit %d", limit))
	}
	var n *int64
	if limit > 0 {
		l := int64(limit)
		n = &l
	}
	rows, err := s.pool.Query(ctx, `SELECT task_id FROM tasks t WHERE EXISTS (SELECT 1 FROM calls c WHERE c.task_id = t.task_id)
ORDER BY touched DESC LIMIT $1`, n)
	if err != nil {
		return nil, s.fail("tasks", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail("tasks", err)
	}
	return out, nil
}

// ReplaceModel implements [store.Store] in one UPDATE (the length test and
// the change see one row version, locked), one round trip in all; it
// commits with synchronous_commit off, as undoing it leaves the whole
// model form, which is still correct.
func (s *Store) ReplaceModel(ctx context.Context, toolCallID string, model json.RawMessage, c store.Compaction, pointer string) (bool, error) {
	var replaced, exists bool
	err := s.pipelined(ctx, true, func(b *pgx.Batch) {
		b.Queue(`UPDATE calls SET model = $1, compaction = $2, pointer = $3
WHERE tool_call_id = $4 AND coalesce(octet_length(model), 0) > $5`, blob(model), string(c), pointer, toolCallID, len(model))
		b.Queue(`SELECT EXISTS (SELECT 1 FROM calls WHERE tool_call_id = $1)`, toolCallID)
	}, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		replaced = tag.RowsAffected() == 1
		return br.QueryRow().Scan(&exists)
	}, nil)
	if err == nil && !exists {
		err = store.ErrNotFound
	}
	if err != nil {
		return false, s.failID("replace model", toolCallID, err)
	}
	return replaced, nil
}

// PruneBefore implements [store.Pruner]: a pruned task's records,
// payloads and jobs go in one transaction.
func (s *Store) PruneBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	var tasks []string
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
SELECT task_id FROM calls GROUP BY task_id
HAVING max(coalesce(started_at, ended_at, 0)) < $1 AND min(coalesce(started_at, ended_at, 0)) > 0
ORDER BY task_id`, cutoff.UnixNano())
		if err != nil {
			return err
		}
		if tasks, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if len(tasks) == 0 {
			return nil
		}
		for _, q := range []string{
			`DELETE FROM calls WHERE task_id = ANY($1)`,
			`DELETE FROM tasks WHERE task_id = ANY($1)`,
			`DELETE FROM payload_chunks WHERE task_id = ANY($1)`,
			`DELETE FROM payloads WHERE task_id = ANY($1)`,
			`DELETE FROM jobs WHERE task_id = ANY($1)`,
		} {
			if _, err := tx.Exec(ctx, q, tasks); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("prune", err)
	}
	slices.Sort(tasks)
	return tasks, nil
}

// Close ends the sweeper, releases the owner lock and closes the pool.
// Calls after Close fail.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return s.fail("close", errors.New("already closed"))
	}
	s.closed = true
	s.closeMu.Unlock()
	close(s.stop)
	s.swept.Wait()
	err := s.releaseOwnership()
	s.pool.Close()
	if err != nil {
		return s.fail("close", err)
	}
	return nil
}

func scanRecord(row pgx.CollectableRow) (*store.Record, error) {
	var (
		r                             store.Record
		input, output, model          []byte
		outcome, compaction           string
		startedAt, endedAt, interrupt *int64
	)
	if err := row.Scan(&r.ToolCallID, &r.TaskID, &r.Seq, &r.Tool, &input, &output, &model, &r.Stage, &outcome,
		&startedAt, &endedAt, &compaction, &r.Pointer, &interrupt, &r.ProviderCallID); err != nil {
		return nil, err
	}
	r.Input, r.Output, r.Model = raw(input), raw(output), raw(model)
	r.Outcome, r.Compaction = store.Outcome(outcome), store.Compaction(compaction)
	r.StartedAt, r.EndedAt, r.InterruptedAt = fromNanos(startedAt), fromNanos(endedAt), fromNanos(interrupt)
	return &r, nil
}

// blob is the column value of a raw message: NULL for nil, else bytea
// (an empty message stays an empty, non-NULL value).
func blob(m json.RawMessage) any {
	if m == nil {
		return nil
	}
	return []byte(m)
}

// raw is the inverse of blob: pgx scans a NULL bytea as nil and an empty
// one as an empty slice.
func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// nanos is t as Unix nanoseconds, nil (NULL) for the zero time.
func nanos(t time.Time) (*int64, error) {
	if t.IsZero() {
		return nil, nil
	}
	minT, maxT := time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)
	if t.Before(minT) || t.After(maxT) {
		return nil, fmt.Errorf("%s is outside the years 1678-2262", t.Format(time.RFC3339))
	}
	n := t.UnixNano()
	return &n, nil
}

func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}
