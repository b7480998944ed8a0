package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchemaTooNew: the database's schema version (the highest row of
// table aibuddy_schema) is newer than the migrations this build knows;
// it was written by a newer aibuddy and is left untouched.
var ErrSchemaTooNew = errors.New("pgstore: schema version is newer than this build")

// migrations are the schema steps in order: migrations[i] takes a schema
// from version i to i+1. Append only; never edit a step that has shipped.
var migrations = []string{
	// 1: tasks, calls, payloads, jobs.
	`
CREATE SEQUENCE aibuddy_touch;  -- recency of tasks: every Put into a task takes the next value
CREATE TABLE tasks (
  task_id text PRIMARY KEY,
  touched bigint NOT NULL
);
CREATE INDEX tasks_touched ON tasks (touched);

CREATE TABLE calls (
  tool_call_id     text PRIMARY KEY,
  task_id          text NOT NULL REFERENCES tasks (task_id),
  seq              bigint NOT NULL,
  added            bigserial,          -- insertion order: ties of explicit Seqs
  tool             text NOT NULL,
  provider_call_id text NOT NULL,
  input            bytea,              -- raw bytes; NULL for nil
  output           bytea,
  model            bytea,
  stage            text NOT NULL,
  outcome          text NOT NULL,
  started_at       bigint,             -- Unix nanoseconds; NULL for the zero time
  ended_at         bigint,
  compaction       text NOT NULL,
  pointer          text NOT NULL,
  owner            text NOT NULL,      -- the writing store's owner id (owner.go)
  interrupted_at   bigint
);
CREATE INDEX calls_task_seq ON calls (task_id, seq, added);
CREATE INDEX calls_running ON calls (owner) WHERE outcome = 'running';
CREATE INDEX calls_provider ON calls (task_id, provider_call_id) WHERE provider_call_id <> '';

CREATE TABLE payloads (
  task_id text NOT NULL,
  name    text NOT NULL,
  size    bigint NOT NULL,              -- bytes: the sum of its chunks' lengths
  PRIMARY KEY (task_id, name)
);
CREATE TABLE payload_chunks (
  task_id text NOT NULL,
  name    text NOT NULL,
  off     bigint NOT NULL,              -- byte offset of the chunk's first byte
  n       integer NOT NULL,             -- length(data)
  data    bytea NOT NULL,
  PRIMARY KEY (task_id, name, off)
);

CREATE TABLE jobs (
  job_id     text PRIMARY KEY,
  task_id    text NOT NULL,
  state      text NOT NULL,
  started_at bigint,                     -- Unix nanoseconds; NULL for the zero time
  added      bigserial,
  doc        jsonb NOT NULL,             -- the store.Job, without Detail
  detail     bytea                       -- Job.Detail byte for byte; NULL for nil
);
CREATE INDEX jobs_task ON jobs (task_id, started_at, added);
CREATE INDEX jobs_state ON jobs (state);
`,
}

// SchemaVersion is the schema version this build writes: the number of
// migration steps it knows.
const SchemaVersion = 1

// The first keys of aibuddy's two-key advisory locks: ownerClass (the
// ASCII of "AiBu") with an owner id, migrateClass with the hash of the
// schema's name.
const (
	ownerClass   = 0x41694275
	migrateClass = ownerClass + 1
)

// migrate brings the schema to len(steps) under a session advisory lock
// (migrateClass, hashtext of the schema) held on one connection, so two processes opening one
// database at once apply each step once; each step commits in its own
// transaction with its row in aibuddy_schema, so a failing step leaves
// the previous version intact.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, steps []string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, migrateClass, "migrate:"+schema); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext($2))`, migrateClass, "migrate:"+schema)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	if _, err := conn.Exec(ctx, `
CREATE TABLE IF NOT EXISTS aibuddy_schema (
  version    integer PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return fmt.Errorf("create table aibuddy_schema: %w", err)
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM aibuddy_schema`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(steps) {
		return fmt.Errorf("%w (database %d, build %d)", ErrSchemaTooNew, v, len(steps))
	}
	for ; v < len(steps); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, steps[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO aibuddy_schema (version) VALUES ($1)`, v+1)
			return err
		})
		if err != nil {
			return fmt.Errorf("schema step %d to %d: %w", v, v+1, err)
		}
	}
	return nil
}
