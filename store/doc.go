// Package store is the durable record of every tool call (the seed's
// "Persistence and recovery" consumer: raw input and output, the stable
// toolCallId, the task, timestamps, stage and outcome, and an optional
// recovery pointer), with the optional interfaces a backend may add:
// [Payloads] (byte payloads beside a task's records: offloaded calls, full
// command output, job logs), [Jobs] (background jobs), [Pruner]
// (retention), [ProviderIDs] (lookup by the provider's call id) and
// [Owners] (which processes sharing the store are alive). The interface is
// the seam; store/sqlitestore is the embedded default (SQLite, no server),
// store/pgstore the PostgreSQL backend that replicas share, and
// store/storetest the conformance suite every backend passes.
package store
