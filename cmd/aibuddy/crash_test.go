package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixtureEnv makes this test binary a fixture MCP server over stdio.
const fixtureEnv = "AIBUDDY_E2E_FIXTURE"

// runFixtureServer serves tools "ok" (answers "fine") and "boom" (writes
// two stderr lines and exits 3 in the middle of the call, or kills itself
// with SIGKILL when mode is "kill").
func runFixtureServer(mode string) int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "crashy", Version: "1"}, nil)
	empty := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "ok", Description: "Answers fine.", InputSchema: empty},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "boom", Description: "Crashes the server.", InputSchema: empty},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "opening /var/lib/crashy/state.db")
			fmt.Fprintln(os.Stderr, "fatal: the database is locked")
			if mode == "kill" {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			os.Exit(3)
			return nil, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// A call to a tool of an MCP server that crashed is an Execution-stage
// error naming the exit (status or signal) and its last stderr lines:
// the call that crashed it (not replayed: boom is not marked idempotent),
// then, once the server is respawned and crashes again past
// mcp.maxRestarts, a call right after and a call after the gateway
// dropped the server's tools. Before, the last was a Discovery-stage
// error, and the first said only "connection closed". Between the two
// crashes the respawned server answers with its tools still listed
// (issue 13, BH-063).
func TestCrashedServerIsAnExecutionError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"mcpServers": map[string]any{
			"crashy": map[string]any{"command": self, "env": map[string]string{fixtureEnv: "exit"}},
			"killed": map[string]any{"command": self, "env": map[string]string{fixtureEnv: "kill"}},
		},
		"mcp":      map[string]any{"initTimeout": "60s", "startupWait": "60s", "maxRestarts": 1},
		"approval": map[string]any{"off": true},
	}
	b, _ := json.Marshal(doc)
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--workspace", t.TempDir(), "--config", cfg, "--data-dir", t.TempDir())
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	onChange, changed := listChanges()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-crash", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: onChange}).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for server, exit := range map[string]string{"crashy": "exited with status 3", "killed": "killed by signal killed"} {
		mustOK(t, server+"__ok", callTool(t, ctx, cs, server+"__ok", map[string]any{}))
		check := func(when string, res *mcp.CallToolResult) {
			t.Helper()
			got := text(res)
			if !res.IsError || res.Meta["aibuddy/stage"] != "execution" {
				t.Errorf("%s, %s: stage %v, want execution: %s", server, when, res.Meta["aibuddy/stage"], got)
			}
			for _, want := range []string{"MCP server " + server, exit, "fatal: the database is locked"} {
				if !strings.Contains(got, want) {
					t.Errorf("%s, %s: %q lacks %q", server, when, got, want)
				}
			}
		}
		check("the call that crashed it", callTool(t, ctx, cs, server+"__boom", map[string]any{}))
		mustOK(t, server+"__ok after the respawn", callTool(t, ctx, cs, server+"__ok", map[string]any{}))
		if !toolNames(t, ctx, cs)[server+"__ok"] {
			t.Fatalf("%s__ok left the list although the server was respawned", server)
		}
		check("the call that crashed it again", callTool(t, ctx, cs, server+"__boom", map[string]any{}))
		check("the next call", callTool(t, ctx, cs, server+"__ok", map[string]any{}))
		waitListed(t, ctx, cs, changed, server+"__ok", false, "after the second crash")
		check("a call after its tools left the list", callTool(t, ctx, cs, server+"__ok", map[string]any{}))
	}
}
