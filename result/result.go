package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// Wire is the JSON shape of a tool result in a record: store.Record.Output
// holds the whole result (with evidence), store.Record.Model the model
// projection (content, isError and stage only). Image data is base64 (the
// encoding/json form of []byte).
type Wire struct {
	Content  []WireContent `json:"content"`
	IsError  bool          `json:"isError,omitempty"`
	Stage    string        `json:"stage,omitempty"`
	Evidence tool.Evidence `json:"evidence,omitempty"`
}

// WireContent is one content block of a [Wire] result.
type WireContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     []byte `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
}

// ToWire converts a tool result; a nil result is an empty success.
func ToWire(res *tool.Result) Wire {
	w := Wire{Content: []WireContent{}}
	if res == nil {
		return w
	}
	for _, c := range res.Content {
		w.Content = append(w.Content, WireContent{Type: string(c.Type), Text: c.Text, Data: c.Data, MIMEType: c.MIMEType})
	}
	w.IsError = res.IsError
	w.Stage = string(res.Stage)
	w.Evidence = res.Evidence
	return w
}

// Result converts back to a tool result.
func (w Wire) Result() *tool.Result {
	r := &tool.Result{IsError: w.IsError, Stage: tool.Stage(w.Stage), Evidence: w.Evidence}
	for _, c := range w.Content {
		r.Content = append(r.Content, tool.Content{Type: tool.ContentType(c.Type), Text: c.Text, Data: c.Data, MIMEType: c.MIMEType})
	}
	return r
}

// Text joins the text blocks (images as "[image MIME, N bytes]"), as
// tool.Result.AllText does.
func (w Wire) Text() string { return w.Result().AllText() }

// EncodeOutput is the raw output of a record: the whole result as JSON.
func EncodeOutput(res *tool.Result) json.RawMessage {
	return marshal(ToWire(res))
}

// EncodeModel is the initial model projection of a record: the result's
// content, isError and stage as JSON, without evidence.
func EncodeModel(res *tool.Result) json.RawMessage {
	w := ToWire(res)
	w.Evidence = nil
	return marshal(w)
}

func marshal(w Wire) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		// Evidence that does not encode (a channel, a func): keep the rest.
		w.Evidence = tool.Evidence{tool.EvidenceError: err.Error()}
		buf.Reset()
		_ = enc.Encode(w)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// Decode parses a record's Output or Model. Empty input (a running
// record) is an empty result.
func Decode(raw json.RawMessage) (Wire, error) {
	var w Wire
	if len(bytes.TrimSpace(raw)) == 0 {
		return w, nil
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return w, fmt.Errorf("result: decode record result: %w", err)
	}
	return w, nil
}

// Status is a call's state as the client shows it.
type Status string

// Statuses.
const (
	StatusRunning   Status = "running"
	StatusOK        Status = "ok"
	StatusError     Status = "error"
	StatusCancelled Status = "cancelled"
	// StatusInterrupted: the call's process ended while it ran (a later
	// start found it so, at InterruptedAt).
	StatusInterrupted Status = "interrupted"
)

// Client is the client projection of a call: display fields and the
// complete output (seed: "Display-oriented fields, transient progress, and
// complete streamed output"). Progress itself travels as tool.Event values
// through the call's Events sink while it runs.
type Client struct {
	ToolCallID string `json:"toolCallId"`
	// ProviderCallID is the model provider's own id of the call, when it
	// came from a model (it may repeat across calls).
	ProviderCallID string        `json:"providerCallId,omitempty"`
	TaskID         string        `json:"taskId,omitempty"`
	Tool           string        `json:"tool"`
	Target         string        `json:"target,omitempty"` // what the call acts on: path, command, pattern, url...
	Status         Status        `json:"status"`
	Stage          string        `json:"stage,omitempty"` // failure stage of an error
	StartedAt      time.Time     `json:"startedAt"`
	EndedAt        time.Time     `json:"endedAt,omitzero"`
	Duration       time.Duration `json:"durationNs,omitempty"`
	Output         string        `json:"output,omitempty"` // the whole output text, never compacted
	Compaction     string        `json:"compaction,omitempty"`
	// InterruptedAt is when the call was found interrupted (Status
	// interrupted), else zero.
	InterruptedAt time.Time `json:"interruptedAt,omitzero"`
}

// ClientOf is the client projection of a record.
func ClientOf(rec *store.Record) Client {
	c := Client{
		ToolCallID: rec.ToolCallID, ProviderCallID: rec.ProviderCallID, TaskID: rec.TaskID, Tool: rec.Tool,
		Target: Target(rec.Input), Stage: rec.Stage,
		StartedAt: rec.StartedAt, EndedAt: rec.EndedAt, Compaction: string(rec.Compaction),
		InterruptedAt: rec.InterruptedAt,
	}
	switch rec.Outcome {
	case store.OutcomeOK:
		c.Status = StatusOK
	case store.OutcomeError:
		c.Status = StatusError
	case store.OutcomeCancelled:
		c.Status = StatusCancelled
	case store.OutcomeInterrupted:
		c.Status = StatusInterrupted
	default:
		c.Status = StatusRunning
	}
	if !rec.EndedAt.IsZero() {
		c.Duration = rec.EndedAt.Sub(rec.StartedAt)
	}
	if w, err := Decode(rec.Output); err == nil {
		c.Output = w.Text()
	}
	return c
}

// Model is the model projection of a call: the tool's name and compact
// input, and the text later model steps see.
type Model struct {
	ToolCallID string          `json:"toolCallId"`
	Tool       string          `json:"tool"`
	Input      json.RawMessage `json:"input"`
	Text       string          `json:"text"`
	IsError    bool            `json:"isError,omitempty"`
	// Content holds every block (text and images) of the model form; Text
	// joins its text.
	Content []tool.Content `json:"-"`
}

// ModelOf is the model form of a record: its Model (whole, or compacted),
// or the output when the record has no model form yet. What a model is
// handed is this bounded by [Bound] unless compacted ([Pair] does so).
func ModelOf(rec *store.Record) (Model, error) {
	raw := rec.Model
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = rec.Output
	}
	w, err := Decode(raw)
	if err != nil {
		return Model{}, err
	}
	r := w.Result()
	return Model{ToolCallID: rec.ToolCallID, Tool: rec.Tool, Input: rec.Input,
		Text: r.AllText(), IsError: r.IsError, Content: r.Content}, nil
}

// targetKeys are the input fields that name what a call acts on, in order
// of preference.
var targetKeys = []string{"command", "path", "file_path", "url", "pattern", "query", "id", "toolCallId", "name"}

// Target is the display target of a call: the first string field of the
// input among command, path, file_path, url, pattern, query, id,
// toolCallId, name; cut to 200 characters. "" when none.
func Target(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range targetKeys {
		if s, ok := m[k].(string); ok && s != "" {
			if r := []rune(s); len(r) > 200 {
				s = string(r[:200]) + "…"
			}
			return strings.ReplaceAll(s, "\n", " ")
		}
	}
	return ""
}
