// Package pgstore is the [store.Store] on a PostgreSQL server (with
// [store.Payloads], [store.Jobs], [store.Pruner] and [store.ProviderIDs]),
// through github.com/jackc/pgx/v5 and its pool: the store that several
// aibuddy processes on several machines (gateway replicas) share.
//
// # Connection and schema
//
// [Open] takes a pgx connection string ("postgres://user@host:5432/db",
// sslmode and the other libpq keys, the PG* environment variables) and
// keeps its tables in one schema ([Options.Schema], "aibuddy" by default,
// created when missing), with search_path set on every connection. The
// schema version is the highest row of table aibuddy_schema; Open applies
// the missing migration steps in order, each in its own transaction with
// its row, while holding a session advisory lock, so replicas starting at
// once apply each step once; a schema newer than this build is refused
// ([ErrSchemaTooNew]).
//
// # Durability
//
// A write is one transaction, committed with the server's
// synchronous_commit (on by default: a Put that returned is on the
// server's disk). Two writes commit with synchronous_commit off, as the
// store contract allows: a record whose Outcome is "running" and a
// ReplaceModel; both survive this process being killed (the server has
// them), not a crash of the server itself.
//
// # Concurrency
//
// Puts into one task queue on the task's row lock (the upsert of its
// recency), which keeps Seqs unique and gapless across processes; Puts
// into different tasks run in parallel. Appends to one payload queue on
// the payload's row. Reads are single statements, so each sees one
// snapshot. A transaction PostgreSQL aborts for a deadlock or a
// serialization failure is run again.
//
// # Interrupted calls (owner liveness)
//
// Each open Store is an owner: a random 31-bit id written into its records
// and a session advisory lock (class 0x41694275, the id) held on a
// connection of its own. The server drops the lock when that session ends,
// which it does when the process ends however it ends (SIGKILL closes the
// socket; a vanished machine is found by TCP keepalive). A record running
// whose owner's lock is not in pg_locks was left by a writer that is gone:
// [Store.MarkInterrupted] marks such records "interrupted"; Open runs it
// and so does a sweeper every [Options.SweepInterval] (1 minute by
// default), so a replica that keeps running notices a peer that died.
// Session locks need a direct connection or a pooler in session mode.
//
// # Payloads and jobs
//
// A payload is a size row plus chunks of at most 1 MiB (small appends
// coalesce into 64 KiB chunks); a job is a jsonb document with Detail
// byte for byte beside it and indexed task_id, state and started_at.
//
// # Errors
//
// Every error names the operation, the server (password removed) and the
// schema, e.g. "pgstore: put call_1 in postgres://aibuddy@db:5432/x schema
// aibuddy: ...", and wraps the cause ([store.ErrNotFound],
// [store.ErrNoPayload], [store.ErrNoJob], context errors, *pgconn.PgError).
package pgstore
