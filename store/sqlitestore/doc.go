// Package sqlitestore is the embedded default [store.Store]: one SQLite file,
// no server, through the pure-Go driver modernc.org/sqlite (no cgo).
//
// # File and modes
//
// [Open] creates the file and its parent folders when missing and sets, on
// every connection:
//
//   - journal_mode=WAL: readers never block the writer nor each other, and a
//     commit is one append to the -wal file beside the database (the -wal
//     and -shm files belong to the database; copy all three or none).
//   - busy_timeout ([Options.BusyTimeout], 10 s by default): a writer that
//     finds the file locked by another process waits that long before the
//     call fails with SQLITE_BUSY.
//   - synchronous ([Options.Sync], FULL by default). In WAL mode FULL syncs
//     the -wal file at every commit, so a Put that returned survives a
//     process kill, an OS crash and a power loss. NORMAL syncs only at
//     checkpoints: a Put that returned survives a process kill (SIGKILL,
//     panic) but the last commits before an OS crash or power loss may be
//     lost; the file is never corrupted either way. Under FULL, two writes
//     are committed without a sync, as under NORMAL: a record whose Outcome
//     is "running" (a call's start: the call has handed nothing back yet,
//     and a power loss also undoes the call's own unsynced effects) and a
//     ReplaceModel (undoing it leaves the whole model form, which is still
//     correct); the next synced commit makes them durable too. aibuddy's
//     CLI chooses with the setting records.sync (default "normal").
//   - foreign_keys=ON: a record's task row must exist (the schema keeps a
//     tasks table for recency).
//
// # Concurrency
//
// A [Store] is safe for concurrent use by many goroutines. Writes go through
// one connection with statements prepared once, and are committed in groups
// (group commit): a write that finds no commit under way commits at once on
// its caller's goroutine; writes that arrive while one commits queue and go
// together into the next transaction, at most [Options.MaxBatch] of them,
// sharing its commit and its sync. Each write of a group runs inside its
// own SAVEPOINT, so one that fails is rolled back alone; a write returns
// only once the transaction holding it has committed. Every transaction is
// BEGIN IMMEDIATE, so two processes on one file queue on SQLite's write
// lock through busy_timeout rather than failing when a read transaction
// tries to upgrade. A call's running record given to [Store.PutDeferred]
// (a read-only tool's) is queued without a commit of its own: it goes with
// the next commit, or its timer's at [Options.RunningDelay], and the
// call's final Put while it is still queued replaces it, so a short call
// commits once. Reads use a separate pool of read-only
// connections ([Options.Readers]) and see the last committed state of both
// processes.
//
// # Interrupted calls
//
// Each open Store is an owner: it writes its owner id into every record it
// puts and holds an exclusive flock(2) on <file>-owners/<owner>.lock while
// it is open; the kernel releases that lock when the process ends, however
// it ends. [Open] marks every record still "running" whose owner's lock
// is free (or whose lock file is gone, or that was written before owners
// were recorded) as "interrupted", with InterruptedAt set to the time of
// the open, and removes the lock files of owners that are gone. A record
// running in a store that is still open, in this process or another, is
// left alone; a later Put of the call's real end replaces the mark. On
// systems without flock nothing is marked.
//
// # Schema
//
// Records live in table calls (tool_call_id primary key; raw input, output
// and model projection as BLOBs, kept byte for byte; timestamps as Unix
// nanoseconds, NULL for the zero time); table tasks keeps one row per task
// with a recency counter that every Put advances, which orders
// [Store.Tasks]. Payloads ([store.Payloads]) live in the same file, not in
// files of the data folder (one commit path, one prune transaction, one
// consistent view for two processes): table payloads keeps each payload's
// size and payload_chunks its bytes in chunks of at most 1 MiB, so an
// append writes only its own bytes and small appends coalesce into chunks
// of about 64 KiB. Jobs ([store.Jobs]) are rows of table jobs: the job as
// a JSON document, Detail byte for byte beside it, and indexed copies of
// task_id, state and started_at. The schema version is PRAGMA user_version; Open applies the
// missing migration steps in order, each in its own transaction with its
// version bump, and refuses a file whose version is newer than this build
// knows ([ErrSchemaTooNew]).
//
// # Errors
//
// Every error names the operation and the file, e.g.
// "sqlitestore: put call_1 in /data/aibuddy.db: database is locked", and wraps
// the cause ([store.ErrNotFound], context errors, driver errors) for
// errors.Is / errors.As.
package sqlitestore
