package chatmodel

import (
	"encoding/json"

	"github.com/openai/openai-go/v3"

	"github.com/aibuddy/aibuddy/provider"
)

// accumulator assembles a streamed chat completion. Source: "The chat
// completion chunk object" (https://platform.openai.com/docs/api-reference/chat-streaming):
// choices[0].delta.content carries text; choices[0].delta.tool_calls
// carries calls by index, the first delta of a call with its id and
// function.name, later ones with function.arguments fragments;
// finish_reason ends the choice; with stream_options.include_usage a last
// chunk has empty choices and the usage.
type accumulator struct {
	newID  func() string
	text   []byte
	calls  []*call       // in order of first appearance
	byIdx  map[int64]int // index → position in calls
	reason string        // finish_reason
	usage  provider.Usage
}

type call struct {
	id, name string
	args     []byte
}

// add takes one chunk and returns the text events it carries.
func (a *accumulator) add(c openai.ChatCompletionChunk) []provider.Event {
	if c.JSON.Usage.Valid() && (c.Usage.PromptTokens != 0 || c.Usage.CompletionTokens != 0) {
		a.usage = provider.Usage{InputTokens: int(c.Usage.PromptTokens), OutputTokens: int(c.Usage.CompletionTokens)}
	}
	var out []provider.Event
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // n > 1 is never requested
		}
		if d := ch.Delta.Content; d != "" {
			a.text = append(a.text, d...)
			out = append(out, provider.Event{Kind: provider.EventText, Text: d})
		}
		for _, tc := range ch.Delta.ToolCalls {
			a.addCall(tc)
		}
		if ch.FinishReason != "" {
			a.reason = ch.FinishReason
		}
	}
	return out
}

// addCall merges one tool call delta. A delta that names a new id at an
// index already holding another call starts a new call (some servers send
// every call with index 0).
func (a *accumulator) addCall(tc openai.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.byIdx == nil {
		a.byIdx = map[int64]int{}
	}
	pos, ok := a.byIdx[tc.Index]
	if ok && tc.ID != "" && a.calls[pos].id != "" && tc.ID != a.calls[pos].id {
		ok = false
	}
	if !ok {
		a.calls = append(a.calls, &call{})
		pos = len(a.calls) - 1
		a.byIdx[tc.Index] = pos
	}
	cl := a.calls[pos]
	if tc.ID != "" {
		cl.id = tc.ID
	}
	if tc.Function.Name != "" {
		cl.name = tc.Function.Name
	}
	cl.args = append(cl.args, tc.Function.Arguments...)
}

// finish returns the tool use events and the done event.
func (a *accumulator) finish() ([]provider.Event, error) {
	if a.reason == "" {
		return nil, ErrIncomplete
	}
	msg := provider.Message{Role: provider.Assistant}
	if len(a.text) > 0 {
		msg.Blocks = append(msg.Blocks, provider.Block{Type: provider.Text, Text: string(a.text)})
	}
	var out []provider.Event
	for _, cl := range a.calls {
		id := cl.id
		if id == "" {
			id = a.newID()
		}
		b := provider.Block{Type: provider.ToolUse, ID: id, Name: cl.name, Input: input(cl.args)}
		msg.Blocks = append(msg.Blocks, b)
		out = append(out, provider.Event{Kind: provider.EventToolUse, Block: &b})
	}
	stop := "end_turn"
	switch a.reason {
	case "length":
		stop = "max_tokens"
	case "content_filter":
		stop = "refusal"
	}
	if len(a.calls) > 0 && a.reason != "length" { // some servers say "stop" after tool calls
		stop = "tool_use"
	}
	out = append(out, provider.Event{Kind: provider.EventDone, StopReason: stop, Usage: a.usage, Message: &msg})
	return out, nil
}

// input is the raw arguments object of a call. Arguments that are not
// valid JSON are kept as a JSON string, so the transcript stays valid JSON
// and schema validation rejects the call at the Parameters stage.
func input(args []byte) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(args) {
		return json.RawMessage(append([]byte(nil), args...))
	}
	b, _ := json.Marshal(string(args))
	return b
}
