package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// migrations are the schema steps in order: migrations[i] takes a file
// from user_version i to i+1. Append only; never edit a step that has
// shipped.
var migrations = []string{
	// 1: tasks, calls and their raw payloads.
	`
CREATE TABLE tasks (
  task_id TEXT PRIMARY KEY NOT NULL,
  touched INTEGER NOT NULL  -- recency: max(touched)+1 at every Put into the task
) STRICT;
CREATE INDEX tasks_touched ON tasks (touched);

CREATE TABLE calls (
  tool_call_id TEXT PRIMARY KEY NOT NULL,
  task_id      TEXT NOT NULL REFERENCES tasks (task_id),
  seq          INTEGER NOT NULL,
  tool         TEXT NOT NULL,
  model        BLOB,            -- raw bytes; NULL for nil
  stage        TEXT NOT NULL,
  outcome      TEXT NOT NULL,
  started_at   INTEGER,         -- Unix nanoseconds; NULL for the zero time
  ended_at     INTEGER,
  compaction   TEXT NOT NULL,
  pointer      TEXT NOT NULL
) STRICT;
-- The raw input and output sit in a row of their own, so that replacing
-- the model projection does not rewrite megabytes of raw output.
CREATE TABLE raws (
  tool_call_id TEXT PRIMARY KEY NOT NULL REFERENCES calls (tool_call_id) ON DELETE CASCADE,
  input        BLOB,            -- raw bytes; NULL for nil
  output       BLOB
) STRICT;
CREATE INDEX calls_task_seq ON calls (task_id, seq);
`,
	// 2: who wrote each record (the store instance, for finding the
	// running records of writers that are gone) and when a record was
	// found interrupted.
	`
ALTER TABLE calls ADD COLUMN owner TEXT NOT NULL DEFAULT '';  -- '' : written before version 2
ALTER TABLE calls ADD COLUMN interrupted_at INTEGER;          -- Unix nanoseconds; NULL unless interrupted
CREATE INDEX calls_running ON calls (owner) WHERE outcome = 'running';
`,
	// 3: the model provider's own id of a call, kept as data.
	`
ALTER TABLE calls ADD COLUMN provider_call_id TEXT NOT NULL DEFAULT '';
CREATE INDEX calls_provider ON calls (task_id, provider_call_id) WHERE provider_call_id != '';
`,
	// 4: payloads beside a task's records (store.Payloads), in chunks so
	// an append writes only its own bytes, and background jobs
	// (store.Jobs) as a JSON document plus the columns queries use, so
	// fields added to store.Job later need no step.
	`
CREATE TABLE payloads (
  task_id TEXT NOT NULL,
  name    TEXT NOT NULL,
  size    INTEGER NOT NULL,       -- bytes: the sum of its chunks' lengths
  PRIMARY KEY (task_id, name)
) STRICT;
CREATE TABLE payload_chunks (
  task_id TEXT NOT NULL,
  name    TEXT NOT NULL,
  off     INTEGER NOT NULL,       -- byte offset of the chunk's first byte in the payload
  n       INTEGER NOT NULL,       -- length(data)
  data    BLOB NOT NULL,
  PRIMARY KEY (task_id, name, off)
) STRICT;
CREATE TABLE jobs (
  job_id     TEXT PRIMARY KEY NOT NULL,
  task_id    TEXT NOT NULL,
  state      TEXT NOT NULL,
  started_at INTEGER,             -- Unix nanoseconds; NULL for the zero time
  doc        BLOB NOT NULL,       -- the store.Job as JSON, without Detail
  detail     BLOB                 -- Job.Detail byte for byte; NULL for nil
) STRICT;
CREATE INDEX jobs_task ON jobs (task_id, started_at);
CREATE INDEX jobs_state ON jobs (state);
`,
}

// SchemaVersion is the schema version (PRAGMA user_version) this build
// writes: the number of migration steps it knows.
const SchemaVersion = 4

// migrate brings the database to len(steps), one step per BEGIN IMMEDIATE
// transaction together with its user_version bump, so a crash or a
// failing step leaves the previous version intact, and two processes
// opening one file at once apply each step once.
func migrate(ctx context.Context, db *sql.DB, steps []string) error {
	// Two processes opening a new file at once can meet SQLITE_BUSY where
	// SQLite does not wait (switching the file to WAL, first connection
	// set-up): such a step is retried, with a growing pause, for up to
	// busyRetryFor.
	deadline := time.Now().Add(busyRetryFor)
	pause := 5 * time.Millisecond
	for {
		err := migrateOnce(ctx, db, steps)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(pause*2, 200*time.Millisecond)
	}
}

// busyRetryFor bounds how long migrate retries a step that met SQLITE_BUSY.
const busyRetryFor = 15 * time.Second

// isBusy reports whether err is SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		return coded.Code()&0xff == 5
	}
	return strings.Contains(err.Error(), "SQLITE_BUSY")
}

func migrateOnce(ctx context.Context, db *sql.DB, steps []string) error {
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var v int
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
			tx.Rollback()
			return fmt.Errorf("read schema version: %w", err)
		}
		switch {
		case v > len(steps):
			tx.Rollback()
			return fmt.Errorf("%w (file %d, build %d)", ErrSchemaTooNew, v, len(steps))
		case v == len(steps):
			return tx.Rollback()
		}
		if _, err := tx.ExecContext(ctx, steps[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("schema step %d to %d: %w", v, v+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("schema step %d to %d: %w", v, v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("schema step %d to %d: commit: %w", v, v+1, err)
		}
	}
}
