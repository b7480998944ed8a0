package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// ErrNoPayload: no payload has that task and name.
var ErrNoPayload = errors.New("store: no such payload")

// ErrNoJob: no background job has that id.
var ErrNoJob = errors.New("store: no such job")

// Payloads is an optional interface of a [Store]: byte payloads kept
// beside a task's records, so that any process that reaches the store
// can read them (the seed's recovery pointer made portable). They hold
// offloaded calls ("compacted_outputs/<taskId>/<toolCallId>.json"), the
// full output of a command ("outputs/<toolCallId>.log") and background
// job logs ("jobs/<jobId>.log").
//
// A name is a slash-separated relative path of at most 1024 bytes, with
// no "." or ".." element, no empty element and no NUL; other names are
// refused with an error naming the rule. A task's payloads are deleted
// with its records by [Pruner.PruneBefore].
type Payloads interface {
	// PutPayload stores data under (taskID, name), replacing any payload
	// there, atomically: a reader sees the old bytes or the new ones,
	// never a part. A PutPayload that returned nil survives the process
	// being killed.
	PutPayload(ctx context.Context, taskID, name string, data []byte) error
	// AppendPayload appends data to the payload (creating it when
	// missing) and returns its new size in bytes. An append that returned
	// nil survives the process being killed; concurrent appends to one
	// payload are applied one after another, never interleaved inside one
	// call's data.
	AppendPayload(ctx context.Context, taskID, name string, data []byte) (size int64, err error)
	// ReadPayload returns at most limit bytes starting at byte offset
	// (limit <= 0: to the end), and the payload's whole size in bytes.
	// An offset at or past the end gives no bytes and no error. Errors
	// wrap ErrNoPayload for a missing payload.
	ReadPayload(ctx context.Context, taskID, name string, offset, limit int64) (data []byte, size int64, err error)
}

// JobState is where a background job is.
type JobState string

// Job states.
const (
	JobRunning JobState = "running" // started, not ended
	JobExited  JobState = "exited"  // the command ended on its own (ExitCode says how)
	JobKilled  JobState = "killed"  // stopped by job_kill, a timeout, or its session's end
	// JobLost: the process that ran the job ended (killed, crashed,
	// restarted) while the job ran; the job's processes ended with it and
	// its exit status is unknown. Its log keeps the output up to then.
	JobLost JobState = "lost"
)

// Job is the durable record of one background job (a command started by
// execute with "background": true). A backend keeps the fields below as
// given; Detail carries what the job runner keeps beyond them.
type Job struct {
	JobID      string   // primary key, unique across tasks
	TaskID     string   // the task (MCP session or run) that started it
	ToolCallID string   // the execute call that started it
	Command    string   // the command line as given
	Dir        string   // working directory, workspace-relative
	State      JobState //
	ExitCode   int      // when ended: the exit code, -1 when killed by a signal
	PID        int      // the job's process id on the runner's machine; 0 unknown
	// Owner names the process that runs the job (so another process can
	// tell a running job from a lost one); its form is the runner's.
	Owner     string
	StartedAt time.Time
	EndedAt   time.Time // zero while running
	// OutputBytes is how many output bytes the job produced so far;
	// ReadOffset how many of them job_output has returned.
	OutputBytes int64
	ReadOffset  int64
	Log         string          // payload name of the job's full output
	Detail      json.RawMessage // the runner's own data, kept as is; may be nil
}

// Jobs is an optional interface of a [Store]: the background jobs, so a
// compacted context or a restarted process still finds them. A task's
// jobs are deleted with its records by [Pruner.PruneBefore].
type Jobs interface {
	// PutJob inserts a job or replaces the one with the same JobID,
	// atomically; a PutJob that returned nil survives the process being
	// killed.
	PutJob(ctx context.Context, j *Job) error
	// GetJob returns the job, or an error wrapping ErrNoJob.
	GetJob(ctx context.Context, jobID string) (*Job, error)
	// ListJobs returns the jobs of a task ("" means every task), oldest
	// StartedAt first.
	ListJobs(ctx context.Context, taskID string) ([]*Job, error)
}

// MaxPayloadName is the longest payload name in bytes.
const MaxPayloadName = 1024

// CheckPayloadName returns nil when name is a valid payload name (see
// [Payloads]: a slash-separated relative path of at most
// [MaxPayloadName] bytes, no "." or ".." element, no empty element, no
// NUL), else an error naming the rule it breaks. Backends call it before
// any write or read.
func CheckPayloadName(name string) error {
	switch {
	case name == "":
		return errors.New("payload name is empty")
	case len(name) > MaxPayloadName:
		return fmt.Errorf("payload name is %d bytes, longer than %d", len(name), MaxPayloadName)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("payload name %q holds a NUL byte", name)
	}
	for elem := range strings.SplitSeq(name, "/") {
		switch elem {
		case "":
			return fmt.Errorf("payload name %q has an empty element (leading, trailing or double slash)", name)
		case ".", "..":
			return fmt.Errorf("payload name %q has a %q element", name, elem)
		}
	}
	return nil
}

// OutputPayloadName is the payload name of a call's full command output,
// "outputs/<toolCallId>.log", the id path-escaped (so a '/' or a ".."
// in an id cannot form another name).
func OutputPayloadName(toolCallID string) string {
	return "outputs/" + url.PathEscape(toolCallID) + ".log"
}
