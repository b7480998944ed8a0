package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/result"
)

// call0 is a chat completions stream holding one tool call with the id
// "call_0", as some servers (local model runners) send on every turn.
func call0(command string) string {
	args, _ := json.Marshal(map[string]string{"command": command})
	return chatSSE(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"execute","arguments":""}}]},"finish_reason":null}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+string(mustJSON(string(args)))+`}}]},"finish_reason":null}`,
		`{"index":0,"delta":{},"finish_reason":"tool_calls"}`)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func chatText(text string) string {
	return chatSSE(`{"index":0,"delta":{"role":"assistant","content":`+string(mustJSON(text))+`},"finish_reason":null}`,
		`{"index":0,"delta":{},"finish_reason":"stop"}`)
}

// chatRequest is the part of a chat completions request the test reads.
type chatRequest struct {
	Messages []struct {
		Role      string `json:"role"`
		Content   any    `json:"content"`
		ToolCalls []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
}

// TestRepeatedProviderCallIDsKeepEveryExchange: a chat completions server
// that gives every tool call the id "call_0" (three turns in one task, one
// more in a second task). Every exchange stays in the context the server
// is sent, each tool message answering the call right before it under an
// id unique in the request; every call keeps its own record, in both
// tasks, under an id of aibuddy's with "call_0" kept as the provider's;
// calls show and view_tool_call find each by that id.
func TestRepeatedProviderCallIDsKeepEveryExchange(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	replies := []string{
		call0("echo one"), call0("echo two"), call0("echo three"), chatText("done with one"),
		call0("echo four"), chatText("done with two"),
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
	for _, task := range []string{"task one", "task two"} {
		code, out, errs := runCLI(t, cli.Options{}, "run", "--provider", "openai-chat", "--model", "local",
			"--base-url", ts.URL+"/v1", "--workspace", ws, "--data-dir", data, task)
		if code != 0 {
			t.Fatalf("%s: exit %d\nstdout %s\nstderr %s", task, code, out, errs)
		}
	}

	// The fourth request (after three call_0 turns) holds all three
	// exchanges, in order, each result right after its call.
	mu.Lock()
	if len(bodies) != len(replies) {
		t.Fatalf("%d requests, want %d", len(bodies), len(replies))
	}
	var req chatRequest
	if err := json.Unmarshal([]byte(bodies[3]), &req); err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	var wireIDs, outputs []string
	for i, m := range req.Messages {
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		id := m.ToolCalls[0].ID
		wireIDs = append(wireIDs, id)
		if i+1 >= len(req.Messages) || req.Messages[i+1].Role != "tool" || req.Messages[i+1].ToolCallID != id {
			t.Errorf("the call %s at message %d is not answered by the next message", id, i)
			continue
		}
		outputs = append(outputs, fmt.Sprint(req.Messages[i+1].Content))
	}
	if len(wireIDs) != 3 || len(outputs) != 3 {
		t.Fatalf("the request after three call_0 turns holds %d calls and %d results, want 3 and 3:\n%s", len(wireIDs), len(outputs), bodies[3])
	}
	if wireIDs[0] != "call_0" || wireIDs[1] == wireIDs[0] || wireIDs[2] == wireIDs[0] || wireIDs[1] == wireIDs[2] {
		t.Errorf("call ids sent back %v: want the provider's call_0 first, then ids unique in the request", wireIDs)
	}
	for i, want := range []string{"one", "two", "three"} {
		if !strings.Contains(outputs[i], want) {
			t.Errorf("result %d is %q, want the output of echo %s", i+1, outputs[i], want)
		}
	}

	// Records: two tasks, 3 + 1 calls, each its own id, call_0 kept.
	code, out, _ := runCLI(t, cli.Options{}, "calls", "list", "--json", "--data-dir", data)
	var tasks []struct {
		Task  string `json:"task"`
		Calls int    `json:"calls"`
	}
	if err := json.Unmarshal([]byte(out), &tasks); code != 0 || err != nil {
		t.Fatalf("calls list: %d %v\n%s", code, err, out)
	}
	if len(tasks) != 2 || tasks[0].Calls != 1 || tasks[1].Calls != 3 {
		t.Fatalf("tasks %+v, want the second with 1 call and the first with 3", tasks)
	}
	seen := map[string]bool{}
	wantOut := map[string][]string{tasks[1].Task: {"one", "two", "three"}, tasks[0].Task: {"four"}}
	for _, tk := range tasks {
		code, out, _ := runCLI(t, cli.Options{}, "calls", "list", "--task", tk.Task, "--json", "--data-dir", data)
		var calls []result.Client
		if err := json.Unmarshal([]byte(out), &calls); code != 0 || err != nil {
			t.Fatalf("calls list --task: %d %v\n%s", code, err, out)
		}
		for i, c := range calls {
			if seen[c.ToolCallID] || c.ToolCallID == "call_0" || c.ProviderCallID != "call_0" {
				t.Errorf("call %+v: want an id of aibuddy's, unique, with provider id call_0", c)
			}
			seen[c.ToolCallID] = true
			want := wantOut[tk.Task][i]
			code, show, _ := runCLI(t, cli.Options{}, "calls", "show", c.ToolCallID, "--data-dir", data)
			if code != 0 || !strings.Contains(show, want) {
				t.Errorf("calls show %s: %d\n%s\nwant the output of echo %s", c.ToolCallID, code, show, want)
			}
			code, view, errs := runCLI(t, cli.Options{}, "call", "view_tool_call", `{"id":"`+c.ToolCallID+`","part":"result"}`,
				"--workspace", ws, "--data-dir", data)
			if code != 0 || !strings.Contains(view, want) {
				t.Errorf("view_tool_call %s: %d\n%s%s\nwant the output of echo %s", c.ToolCallID, code, view, errs, want)
			}
		}
	}
	if len(seen) != 4 {
		t.Errorf("%d distinct records, want 4", len(seen))
	}
}
