package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/internal/cli"
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
