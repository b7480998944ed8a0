package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/internal/cli"
)

// anthropicEndTurn is a whole Messages API stream that answers with text
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming).
const anthropicEndTurn = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Nothing to do.\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":4}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// TestRunNativeToolSearchSetting: provider.nativeToolSearch and
// --native-tool-search reach the model request of `aibuddy run`. The
// model is claude-sonnet-4-5 on a test server (not the official endpoint,
// so "auto" is activeTools); an MCP server over streamable HTTP has two
// tools, both deferred by discovery.perServer 1. "on" sends the BM25 tool
// search tool and the MCP tools with defer_loading; "auto" and "off" send
// aibuddy's tool_search and no MCP tool; the flag wins over the settings;
// a value other than auto, on or off is a usage error.
func TestRunNativeToolSearchSetting(t *testing.T) {
	mcpSrv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	for _, name := range []string{"lookup", "index"} {
		mcpSrv.AddTool(&mcp.Tool{Name: name, Description: "Docs " + name + ".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	mcpTS := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpSrv }, nil))
	t.Cleanup(mcpTS.Close)

	var mu sync.Mutex
	var bodies []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if r.URL.Path != "/v1/messages" {
			http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"no"}}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthropicEndTurn)
	}))
	t.Cleanup(api.Close)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", "")

	settings := func(mode string) string {
		p := ""
		if mode != "" {
			p = fmt.Sprintf(`"provider": {"nativeToolSearch": %q},`, mode)
		}
		return writeConfig(t, `{`+p+`"discovery": {"perServer": 1},
		  "mcpServers": {"docs": {"type": "http", "url": "`+mcpTS.URL+`"}}}`)
	}
	type tool struct {
		Type         string `json:"type"`
		Name         string `json:"name"`
		DeferLoading bool   `json:"defer_loading"`
	}
	for _, c := range []struct {
		name, setting, flag string
		native              bool
	}{
		{"default", "", "", false},
		{"auto", "auto", "", false},
		{"on", "on", "", true},
		{"off", "off", "", false},
		{"flag on over settings off", "off", "on", true},
		{"flag off over settings on", "on", "off", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			bodies = nil
			mu.Unlock()
			args := []string{"run", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--base-url", api.URL,
				"--config", settings(c.setting), "--workspace", t.TempDir(), "--data-dir", t.TempDir()}
			if c.flag != "" {
				args = append(args, "--native-tool-search", c.flag)
			}
			code, out, errs := runCLI(t, cli.Options{}, append(args, "look something up")...)
			if code != 0 || !strings.Contains(out, "Nothing to do.") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 1 {
				t.Fatalf("%d requests, want 1", len(bodies))
			}
			var req struct{ Tools []tool }
			if err := json.Unmarshal([]byte(bodies[0]), &req); err != nil {
				t.Fatal(err)
			}
			search, aibuddySearch, deferred, mcpTools := false, false, 0, 0
			for _, tl := range req.Tools {
				switch {
				case tl.Type == "tool_search_tool_bm25_20251119" && tl.Name == "tool_search_tool_bm25":
					search = true
				case tl.Name == "tool_search":
					aibuddySearch = true
				case strings.HasPrefix(tl.Name, "docs"):
					mcpTools++
					if tl.DeferLoading {
						deferred++
					}
				}
			}
			if c.native && (!search || aibuddySearch || mcpTools != 2 || deferred != 2) {
				t.Errorf("native: search tool %v, aibuddy tool_search %v, MCP tools %d (%d deferred): %s",
					search, aibuddySearch, mcpTools, deferred, bodies[0])
			}
			if !c.native && (search || !aibuddySearch || mcpTools != 0) {
				t.Errorf("activeTools: search tool %v, aibuddy tool_search %v, MCP tools %d: %s",
					search, aibuddySearch, mcpTools, bodies[0])
			}
		})
	}

	for _, c := range []struct{ name, setting, flag, want string }{
		{"bad setting", "maybe", "", "provider.nativeToolSearch"},
		{"bad flag", "", "yes", "--native-tool-search"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"run", "--provider", "anthropic", "--base-url", api.URL,
				"--config", settings(c.setting), "--workspace", t.TempDir(), "--data-dir", t.TempDir()}
			if c.flag != "" {
				args = append(args, "--native-tool-search", c.flag)
			}
			code, _, errs := runCLI(t, cli.Options{}, append(args, "task")...)
			if code != cli.ExitUsage || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %s; want a usage error naming %s", code, errs, c.want)
			}
		})
	}
}
