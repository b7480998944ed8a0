package chatmodel

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/aibuddy/aibuddy/provider"
)

// params builds the chat completions request body for req
// (https://platform.openai.com/docs/api-reference/chat/create).
func (m *Model) params(req *provider.Request) (openai.ChatCompletionNewParams, error) {
	var p openai.ChatCompletionNewParams
	p.Model = m.model
	if req.Model != "" {
		p.Model = req.Model
	}
	if p.Model == "" {
		return p, fmt.Errorf("chatmodel: no model (Options.Model or Request.Model)")
	}
	if n := req.MaxTokens; n > 0 {
		p.MaxTokens = openai.Int(int64(n))
	} else if m.maxTok > 0 {
		p.MaxTokens = openai.Int(int64(m.maxTok))
	}
	if !m.noUsage {
		p.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	for _, t := range req.Tools {
		if t.Deferred {
			continue // activeTools path: deferred tools are never sent
		}
		params, err := m.proj.project(t.Name, t.InputSchema)
		if err != nil {
			return p, err
		}
		b, err := json.Marshal(functionTool{Type: "function", Function: function{Name: t.Name, Description: t.Description, Parameters: params}})
		if err != nil {
			return p, fmt.Errorf("chatmodel: tool %q: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, param.Override[openai.ChatCompletionToolUnionParam](json.RawMessage(b)))
	}
	msgs, err := messages(req.System, provider.WireIDs(provider.Pair(req.Messages)))
	if err != nil {
		return p, err
	}
	for _, b := range msgs {
		p.Messages = append(p.Messages, param.Override[openai.ChatCompletionMessageParamUnion](b))
	}
	return p, nil
}

// Wire shapes of the chat completions API.
type (
	functionTool struct {
		Type     string   `json:"type"` // "function"
		Function function `json:"function"`
	}
	function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"` // left out: no parameters (Gemini dialect)
	}
	message struct {
		Role       string     `json:"role"`
		Content    any        `json:"content"` // string, []part, or nil (assistant with tool_calls only)
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	part struct {
		Type     string    `json:"type"` // text, image_url
		Text     string    `json:"text,omitempty"`
		ImageURL *imageURL `json:"image_url,omitempty"`
	}
	imageURL struct {
		URL string `json:"url"`
	}
	toolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"` // "function"
		Function callFunction `json:"function"`
	}
	callFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
)

// errorPrefix marks the content of a failed call: tool messages have no
// error flag.
const errorPrefix = "[tool error] "

// messages maps the system prompt and a paired transcript to chat
// messages. Results come first in a user message after pairing, so the
// tool messages directly follow their assistant message.
func messages(system string, msgs []provider.Message) ([]json.RawMessage, error) {
	var out []json.RawMessage
	add := func(v message) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("chatmodel: message: %w", err)
		}
		out = append(out, b)
		return nil
	}
	if system != "" {
		if err := add(message{Role: "system", Content: system}); err != nil {
			return nil, err
		}
	}
	for _, m := range msgs {
		if m.Role == provider.Assistant {
			var text strings.Builder
			var calls []toolCall
			for _, b := range m.Blocks {
				switch b.Type {
				case provider.Text:
					text.WriteString(b.Text)
				case provider.ToolUse:
					calls = append(calls, toolCall{ID: b.ID, Type: "function", Function: callFunction{Name: b.Name, Arguments: arguments(b.Input)}})
				}
			}
			if text.Len() == 0 && len(calls) == 0 {
				continue
			}
			msg := message{Role: "assistant", ToolCalls: calls}
			if text.Len() > 0 {
				msg.Content = text.String()
			}
			if err := add(msg); err != nil {
				return nil, err
			}
			continue
		}
		var parts []part
		flush := func() error {
			if len(parts) == 0 {
				return nil
			}
			var content any = parts
			if len(parts) == 1 && parts[0].Type == "text" {
				content = parts[0].Text
			}
			parts = nil
			return add(message{Role: "user", Content: content})
		}
		for _, b := range m.Blocks {
			var err error
			switch b.Type {
			case provider.Text:
				parts = append(parts, part{Type: "text", Text: b.Text})
			case provider.Image:
				parts = append(parts, part{Type: "image_url", ImageURL: &imageURL{URL: dataURL(b)}})
			case provider.ToolResult:
				if err = flush(); err == nil {
					err = add(message{Role: "tool", ToolCallID: b.ToolUseID, Content: resultText(b)})
				}
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

func dataURL(b provider.Block) string {
	return "data:" + b.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)
}

// resultText is a tool message's content: the result's text, each image
// replaced by a note (tool messages carry text only), IsError marked with
// errorPrefix.
func resultText(b provider.Block) string {
	var parts []string
	for _, c := range b.Content {
		switch c.Type {
		case provider.Text:
			parts = append(parts, c.Text)
		case provider.Image:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown: this route's tool messages carry text only]", c.MIMEType, len(c.Data)))
		}
	}
	text := strings.Join(parts, "\n")
	if b.IsError {
		text = errorPrefix + text
	}
	return text
}

// arguments is the tool call arguments string for input ("{}" when empty).
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
