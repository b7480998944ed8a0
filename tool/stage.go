package tool

import (
	"errors"
	"fmt"
	"strings"
)

// Stage is the lifecycle stage a failure is attributed to (seed:
// "A successful response still requires effect verification"). The wire form
// is the lowercase word, for example "authorization".
type Stage string

// The six stages of the seed's lifecycle table.
const (
	// Discovery: a capability exists but was not activated (unknown or
	// deferred tool name). Next step: tool_search, or a better description.
	Discovery Stage = "discovery"
	// Parameters: the input lost fidelity between intent and schema (schema
	// violation, no edit match, malformed path). Next step: fix the input.
	Parameters Stage = "parameters"
	// Authorization: the workspace, user or host does not permit the effect
	// (path outside the workspace, a denied action). Next step: stay in scope.
	Authorization Stage = "authorization"
	// Execution: timeout, cancellation, missing dependency or a partially
	// applied effect. Next step: inspect state before any retry.
	Execution Stage = "execution"
	// Projection: raw output exists but a cut removed evidence. Next step:
	// fetch the rest through the named handle.
	Projection Stage = "projection"
	// Verification: the call completed but the state misses the objective
	// (a file changed since it was read, a hash that does not match).
	Verification Stage = "verification"
)

// Stages lists every stage in lifecycle order.
var Stages = []Stage{Discovery, Parameters, Authorization, Execution, Projection, Verification}

// Title is the capitalised name used in messages, for example "Authorization".
func (s Stage) Title() string {
	if s == "" {
		return "Execution"
	}
	return strings.ToUpper(string(s[:1])) + string(s[1:])
}

// Error is a tool failure attributed to a stage. Handlers return it (directly
// or wrapped with %w) to choose the stage and the next step shown to the
// model; any other error a handler returns is attributed to [Execution].
//
// Its message has the shape "<Stage> error in <tool>: <msg> (next: <hint>)".
type Error struct {
	Stage Stage  // where the failure happened
	Tool  string // tool name; filled in by [Tool.Call] when empty
	Msg   string // what went wrong, one sentence, no trailing period needed
	Hint  string // what to do next; may be empty
	Err   error  // the underlying cause, for errors.Is/As; may be nil
}

// Errorf builds an *Error at stage with a formatted message. A %w verb in
// format sets Err, so errors.Is sees through it.
func Errorf(stage Stage, format string, args ...any) *Error {
	wrapped := fmt.Errorf(format, args...)
	return &Error{Stage: stage, Msg: wrapped.Error(), Err: errors.Unwrap(wrapped)}
}

// WithHint returns e with its next step set, for chaining.
func (e *Error) WithHint(hint string) *Error {
	e.Hint = hint
	return e
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Stage.Title())
	b.WriteString(" error")
	if e.Tool != "" {
		b.WriteString(" in ")
		b.WriteString(e.Tool)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString(" (next: ")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// StageOf reports the stage of err: the Stage of the first *Error in its
// chain, or Execution when there is none.
func StageOf(err error) Stage {
	var te *Error
	if errors.As(err, &te) && te.Stage != "" {
		return te.Stage
	}
	return Execution
}
