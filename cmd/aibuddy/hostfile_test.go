package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// toolsWithMCPConfig runs `aibuddy tools --json --mcp-config file` and
// returns the tool names and stderr.
func toolsWithMCPConfig(t *testing.T, file string, env ...string) (map[string]bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "tools", "--json", "--mcp-config", file, "--workspace", t.TempDir(), "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aibuddy tools --mcp-config %s: %v\n%s", file, err, stderr.String())
	}
	var doc toolsDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, s := range doc.MCPServers {
		if s.State != "connected" {
			t.Errorf("server %s: %s %s", s.Name, s.State, s.Error)
		}
	}
	names := map[string]bool{}
	for _, tl := range doc.Tools {
		names[tl.Name] = true
	}
	return names, stderr.String()
}

// A Gemini CLI settings.json, written as Gemini keeps it, given to
// --mcp-config: its servers start (one a second aibuddy, one the npm
// memory server with a $VAR in env), includeTools/excludeTools filter the
// tools, and trust is a warning, not a failure. Before, the first
// Gemini-only key stopped start-up (exit 2, "unknown key").
func TestMCPConfigGeminiSettings(t *testing.T) {
	memDir := t.TempDir()
	doc := fmt.Sprintf(`{
  "general": { "preferredEditor": "code" },
  "ui": { "theme": "GitHub" },
  "mcpServers": {
    "inner": {
      "command": %q,
      "args": ["mcp", "--workspace", %q, "--data-dir", %q],
      "timeout": 60000,
      "trust": true,
      "includeTools": ["ls", "read_file", "grep"],
      "excludeTools": ["grep"]
    },
    "memory": {
      "command": %q,
      "env": { "MEMORY_FILE_PATH": "$MEM_DIR/memory.jsonl" }
    }
  }
}`, bin, t.TempDir(), t.TempDir(), npmServer(t, "mcp-server-memory"))
	file := filepath.Join(t.TempDir(), ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	names, stderr := toolsWithMCPConfig(t, file, "MEM_DIR="+memDir)
	for _, n := range []string{"inner__ls", "inner__read_file", "memory__read_graph"} {
		if !names[n] {
			t.Errorf("%s is not served: %v", n, names)
		}
	}
	for _, n := range []string{"inner__grep", "inner__execute", "inner__write_file"} {
		if names[n] {
			t.Errorf("%s is served although includeTools/excludeTools leave it out", n)
		}
	}
	if !strings.Contains(stderr, `trust\" is ignored`) {
		t.Errorf("no warning about trust:\n%s", stderr)
	}
}

// Codex's config.toml given to --mcp-config: [mcp_servers.NAME] with
// enabled_tools; a server with enabled = false is not started.
func TestMCPConfigCodexTOML(t *testing.T) {
	doc := fmt.Sprintf(`model = "gpt-5.4"

[mcp_servers.inner]
command = %q
args = ["mcp", "--workspace", %q, "--data-dir", %q]
enabled_tools = ["ls", "glob"]
startup_timeout_sec = 30

[mcp_servers.off]
command = "/nonexistent/server"
enabled = false
`, bin, t.TempDir(), t.TempDir())
	file := filepath.Join(t.TempDir(), ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "tools", "--json", "--mcp-config", file, "--workspace", t.TempDir(), "--data-dir", t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{`"inner__ls"`, `"inner__glob"`, `"disabled"`, `startup_timeout_sec`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, `"inner__execute"`) {
		t.Errorf("inner__execute served although enabled_tools leaves it out")
	}
}
