package openaimodel

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/openai/openai-go/v3/responses"

	"github.com/aibuddy/aibuddy/provider"
)

// accumulator turns Responses API stream events into provider events.
// Source: "Streaming events" in the API reference
// (https://platform.openai.com/docs/api-reference/responses-streaming):
// response.created, response.output_item.added,
// response.output_text.delta, response.function_call_arguments.delta /
// .done, response.output_item.done, then response.completed (or
// response.incomplete, response.failed, error).
type accumulator struct {
	restore restorer                  // the request's strict tools
	items   map[int64]json.RawMessage // output_index → finished item, verbatim
}

// add handles one event; done reports that the response ended.
func (a *accumulator) add(ev responses.ResponseStreamEventUnion) (out []provider.Event, done bool, err error) {
	switch ev.Type {
	case "response.output_text.delta":
		if ev.Delta != "" {
			out = append(out, provider.Event{Kind: provider.EventText, Text: ev.Delta})
		}
	case "response.output_item.done":
		raw := json.RawMessage(ev.Item.RawJSON())
		if a.items == nil {
			a.items = map[int64]json.RawMessage{}
		}
		a.items[ev.OutputIndex] = raw
		if ev.Item.Type == "function_call" {
			b := block(raw, a.restore)
			out = append(out, provider.Event{Kind: provider.EventToolUse, Block: &b})
		}
	case "response.completed", "response.incomplete":
		r := ev.Response
		raws := make([]json.RawMessage, 0, len(r.Output))
		for _, it := range r.Output {
			raws = append(raws, json.RawMessage(it.RawJSON()))
		}
		if len(raws) == 0 { // some servers send the output only item by item
			idx := make([]int64, 0, len(a.items))
			for i := range a.items {
				idx = append(idx, i)
			}
			sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
			for _, i := range idx {
				raws = append(raws, a.items[i])
			}
		}
		msg := provider.Message{Role: provider.Assistant}
		stop := "end_turn"
		for _, raw := range raws {
			b := block(raw, a.restore)
			if b.Type == provider.ToolUse {
				stop = "tool_use"
			}
			msg.Blocks = append(msg.Blocks, b)
		}
		if ev.Type == "response.incomplete" {
			switch r.IncompleteDetails.Reason {
			case "content_filter":
				stop = "refusal"
			default: // max_output_tokens
				stop = "max_tokens"
			}
		}
		out = append(out, provider.Event{Kind: provider.EventDone, StopReason: stop, Message: &msg,
			Usage: provider.Usage{InputTokens: int(r.Usage.InputTokens), OutputTokens: int(r.Usage.OutputTokens)}})
		return out, true, nil
	case "response.failed":
		return nil, true, fmt.Errorf("%w: %s: %s", ErrResponse, ev.Response.Error.Code, ev.Response.Error.Message)
	case "error":
		return nil, true, fmt.Errorf("%w: %s: %s", ErrResponse, ev.Code, ev.Message)
	}
	return out, false, nil
}

// block maps one output item to a transcript block:
//
//   - message → Text (output_text and refusal parts joined);
//   - function_call → ToolUse {ID: call_id, Name, Input: arguments};
//   - anything else (reasoning, tool_search_call, tool_search_output, ...)
//     → Opaque.
//
// Every block keeps the item verbatim in Raw with Provider "openai", so an
// unchanged message or call goes back with its item id (which ties it to
// the reasoning item before it). A call of a tool sent strict has the
// nulls strict mode added for optional properties removed
// (toolschema.RestoreOptional), so Input meets the full schema.
func block(raw json.RawMessage, restore restorer) provider.Block {
	raw = append(json.RawMessage(nil), raw...)
	var it struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	_ = json.Unmarshal(raw, &it)
	switch it.Type {
	case "message":
		text, _ := messageText(raw)
		return provider.Block{Type: provider.Text, Text: text, Provider: ProviderName, Raw: raw}
	case "function_call":
		return provider.Block{Type: provider.ToolUse, ID: it.CallID, Name: it.Name, Input: restore.args(it.Name, input(it.Arguments)), Provider: ProviderName, Raw: raw}
	}
	return provider.Block{Type: provider.Opaque, Provider: ProviderName, Raw: raw}
}

// input is the raw arguments object of a call. Arguments that are not
// valid JSON are kept as a JSON string, so the transcript stays valid JSON
// and schema validation rejects the call at the Parameters stage.
func input(args string) json.RawMessage {
	if args == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}
