package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound: no record has that toolCallId.
var ErrNotFound = errors.New("store: no such tool call")

// Outcome is how a call ended.
type Outcome string

// Outcomes.
const (
	OutcomeOK        Outcome = "ok"        // the tool returned a result without IsError
	OutcomeError     Outcome = "error"     // an error result (Stage says where)
	OutcomeCancelled Outcome = "cancelled" // stopped by the user or the parent run
	OutcomeRunning   Outcome = "running"   // recorded at start, not finished yet
	// OutcomeInterrupted: the call was running when its process ended
	// (killed, crashed); a later start of a store on the same data found
	// it so and marked it, at Record.InterruptedAt. No result was handed
	// back; its effect may be partial.
	OutcomeInterrupted Outcome = "interrupted"
)

// Compaction says what replaced the model form of a result.
type Compaction string

// Compaction kinds (seed: "A tool can choose structural trimming, model
// summarization, or drop").
const (
	CompactionNone      Compaction = ""
	CompactionTrim      Compaction = "trim"
	CompactionSummarize Compaction = "summarize"
	CompactionDrop      Compaction = "drop"
)

// Record is the durable record of one tool call.
type Record struct {
	ToolCallID string // aibuddy's id of the call, unique across tasks; primary key
	// ProviderCallID is the id the model provider gave the call (its
	// tool_use id or call_id), kept as data: providers reuse ids (some
	// send "call_0" on every turn). "" when none.
	ProviderCallID string
	TaskID         string          // the run (task) the call belongs to
	Seq            int64           // order of the call within its task, assigned by Put when 0
	Tool           string          // tool name as called
	Input          json.RawMessage // raw input, exactly as received
	// Output is the raw result: the JSON of the whole tool result as first
	// produced (content blocks, isError, stage, evidence), never trimmed.
	Output json.RawMessage
	// Model is the model projection: the compact form later model steps
	// see. Equal to the full text until compaction replaces it.
	Model      json.RawMessage
	Stage      string  // failure stage for error results, else ""
	Outcome    Outcome //
	StartedAt  time.Time
	EndedAt    time.Time
	Compaction Compaction
	// Pointer is the recovery pointer: where the raw input and output were
	// offloaded (compacted_outputs/<taskId>/<toolCallId>.json, relative to
	// the data folder), "" when none.
	Pointer string
	// InterruptedAt is when a store found the record running with its
	// writer gone and marked it OutcomeInterrupted; zero otherwise. Put
	// stores it as given (a Put of the call's real end clears it).
	InterruptedAt time.Time
}

// Pruner is an optional interface of a [Store] for data retention.
// PruneBefore deletes every task whose newest record started (or, without
// a start, ended) before cutoff, with all its records and raw payloads,
// in one transaction, and returns the deleted task ids sorted. A task with
// a record of unknown time (both zero) is kept. Records of the kept tasks
// are untouched, so a run is never half deleted.
type Pruner interface {
	PruneBefore(ctx context.Context, cutoff time.Time) ([]string, error)
}

// ProviderIDs is an optional interface of a [Store]: ByProviderID returns
// the ToolCallIDs of the task's records whose ProviderCallID is
// providerID, in Seq order (none: empty, no error). It lets a model that
// names a call by its own tool_use id find aibuddy's; several records may
// match, as providers reuse ids.
type ProviderIDs interface {
	ByProviderID(ctx context.Context, taskID, providerID string) ([]string, error)
}

// Deferrer is an optional interface of a [Store]: PutDeferred takes a
// call's running record (Outcome running) without waiting for it to be
// written: it is committed with the store's next write, or after the
// store's own bound at the latest, and the call's final Put before then
// replaces it (one write per short call). Until committed the record is
// neither visible to readers nor kept if the process dies, so it suits a
// call whose interruption needs no record (a read-only tool). Seq order
// follows the order records were given, as with Put; r.Seq is not set.
type Deferrer interface {
	PutDeferred(ctx context.Context, r *Record) error
}

// Store keeps records. Implementations are safe for concurrent use by many
// goroutines, and their files for concurrent use by two processes.
//
// A Store that keeps its records across processes marks, when it opens,
// every record left OutcomeRunning by a writer that no longer runs (its
// process was killed or crashed) as OutcomeInterrupted with InterruptedAt
// set; records of writers still running are left as they are.
type Store interface {
	// Put inserts a record or replaces the one with the same ToolCallID,
	// atomically. A zero Seq gets the next number of its task. A Put that
	// returned nil survives the process being killed; what it survives
	// beyond (an OS crash, a power loss) is the backend's durability
	// setting, except that a record whose Outcome is OutcomeRunning (a
	// call's start, before anything was handed back) may always be kept
	// only as durably as a process kill requires.
	Put(ctx context.Context, r *Record) error
	// Get returns the record with toolCallID, or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, toolCallID string) (*Record, error)
	// ListTask returns a task's records in Seq order.
	ListTask(ctx context.Context, taskID string) ([]*Record, error)
	// Tasks returns the task ids that have records, most recent first,
	// at most limit (0 means all).
	Tasks(ctx context.Context, limit int) ([]string, error)
	// ReplaceModel swaps a record's model projection for a compacted one
	// in one atomic step, only when the new form is smaller in bytes than
	// the current one; it reports whether it replaced. Errors wrap
	// ErrNotFound for an unknown id.
	ReplaceModel(ctx context.Context, toolCallID string, model json.RawMessage, c Compaction, pointer string) (bool, error)
	// Close releases the store.
	Close() error
}
