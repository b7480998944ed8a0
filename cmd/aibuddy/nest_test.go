//go:build linux

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

	"github.com/aibuddy/aibuddy/internal/proctest"
)

// A settings file that lists aibuddy itself as an MCP server (the file a
// host keeps, passed back with --mcp-config) does not start copies without
// end: the chain stops at MaxMCPNesting and every copy exits with the first.
func TestSelfListedSettingsDoNotRecurse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ws := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "host.json")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"self": map[string]any{"command": bin, "args": []string{"mcp", "--mcp-config", cfg, "--workspace", ws}}}})
	if err := os.WriteFile(cfg, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "tools", "--json", "--mcp-config", cfg, "--workspace", ws).Output()
	if err != nil {
		t.Fatalf("aibuddy tools: %v %s", err, out)
	}
	var got toolsDoc
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range got.Tools {
		names[tl.Name] = true
	}
	if !names["self__ls"] {
		t.Errorf("the nested aibuddy's tools are missing: %v", names)
	}
	// Every copy started for cfg has ended (waited on pidfds).
	if left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.WithArg(cfg) }, 30*time.Second); err != nil || len(left) > 0 {
		t.Fatalf("aibuddy copies still running: %v %v", left, err)
	}
}

// A stdio MCP server inherits only the default set of host variables and
// its own "env", never the host's secrets.
func TestStdioServersDoNotInheritSecrets(t *testing.T) {
	ws := t.TempDir()
	cfg := settings(t, ws, []string{"everything"}, nil)
	cmd := exec.Command(bin, "call", "--config", cfg, "--workspace", ws, "everything__get-env", "{}")
	cmd.Env = append(os.Environ(), "AIBUDDY_TEST_SECRET_TOKEN=leak-me")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("call get-env: %v %s", err, out)
	}
	if strings.Contains(string(out), "leak-me") || !strings.Contains(string(out), "PATH") {
		t.Errorf("server environment:\n%s", out)
	}
}
