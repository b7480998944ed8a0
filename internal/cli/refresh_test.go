package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/internal/cli"
)

// liveServerEnv makes the test binary an MCP server over stdio (see
// TestMain): it offers live__grow and live__old; a call to grow removes
// old and adds fresh, and the SDK tells the client with
// notifications/tools/list_changed.
const liveServerEnv = "AIBUDDY_CLI_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(liveServerEnv) != "" {
		serveLive()
		os.Exit(0)
	}
	// Call records go to a folder of this run, never the user's cache
	// (where another build's schema may be newer).
	data, err := os.MkdirTemp("", "aibuddy-cli-data-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv("AIBUDDY_DATA_DIR", data)
	code := m.Run()
	os.RemoveAll(data)
	os.Exit(code)
}

func serveLive() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "live", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	ran := func(name string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil
		}
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	srv.AddTool(&mcp.Tool{Name: "old", Description: "The old tool.", InputSchema: schema, Annotations: ro}, ran("old"))
	srv.AddTool(&mcp.Tool{Name: "grow", Description: "Change the tool list.", InputSchema: schema, Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv.RemoveTools("old")
			srv.AddTool(&mcp.Tool{Name: "fresh", Description: "The new tool.", InputSchema: schema, Annotations: ro}, ran("fresh"))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil
		})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// toolCall is a chat completions stream whose answer is one tool call.
func toolCall(id, name, args string) string {
	argsJSON, _ := json.Marshal(args)
	return chatSSE(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}`, id, name, argsJSON),
		`{"index":0,"delta":{},"finish_reason":"tool_calls"}`)
}

// TestRunPicksUpMCPToolChanges: during `aibuddy run`, an MCP server
// removes one tool and adds another (notifications/tools/list_changed).
// A later request of the same run offers the new tool and not the removed
// one, and the model's call to the new tool runs. Until the change has
// arrived (the client debounces list_changed), the scripted model waits
// with a short command; 30 steps is a "does not hang" bound.
func TestRunPicksUpMCPToolChanges(t *testing.T) {
	var mu sync.Mutex
	var seen [][]string
	phase := 0 // 0: grow not called; 1: waiting for fresh; 2: fresh called; 3: done
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(b, &body)
		names := map[string]bool{}
		var list []string
		for _, tl := range body.Tools {
			names[tl.Function.Name] = true
			list = append(list, tl.Function.Name)
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, list)
		n := len(seen)
		w.Header().Set("Content-Type", "text/event-stream")
		switch {
		case phase == 0:
			phase = 1
			io.WriteString(w, toolCall("call_grow", "live__grow", `{}`))
		case phase == 1 && names["live__fresh"]:
			phase = 2
			io.WriteString(w, toolCall("call_fresh", "live__fresh", `{}`))
		case phase == 1:
			io.WriteString(w, toolCall(fmt.Sprintf("call_wait_%d", n), "execute", `{"command":"sleep 0.2"}`))
		default:
			phase = 3
			io.WriteString(w, chatSSE(`{"index":0,"delta":{"role":"assistant","content":"All done."},"finish_reason":null}`,
				`{"index":0,"delta":{},"finish_reason":"stop"}`))
		}
	}))
	defer ts.Close()
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"live": map[string]any{
		"command": os.Args[0], "args": []string{"-test.run=^$"}, "env": map[string]string{liveServerEnv: "1"}}}})
	cfg := writeConfig(t, string(doc))
	t.Setenv("OPENAI_API_KEY", "test-key")
	code, out, errs := runCLI(t, cli.Options{}, "run", "--provider", "openai-chat", "--model", "local",
		"--base-url", ts.URL+"/v1", "--workspace", t.TempDir(), "--data-dir", t.TempDir(), "--config", cfg,
		"--max-steps", "30", "change the tools, then use the new one")
	mu.Lock()
	defer mu.Unlock()
	if code != 0 || phase != 3 {
		t.Fatalf("exit %d, phase %d after %d requests\nstdout %s\nstderr %s", code, phase, len(seen), out, errs)
	}
	first := strings.Join(seen[0], ",")
	if !strings.Contains(first, "live__old") || !strings.Contains(first, "live__grow") || strings.Contains(first, "live__fresh") {
		t.Errorf("first request's tools: %s", first)
	}
	last := strings.Join(seen[len(seen)-1], ",")
	if strings.Contains(last, "live__old") || !strings.Contains(last, "live__fresh") || !strings.Contains(last, "read_file") {
		t.Errorf("last request's tools: want live__fresh and the built-in tools, not live__old: %s", last)
	}
	if !strings.Contains(errs, "fresh ran") {
		t.Errorf("the call to live__fresh did not run:\n%s", errs)
	}
	t.Logf("the change arrived after %d request(s)", len(seen)-1)
}
