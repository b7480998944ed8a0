// Package store is the durable record of every tool call (the seed's
// "Persistence and recovery" consumer: raw input and output, the stable
// toolCallId, the task, timestamps, stage and outcome, and an optional
// recovery pointer). The interface is the seam; store/sqlitestore is the
// embedded default (SQLite, no server) and store/storetest is the
// conformance suite every backend passes.
package store
