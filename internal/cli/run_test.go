package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/skills"
	"github.com/aibuddy/aibuddy/tool"
)

// chatSSE builds a chat completions stream the way the API sends it
// ("data: <chunk>" per chunk, then "data: [DONE]"; API reference, "The chat
// completion chunk object").
func chatSSE(choices ...string) string {
	var b strings.Builder
	for _, c := range choices {
		b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"local","choices":[` + c + `]}` + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// TestRunEndToEndOverChatCompletions: `aibuddy run` against a chat
// completions endpoint (an httptest server replaying the wire format): the
// model writes a file through write_file, reads the result, and finishes;
// the file is on disk and the call is in the records.
func TestRunEndToEndOverChatCompletions(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	replies := []string{
		chatSSE(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write_file","arguments":""}}]},"finish_reason":null}`,
			`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"hello.txt\",\"content\":\"hi from the model\\n\"}"}}]},"finish_reason":null}`,
			`{"index":0,"delta":{},"finish_reason":"tool_calls"}`),
		chatSSE(`{"index":0,"delta":{"role":"assistant","content":"Wrote hello.txt."},"finish_reason":null}`,
			`{"index":0,"delta":{},"finish_reason":"stop"}`),
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, string(b))
		mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || n >= len(replies) {
			http.Error(w, `{"error":{"message":"unexpected request"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, replies[n])
	}))
	defer ts.Close()
	t.Setenv("OPENAI_API_KEY", "test-key")
	ws, data := t.TempDir(), t.TempDir()
	code, out, errs := runCLI(t, cli.Options{}, "run", "--provider", "openai-chat", "--model", "local",
		"--base-url", ts.URL+"/v1", "--workspace", ws, "--data-dir", data, "write hello.txt")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hi from the model\n" {
		t.Errorf("hello.txt: %q %v", b, err)
	}
	if !strings.Contains(out+errs, "Wrote hello.txt.") {
		t.Errorf("the model's final text is not shown:\n%s\n%s", out, errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	var second struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(bodies[1]), &second); err != nil {
		t.Fatal(err)
	}
	var toolMsgs int
	for _, m := range second.Messages {
		if m.Role == "tool" {
			toolMsgs++
			if m.ToolCallID != "call_1" {
				t.Errorf("tool result answers %q, want call_1", m.ToolCallID)
			}
		}
	}
	if toolMsgs != 1 {
		t.Errorf("%d tool messages in the second request, want exactly 1: %s", toolMsgs, bodies[1])
	}
	code, out, _ = runCLI(t, cli.Options{}, "calls", "list", "--json", "--data-dir", data)
	if code != 0 || !strings.Contains(out, `"calls": 1`) || !strings.Contains(out, `"failuresByStage": {}`) {
		t.Errorf("calls list: %d %s", code, out)
	}
}

// responsesSSE is one Responses API stream answering with text only
// (event names and shapes from the API reference's streaming examples).
func responsesSSE(text string) string {
	resp := func(status, output string) string {
		return `{"id":"resp_1","object":"response","created_at":1741290958,"status":"` + status + `","error":null,"incomplete_details":null,"instructions":null,"model":"gpt-5","output":[` + output + `],"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":0},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":150}}`
	}
	item := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":` + strconv.Quote(text) + `,"annotations":[]}]}`
	events := []string{
		`{"type":"response.created","sequence_number":0,"response":` + resp("in_progress", "") + `}`,
		`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":` + strconv.Quote(text) + `}`,
		`{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":` + item + `}`,
		`{"type":"response.completed","sequence_number":4,"response":` + resp("completed", item) + `}`,
	}
	var b strings.Builder
	for _, e := range events {
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(e), &head)
		b.WriteString("event: " + head.Type + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

// TestRunOpenAILogsSchemaLoss: `aibuddy run --provider openai` hands its
// logger to the model, so a tool schema projected with loss (case BH-031:
// a root-level allOf with if/then) is a warning on stderr naming the tool
// ("<server>__<tool>"), not discarded.
func TestRunOpenAILogsSchemaLoss(t *testing.T) {
	const resizeSchema = `{"type":"object","properties":{"mode":{"type":"string","enum":["quick","full"]},"size":{"type":"integer"}},
	 "required":["mode"],"allOf":[{"if":{"properties":{"mode":{"const":"quick"}}},"then":{"properties":{"size":{"maximum":64}}}}]}`
	resize := tool.MustDefine(tool.Spec{Name: "shapes__resize", Description: "Resize a shape.", InputSchema: json.RawMessage(resizeSchema),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("resized"), nil }})
	reg := func(*config.Config, string, *skills.Catalog) *registry.Registry {
		return registry.New([]registry.Group{{Key: "shapes", Names: []string{"shapes__resize"},
			Build: func(registry.Env) ([]*tool.Tool, error) { return []*tool.Tool{resize}, nil }}},
			[]registry.Meta{{Key: "shapes"}}, nil)
	}
	var mu sync.Mutex
	var bodies []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if r.URL.Path != "/v1/responses" {
			http.Error(w, `{"error":{"message":"unexpected request"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, responsesSSE("Nothing to resize."))
	}))
	defer ts.Close()
	t.Setenv("OPENAI_API_KEY", "test-key")
	ws, data := t.TempDir(), t.TempDir()
	code, out, errs := runCLI(t, cli.Options{Registry: reg}, "run", "--provider", "openai", "--model", "gpt-5",
		"--base-url", ts.URL+"/v1", "--workspace", ws, "--data-dir", data, "resize the square")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 || !strings.Contains(bodies[0], "shapes__resize") {
		t.Fatalf("the request does not carry the tool: %v", bodies)
	}
	var warned bool
	for _, line := range strings.Split(errs, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "projected with loss") &&
			strings.Contains(line, "tool=shapes__resize") && strings.Contains(line, "if/then/else") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no schema-loss warning naming shapes__resize on stderr:\n%s", errs)
	}
}
