package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayExplainsDisconnectedServer: `aibuddy mcp` serves the tools of
// an upstream MCP server (a second `aibuddy mcp`, namespace "inner"). The
// upstream process is ended (its own execute tool sends SIGTERM to its
// parent, the upstream aibuddy), respawned once (mcp.maxRestarts 1), and
// ended again; the gateway then drops its tools, and a host
// that still calls one gets an Execution-stage error (the server that runs
// it failed) saying the server failed and why, not "no tool named
// … exists".
func TestGatewayExplainsDisconnectedServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ws, innerWS := t.TempDir(), t.TempDir()
	// The upstream ends itself through its own execute, which needs
	// execute unconfined (a confined command cannot signal a process
	// outside its sandbox): the upstream's settings say so.
	innerCfg := filepath.Join(t.TempDir(), "inner.json")
	if err := os.WriteFile(innerCfg, []byte(`{"sandbox": {"confinement": "off"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"mcpServers": map[string]any{"inner": map[string]any{"command": bin,
			"args": []string{"mcp", "--workspace", innerWS, "--data-dir", t.TempDir(), "--config", innerCfg}}},
		"mcp":      map[string]any{"initTimeout": "60s", "startupWait": "60s", "maxRestarts": 1},
		"approval": map[string]any{"off": true},
		// The inner aibuddy serves 12 tools (with the jobs group), over
		// the default per-server gate of 10: listed directly here.
		"discovery": map[string]any{"perServer": 20},
	}
	b, _ := json.Marshal(doc)
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg, "--data-dir", t.TempDir())
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	onChange, changed := listChanges()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-departed", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: onChange}).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed := func() map[string]bool { return toolNames(t, ctx, cs) }
	if !listed()["inner__ls"] {
		t.Fatalf("the upstream's tools are not served: %v", listed())
	}
	mustOK(t, "inner__ls", callTool(t, ctx, cs, "inner__ls", map[string]any{"path": "."}))
	// The upstream's shell is a child of the upstream aibuddy: end it. It
	// is respawned once (mcp.maxRestarts 1) and its read-only ls works
	// again; ended a second time, it is failed and its tools depart.
	_ = callTool(t, ctx, cs, "inner__execute", map[string]any{"command": "kill -TERM $PPID"})
	mustOK(t, "inner__ls after the respawn", callTool(t, ctx, cs, "inner__ls", map[string]any{"path": "."}))
	_ = callTool(t, ctx, cs, "inner__execute", map[string]any{"command": "kill -TERM $PPID"})
	waitListed(t, ctx, cs, changed, "inner__ls", false, "after the upstream ended twice")
	res := callTool(t, ctx, cs, "inner__ls", map[string]any{"path": "."})
	got := text(res)
	if !res.IsError || res.Meta["aibuddy/stage"] != "execution" {
		t.Fatalf("a tool of the ended server: %+v %s", res, got)
	}
	for _, want := range []string{"MCP server inner is failed", "check MCP server inner"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "no tool named") {
		t.Errorf("generic answer: %s", got)
	}
}
