package provider_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
	"github.com/aibuddy/aibuddy/provider/chatmodel"
	"github.com/aibuddy/aibuddy/provider/openaimodel"
)

// Minimal successful streams in each API's wire format.
const (
	anthropicText = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	responsesText = "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"ok\",\"annotations\":[]}]}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1741290958,\"status\":\"completed\",\"error\":null,\"incomplete_details\":null,\"instructions\":null,\"model\":\"gpt-5\",\"output\":[],\"parallel_tool_calls\":true,\"tool_choice\":\"auto\",\"tools\":[],\"usage\":{\"input_tokens\":5,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":1,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":6}}}\n\n"
	chatText = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
)

// TestEmptyToolSetLeavesToolFieldsOut is case BH-095 for all three
// adapters (and the Gemini dialect): with no tools, or only deferred ones
// on the activeTools path, the request carries no tools array and none of
// the related fields (tool_choice, parallel_tool_calls, tool config); the
// run is allowed, and ExplainSchemas reports nothing to send.
func TestEmptyToolSetLeavesToolFieldsOut(t *testing.T) {
	deferred := []provider.Tool{{Name: "mcp_a", Deferred: true, InputSchema: json.RawMessage(`{"type":"object"}`)}}
	zero := 0
	for _, c := range []struct {
		name   string
		stream string
		model  func(url string, c *http.Client) provider.Model
	}{
		{"anthropic", anthropicText, func(u string, c *http.Client) provider.Model {
			return anthropicmodel.New(anthropicmodel.Options{APIKey: "k", BaseURL: u, HTTPClient: c, MaxRetries: -1, Strategy: provider.ActiveTools})
		}},
		{"openai responses", responsesText, func(u string, c *http.Client) provider.Model {
			return openaimodel.New(openaimodel.Options{APIKey: "k", BaseURL: u + "/v1/", Model: "gpt-5", HTTPClient: c, MaxRetries: &zero, Strategy: provider.ActiveTools})
		}},
		{"chat completions", chatText, func(u string, c *http.Client) provider.Model {
			return chatmodel.New(chatmodel.Options{APIKey: "k", BaseURL: u + "/v1/", Model: "m", HTTPClient: c, MaxRetries: &zero})
		}},
		{"chat completions gemini", chatText, func(u string, c *http.Client) provider.Model {
			return chatmodel.New(chatmodel.Options{APIKey: "k", BaseURL: u + "/v1/", Model: "m", HTTPClient: c, MaxRetries: &zero, Dialect: provider.DialectGemini})
		}},
	} {
		active := []provider.Tool{{Name: "ls", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
		for _, tools := range [][]provider.Tool{nil, {}, deferred, active} {
			var body []byte
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ = io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, c.stream)
			}))
			m := c.model(ts.URL, ts.Client())
			for _, err := range m.Stream(context.Background(), &provider.Request{Tools: tools,
				Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "hi"}}}}}) {
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
			ts.Close()
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(body, &fields); err != nil {
				t.Fatalf("%s: body %s: %v", c.name, body, err)
			}
			if len(tools) == 1 && !tools[0].Deferred {
				// The control: an active tool is sent, as one entry.
				var sent []json.RawMessage
				if err := json.Unmarshal(fields["tools"], &sent); err != nil || len(sent) != 1 {
					t.Errorf("%s: one active tool, tools field %s", c.name, fields["tools"])
				}
				continue
			}
			for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls", "tool_config", "toolConfig"} {
				if v, ok := fields[k]; ok {
					t.Errorf("%s with %d tool(s): request carries %s: %s", c.name, len(tools), k, v)
				}
			}
			if d := m.(provider.SchemaExplainer).ExplainSchemas(tools); len(d) != 0 {
				t.Errorf("%s: decisions %+v for an empty effective set", c.name, d)
			}
		}
	}
	if got := provider.NoToolsReason("all MCP tools deferred and tool_search disabled"); got != "no tools active: all MCP tools deferred and tool_search disabled (the request carries no tools field)" {
		t.Errorf("NoToolsReason = %q", got)
	}
}

func TestParseDialectSettings(t *testing.T) {
	for in, want := range map[string]provider.StrictMode{"": provider.StrictAuto, "AUTO": provider.StrictAuto, "exact": provider.StrictExact, " off ": provider.StrictOff} {
		if got, err := provider.ParseStrictMode(in); err != nil || got != want {
			t.Errorf("ParseStrictMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := provider.ParseStrictMode("yes"); err == nil {
		t.Error("ParseStrictMode(yes): no error")
	}
	for in, want := range map[string]provider.SchemaDialect{"": provider.DialectAuto, "Gemini": provider.DialectGemini, "openai": provider.DialectOpenAI} {
		if got, err := provider.ParseSchemaDialect(in); err != nil || got != want {
			t.Errorf("ParseSchemaDialect(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := provider.ParseSchemaDialect("vertex"); err == nil {
		t.Error("ParseSchemaDialect(vertex): no error")
	}
	for _, c := range []struct {
		d    provider.SchemaDialect
		url  string
		want provider.SchemaDialect
	}{
		{provider.DialectAuto, "https://generativelanguage.googleapis.com/v1beta/openai/", provider.DialectGemini},
		{"", "https://GenerativeLanguage.googleapis.com:443/v1beta/openai/", provider.DialectGemini},
		{provider.DialectAuto, "http://127.0.0.1:11434/v1/", provider.DialectOpenAI},
		{provider.DialectAuto, "", provider.DialectOpenAI},
		{provider.DialectGemini, "http://127.0.0.1:8080/v1/", provider.DialectGemini},
		{provider.DialectOpenAI, "https://generativelanguage.googleapis.com/v1beta/openai/", provider.DialectOpenAI},
	} {
		if got := provider.ResolveDialect(c.d, c.url); got != c.want {
			t.Errorf("ResolveDialect(%q, %q) = %q, want %q", c.d, c.url, got, c.want)
		}
	}
}
