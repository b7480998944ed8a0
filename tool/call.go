package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Call is one tool call as the execution plane sees it: the provider's
// tool_use (Anthropic) or function_call (OpenAI), or an MCP tools/call.
type Call struct {
	// ID is the stable toolCallId, unique across tasks (minted by
	// aibuddy: a model provider's ids are not unique in the wild); it keys
	// the durable record.
	ID string
	// ProviderID is the id the model provider gave this call (its
	// tool_use id / call_id), kept as data; "" when none (MCP hosts, the
	// CLI).
	ProviderID string
	// Name is the tool's wire name.
	Name string
	// Input is the raw JSON arguments object.
	Input json.RawMessage
	// Events receives transient client events (output chunks, progress,
	// heartbeats) while the call runs. May be nil. It must not block for
	// long: it is called from the tool's goroutines.
	Events func(Event)
}

// Emit sends e to the call's event sink, if any.
func (c *Call) Emit(e Event) {
	if c != nil && c.Events != nil {
		c.Events(e)
	}
}

// EventKind names a transient client event.
type EventKind string

// Transient client events. None of them ever enters the model's context
// (seed: "Heartbeats never enter model context").
const (
	EventStdout    EventKind = "stdout"    // a chunk of a command's standard output (Data)
	EventStderr    EventKind = "stderr"    // a chunk of a command's standard error (Data)
	EventProgress  EventKind = "progress"  // a progress message (Message, Progress/Total)
	EventHeartbeat EventKind = "heartbeat" // keeps the client's stream alive
)

// Event is a transient, client-only event of a running call.
type Event struct {
	Kind     EventKind
	Data     []byte  // raw bytes for stdout/stderr, owned by the receiver
	Message  string  // human-readable progress text
	Progress float64 // units done, when known
	Total    float64 // units in all, 0 when unknown
	Time     time.Time
}

// ContentType is the type of one content block of a result.
type ContentType string

// Content block types, as in MCP and the providers' tool_result blocks.
const (
	TextContent  ContentType = "text"
	ImageContent ContentType = "image"
)

// Content is one block of a tool result.
type Content struct {
	Type     ContentType
	Text     string // for text
	Data     []byte // raw bytes for image (not base64)
	MIMEType string // for image, e.g. "image/png"
}

// Result is the outcome of one call as handed to consumers.
type Result struct {
	// Content is what the model sees (already bounded by the tool).
	Content []Content
	// IsError marks a failed call; Stage says where it failed.
	IsError bool
	Stage   Stage
	// Evidence is machine-readable proof of the effect (bytes written and
	// a read-back hash, exit code, replacements made, truncation counts,
	// the Verification stage's outcome). Keys are snake_case
	// ([EvidenceKey]); values are JSON-encodable.
	Evidence Evidence
}

// Text returns a successful result with one text block.
func Text(s string) *Result {
	return &Result{Content: []Content{{Type: TextContent, Text: s}}}
}

// TextWith returns a successful text result carrying evidence.
func TextWith(s string, evidence Evidence) *Result {
	r := Text(s)
	r.Evidence = evidence
	return r
}

// ErrorResult turns err into an error Result for toolName. A *Error in the
// chain supplies the stage and hint; anything else is Execution.
func ErrorResult(err error, toolName string) *Result {
	var te *Error
	if !errors.As(err, &te) {
		te = &Error{Stage: Execution, Msg: err.Error(), Err: err}
	}
	cp := *te
	if cp.Tool == "" {
		cp.Tool = toolName
	}
	if cp.Stage == "" {
		cp.Stage = Execution
	}
	return &Result{
		Content: []Content{{Type: TextContent, Text: cp.Error()}},
		IsError: true,
		Stage:   cp.Stage,
	}
}

// AllText joins the text blocks of r, separated by newlines.
func (r *Result) AllText() string {
	if r == nil {
		return ""
	}
	s := ""
	for i, c := range r.Content {
		if c.Type != TextContent {
			s += fmt.Sprintf("[%s %s, %d bytes]", c.Type, c.MIMEType, len(c.Data))
		} else {
			s += c.Text
		}
		if i < len(r.Content)-1 {
			s += "\n"
		}
	}
	return s
}
