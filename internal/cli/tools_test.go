package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/internal/cli"
)

// helperEnv makes the test binary an MCP server (TestHelperMCPServer).
const helperEnv = "AIBUDDY_CLI_TEST_MCP_TOOLS"

// TestHelperMCPServer is not a test: run as a child process with
// AIBUDDY_CLI_TEST_MCP_TOOLS=<n>, the test binary serves n tools t00,
// t01, ... over stdio with the MCP SDK and exits when stdin closes.
func TestHelperMCPServer(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(helperEnv))
	if err != nil {
		t.Skip("helper process for the tests that need an MCP server")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
	for i := range n {
		name := fmt.Sprintf("t%02d", i)
		srv.AddTool(&mcp.Tool{Name: name, Description: "Helper tool " + name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil
			})
	}
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// helperSettings is a settings file naming one helper MCP server with n
// tools.
func helperSettings(t *testing.T, server string, n int) string {
	t.Helper()
	doc := map[string]any{
		"mcpServers": map[string]any{server: map[string]any{"command": os.Args[0],
			"args": []string{"-test.run=^TestHelperMCPServer$"}, "env": map[string]string{helperEnv: strconv.Itoa(n)}}},
		"mcp": map[string]any{"initTimeout": "60s"},
	}
	b, _ := json.Marshal(doc)
	return writeConfig(t, string(b))
}

// `aibuddy tools` lists tool_search and call_tool exactly when the gateway
// does (some tool deferred), as core tools, always direct, with the number
// of deferred tools in the gate; with nothing deferred they are absent.
func TestToolsListsTheToolPlaneWhenDeferred(t *testing.T) {
	ws := t.TempDir()
	type row struct{ Name, Group, Server, Exposure, Gate string }
	list := func(cfg string) map[string]row {
		t.Helper()
		code, out, errs := runCLI(t, cli.Options{}, "tools", "--json", "--config", cfg, "--workspace", ws, "--data-dir", t.TempDir())
		var doc struct{ Tools []row }
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("exit %d: %s %s", code, out, errs)
		}
		m := map[string]row{}
		for _, r := range doc.Tools {
			m[r.Name] = r
		}
		return m
	}

	big := list(helperSettings(t, "big", 12)) // 12 > 10: deferred
	if big["big__t00"].Exposure != "deferred" {
		t.Fatalf("big__t00: %+v", big["big__t00"])
	}
	for _, name := range []string{"tool_search", "call_tool"} {
		r, ok := big[name]
		if !ok {
			t.Errorf("%s is not listed with 12 tools deferred", name)
			continue
		}
		if r.Exposure != "direct" || r.Server != "" || r.Group != "discovery" ||
			!strings.Contains(r.Gate, "core: always direct; present because 12 tools are deferred") {
			t.Errorf("%s: %+v", name, r)
		}
	}

	small := list(helperSettings(t, "small", 3))
	if small["small__t02"].Exposure != "direct" {
		t.Fatalf("small__t02: %+v", small["small__t02"])
	}
	for _, name := range []string{"tool_search", "call_tool"} {
		if r, ok := small[name]; ok {
			t.Errorf("%s listed with nothing deferred: %+v", name, r)
		}
	}

	code, out, errs := runCLI(t, cli.Options{}, "tools", "--config", helperSettings(t, "big", 12), "--workspace", ws, "--data-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && (f[0] == "tool_search" || f[0] == "call_tool") {
			if f[1] != "discovery" || f[2] != "direct" || !strings.Contains(line, "present because 12 tools are deferred") {
				t.Errorf("text line: %q", line)
			}
		}
	}
	if !strings.Contains(out, "\n  tool_search ") || !strings.Contains(out, "\n  call_tool ") {
		t.Errorf("text listing lacks the tool plane:\n%s", out)
	}
}
