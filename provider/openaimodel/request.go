package openaimodel

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/aibuddy/aibuddy/provider"
)

// params builds the Responses API request body for req, and the restorer
// for the calls in its response.
func (m *Model) params(req *provider.Request) (responses.ResponseNewParams, restorer, error) {
	var p responses.ResponseNewParams
	p.Model = m.model
	if req.Model != "" {
		p.Model = req.Model
	}
	if p.Model == "" {
		return p, nil, fmt.Errorf("openaimodel: no model (Options.Model or Request.Model)")
	}
	if req.System != "" {
		p.Instructions = openai.String(req.System)
	}
	if n := req.MaxTokens; n > 0 {
		p.MaxOutputTokens = openai.Int(int64(n))
	} else if m.maxTok > 0 {
		p.MaxOutputTokens = openai.Int(int64(m.maxTok))
	}
	tools, restore, err := toolsFor(m.strategy, req.Tools, m.proj.project)
	if err != nil {
		return p, nil, err
	}
	for _, t := range tools {
		p.Tools = append(p.Tools, param.Override[responses.ToolUnionParam](t))
	}
	items, err := inputItems(provider.WireIDs(provider.Pair(req.Messages)), restore)
	if err != nil {
		return p, nil, err
	}
	list := make(responses.ResponseInputParam, 0, len(items))
	for _, it := range items {
		list = append(list, param.Override[responses.ResponseInputItemUnionParam](it))
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: list}
	return p, restore, nil
}

// functionTool is a Responses API function tool
// (https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools).
type functionTool struct {
	Type         string          `json:"type"` // "function"
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	Parameters   json.RawMessage `json:"parameters"`
	Strict       bool            `json:"strict"`
	DeferLoading bool            `json:"defer_loading,omitempty"`
}

// toolSearchTool is the hosted tool search tool. Source: OpenAI guide
// "Tool search" (https://developers.openai.com/api/docs/guides/tools-tool-search):
// "Add tool_search as a tool in your tools array" and "Mark the functions
// ... you want to make searchable with defer_loading: true". Without an
// "execution" field the search runs on OpenAI's side (the default,
// "server"); its tool_search_call / tool_search_output items come back in
// the output and are kept as opaque blocks.
var toolSearchTool = json.RawMessage(`{"type":"tool_search"}`)

// toolsFor presents tools for strategy. This is the one place where the
// strategy changes the request:
//
//   - provider.Native: one stable array: {"type":"tool_search"} first
//     (only when some tool is deferred), then every tool in the given
//     order, deferred ones with "defer_loading": true.
//   - provider.ActiveTools: only the non-deferred tools, no tool_search.
//
// project gives each tool's parameters and strictness; the restorer
// returned lists the tools sent strict.
func toolsFor(strategy provider.Strategy, tools []provider.Tool, project func(string, json.RawMessage) (json.RawMessage, bool, error)) ([]json.RawMessage, restorer, error) {
	var out []json.RawMessage
	restore := restorer{}
	native := strategy == provider.Native
	if native {
		for _, t := range tools {
			if t.Deferred {
				out = append(out, toolSearchTool)
				break
			}
		}
	}
	for _, t := range tools {
		if t.Deferred && !native {
			continue
		}
		params, strict, err := project(t.Name, t.InputSchema)
		if err != nil {
			return nil, nil, err
		}
		if strict {
			restore[t.Name] = t.InputSchema
		}
		b, err := json.Marshal(functionTool{Type: "function", Name: t.Name, Description: t.Description,
			Parameters: params, Strict: strict, DeferLoading: native && t.Deferred})
		if err != nil {
			return nil, nil, fmt.Errorf("openaimodel: tool %q: %w", t.Name, err)
		}
		out = append(out, b)
	}
	return out, restore, nil
}

// emptySchema stands for a tool without an input schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// Input items of the Responses API
// (https://platform.openai.com/docs/api-reference/responses/create#responses-create-input).
type (
	easyMessage struct {
		Role    string `json:"role"`
		Content any    `json:"content"` // string or []contentPart
	}
	contentPart struct {
		Type     string `json:"type"` // input_text, input_image
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	functionCall struct {
		Type      string `json:"type"` // function_call
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	functionCallOutput struct {
		Type   string `json:"type"` // function_call_output
		CallID string `json:"call_id"`
		Output any    `json:"output"` // string or []contentPart
	}
)

// errorPrefix marks the output of a failed call: function_call_output has
// no error flag.
const errorPrefix = "[tool error] "

// inputItems maps a paired transcript to input items, in order.
//
//   - user Text / Image → one {"role":"user","content":[input_text|input_image]}
//     message per run of such blocks (a single text is sent as a string);
//   - assistant Text → {"role":"assistant","content":"..."}, or the
//     original output message item verbatim when the block still holds it
//     unchanged (Provider "openai", Raw);
//   - ToolUse → function_call {call_id: ID, name, arguments}; the original
//     item verbatim when unchanged (it carries the item id that ties it to a
//     preceding reasoning item);
//   - ToolResult → function_call_output {call_id, output}: the text, or an
//     array of input_text / input_image parts when it holds images;
//     IsError prefixes the text with errorPrefix;
//   - Opaque from "openai" → Raw verbatim; from other providers, dropped.
func inputItems(msgs []provider.Message, restore restorer) ([]json.RawMessage, error) {
	var out []json.RawMessage
	add := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("openaimodel: input item: %w", err)
		}
		out = append(out, b)
		return nil
	}
	for _, m := range msgs {
		var parts []contentPart // pending user content
		flush := func() error {
			if len(parts) == 0 {
				return nil
			}
			var content any = parts
			if len(parts) == 1 && parts[0].Type == "input_text" {
				content = parts[0].Text
			}
			parts = nil
			return add(easyMessage{Role: "user", Content: content})
		}
		for _, b := range m.Blocks {
			var err error
			switch {
			case b.Type == provider.Text && m.Role == provider.User:
				parts = append(parts, contentPart{Type: "input_text", Text: b.Text})
			case b.Type == provider.Image && m.Role == provider.User:
				parts = append(parts, imagePart(b))
			case b.Type == provider.Text:
				if err = flush(); err == nil {
					if raw := sameMessage(b); raw != nil {
						out = append(out, raw)
					} else {
						err = add(easyMessage{Role: "assistant", Content: b.Text})
					}
				}
			case b.Type == provider.ToolUse:
				if err = flush(); err == nil {
					if raw := sameCall(b, restore); raw != nil {
						out = append(out, raw)
					} else {
						err = add(functionCall{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: arguments(b.Input)})
					}
				}
			case b.Type == provider.ToolResult:
				if err = flush(); err == nil {
					err = add(functionCallOutput{Type: "function_call_output", CallID: b.ToolUseID, Output: resultOutput(b)})
				}
			case b.Type == provider.Opaque:
				if b.Provider == ProviderName && json.Valid(b.Raw) {
					if err = flush(); err == nil {
						out = append(out, append(json.RawMessage(nil), b.Raw...))
					}
				}
			case b.Type == provider.Image:
				// An assistant image has no input form; dropped.
			}
			if err != nil {
				return nil, err
			}
		}
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// imagePart is an input_image with the bytes inline as a data URL.
func imagePart(b provider.Block) contentPart {
	return contentPart{Type: "input_image", ImageURL: "data:" + b.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)}
}

// resultOutput is the output of a function_call_output: a string, or
// input_text / input_image parts when the result holds an image.
func resultOutput(b provider.Block) any {
	var text string
	var parts []contentPart
	hasImage := false
	for _, c := range b.Content {
		switch c.Type {
		case provider.Text:
			if text != "" {
				text += "\n"
			}
			text += c.Text
			parts = append(parts, contentPart{Type: "input_text", Text: c.Text})
		case provider.Image:
			hasImage = true
			parts = append(parts, imagePart(c))
		}
	}
	if b.IsError {
		text = errorPrefix + text
		parts = append([]contentPart{{Type: "input_text", Text: errorPrefix}}, parts...)
	}
	if hasImage {
		return parts
	}
	return text
}

// arguments is the function_call arguments string for input ("{}" when
// empty).
func arguments(input json.RawMessage) string {
	if len(bytes.TrimSpace(input)) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, input); err != nil {
		return string(input)
	}
	return buf.String()
}

// sameCall returns b's original function_call item when b still matches
// it (same call id, name and arguments, the item's arguments read as
// block does), else nil.
func sameCall(b provider.Block, restore restorer) json.RawMessage {
	if b.Provider != ProviderName || len(b.Raw) == 0 {
		return nil
	}
	var it struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	if json.Unmarshal(b.Raw, &it) != nil || it.Type != "function_call" {
		return nil
	}
	if it.CallID != b.ID || it.Name != b.Name || arguments(restore.args(it.Name, input(it.Arguments))) != arguments(b.Input) {
		return nil
	}
	return append(json.RawMessage(nil), b.Raw...)
}

// sameMessage returns b's original output message item when its text is
// still b.Text, else nil.
func sameMessage(b provider.Block) json.RawMessage {
	if b.Provider != ProviderName || len(b.Raw) == 0 {
		return nil
	}
	text, ok := messageText(b.Raw)
	if !ok || text != b.Text {
		return nil
	}
	return append(json.RawMessage(nil), b.Raw...)
}

// messageText is the text of an output message item: its output_text and
// refusal parts joined.
func messageText(raw json.RawMessage) (string, bool) {
	var it struct {
		Type    string `json:"type"`
		Content []struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &it) != nil || it.Type != "message" {
		return "", false
	}
	var text string
	for _, c := range it.Content {
		switch c.Type {
		case "output_text":
			text += c.Text
		case "refusal":
			text += c.Refusal
		}
	}
	return text, true
}
