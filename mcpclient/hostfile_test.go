package mcpclient_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aibuddy/aibuddy/mcpclient"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A Gemini CLI settings.json as Gemini writes it (nested settings beside
// mcpServers; entries with httpUrl, url+type, timeout in milliseconds,
// trust, includeTools/excludeTools, OAuth keys, $VAR) is read: what has a
// meaning here is mapped, the rest is a note, nothing fails.
func TestReadHostFileGemini(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), ".gemini", "settings.json"), `{
  "general": { "vimMode": true, "preferredEditor": "code" },
  "ui": { "theme": "GitHub" },
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "mcp": { "allowed": ["memory", "github", "gcp", "legacy", "remote", "sock"] },
  "mcpServers": {
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "env": { "MEMORY_FILE_PATH": "$HOME/memory.jsonl", "TOKEN": "${TOKEN}" },
      "cwd": "./tools",
      "timeout": 15000,
      "trust": false,
      "includeTools": ["read_graph", "search_nodes"],
      "description": "knowledge graph"
    },
    "github": {
      "httpUrl": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer $GITHUB_PAT" },
      "timeout": 5000
    },
    "legacy": { "url": "http://localhost:8080/sse", "type": "sse" },
    "remote": { "url": "https://mcp.example.com/mcp", "excludeTools": ["delete_all"] },
    "gcp": {
      "httpUrl": "https://my-gcp-service.run.app/mcp",
      "authProviderType": "google_credentials",
      "oauth": { "scopes": ["https://www.googleapis.com/auth/userinfo.email"] }
    },
    "sock": { "tcp": "localhost:9000" }
  }
}`)
	hf, err := mcpclient.ReadHostFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if hf.Dialect != mcpclient.DialectGemini {
		t.Errorf("dialect %q, want gemini", hf.Dialect)
	}
	env := map[string]string{"HOME": "/srv/u", "TOKEN": "t0k", "GITHUB_PAT": "ghp"}
	got, err := mcpclient.ParseServersWith(hf.Servers, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	want := []mcpclient.ServerConfig{
		{Name: "gcp", Type: "http", URL: "https://my-gcp-service.run.app/mcp",
			OAuth: &mcpclient.OAuthConfig{Scopes: []string{"https://www.googleapis.com/auth/userinfo.email"}}},
		{Name: "github", Type: "http", URL: "https://api.githubcopilot.com/mcp/", Headers: map[string]string{"Authorization": "Bearer ghp"},
			CallTimeout: 5 * time.Second},
		{Name: "legacy", Type: "sse", URL: "http://localhost:8080/sse"},
		{Name: "memory", Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"},
			Env: map[string]string{"MEMORY_FILE_PATH": "/srv/u/memory.jsonl", "TOKEN": "t0k"}, Cwd: "./tools",
			IncludeTools: []string{"read_graph", "search_nodes"}, CallTimeout: 15 * time.Second},
		{Name: "remote", Type: "http", TypeGuessed: true, URL: "https://mcp.example.com/mcp", ExcludeTools: []string{"delete_all"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	notes := strings.Join(hf.Notes, "\n")
	for _, w := range []string{`server "memory" (Gemini CLI settings): "trust" is ignored`, `server "gcp" (Gemini CLI settings): "authProviderType" is ignored`,
		`server "sock" (Gemini CLI settings): left out: its "tcp" (websocket) transport is not supported`} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
	if strings.Contains(notes, `"oauth" is ignored`) {
		t.Errorf("Gemini's oauth entry is read (OAuthConfig), not ignored:\n%s", notes)
	}
	if strings.Contains(notes, "description") {
		t.Errorf("description is informational, not a note:\n%s", notes)
	}
}

// Codex's config.toml as `codex mcp add` and its docs write it: stdio and
// streamable HTTP servers, env tables, bearer_token_env_var, enabled,
// enabled_tools/disabled_tools, tool_timeout_sec.
func TestReadHostFileCodex(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), ".codex", "config.toml"), `model = "gpt-5.4"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env_vars = ["LOG_LEVEL"]
startup_timeout_sec = 20

[mcp_servers.docs.env]
API_KEY = "k"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }
tool_timeout_sec = 45
enabled_tools = ["get_file"]
disabled_tools = ["delete_file"]

[mcp_servers.off]
command = "old-server"
enabled = false
`)
	hf, err := mcpclient.ReadHostFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FIGMA_OAUTH_TOKEN": "fig"}
	got, err := mcpclient.ParseServersWith(hf.Servers, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	want := []mcpclient.ServerConfig{
		{Name: "docs", Type: "stdio", Command: "npx", Args: []string{"-y", "@upstash/context7-mcp"},
			Env: map[string]string{"API_KEY": "k", "LOG_LEVEL": ""}},
		{Name: "figma", Type: "http", URL: "https://mcp.figma.com/mcp",
			Headers:      map[string]string{"Authorization": "Bearer fig", "X-Figma-Region": "us-east-1"},
			IncludeTools: []string{"get_file"}, ExcludeTools: []string{"delete_file"}, CallTimeout: 45 * time.Second},
		{Name: "off", Type: "stdio", Command: "old-server", Disabled: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if n := strings.Join(hf.Notes, "\n"); !strings.Contains(n, `server "docs" (Codex config.toml): "startup_timeout_sec" is ignored here`) {
		t.Errorf("notes: %s", n)
	}
}

// A Claude Desktop file stays the plain mcpServers dialect, and a file
// without servers is an error that shows the expected shape.
func TestReadHostFilePlainAndErrors(t *testing.T) {
	dir := t.TempDir()
	hf, err := mcpclient.ReadHostFile(writeFile(t, filepath.Join(dir, "claude_desktop_config.json"),
		`{"globalShortcut":"","mcpServers":{"files":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/tmp"]}}}`))
	if err != nil || hf.Dialect != mcpclient.DialectMCPServers || len(hf.Servers) != 1 || len(hf.Notes) != 0 {
		t.Fatalf("claude desktop file: %+v %v", hf, err)
	}
	for file, want := range map[string]string{
		"none.json":   `no "mcpServers" object`,
		"bad.json":    "not a JSON object",
		"config.toml": "no [mcp_servers.NAME] table",
	} {
		body := `{"theme":"x"}`
		if file == "bad.json" {
			body = "{"
		} else if file == "config.toml" {
			body = "model = \"x\"\n"
		}
		_, err := mcpclient.ReadHostFile(writeFile(t, filepath.Join(dir, file), body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

// Gemini CLI's server lists turn servers off: mcp.excluded (and the older
// excludeMCPServers) leaves a server out, mcp.allowed (allowMCPServers)
// keeps only the named ones; each server left out is a note.
func TestReadHostFileGeminiServerLists(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, lists string
		want        []string
	}{
		{"excluded", `"mcp": {"excluded": ["mem"]}`, []string{"other", "third"}},
		{"legacy excluded", `"excludeMCPServers": ["mem", "third"]`, []string{"other"}},
		{"allowed", `"mcp": {"allowed": ["mem", "other"], "excluded": ["other"]}`, []string{"mem"}},
		{"legacy allowed", `"allowMCPServers": ["third"]`, []string{"third"}},
	} {
		p := writeFile(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json"), `{
  "theme": "GitHub",
  `+tc.lists+`,
  "mcpServers": {
    "mem": {"command": "node", "args": ["mem.js"]},
    "other": {"command": "node", "args": ["other.js"]},
    "third": {"command": "node", "args": ["third.js"]}
  }
}`)
		hf, err := mcpclient.ReadHostFile(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for n := range hf.Servers {
			got = append(got, n)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: servers %v, want %v", tc.name, got, tc.want)
		}
		if left := 3 - len(tc.want); strings.Count(strings.Join(hf.Notes, "\n"), "left out:") != left {
			t.Errorf("%s: want %d left-out notes, got %q", tc.name, left, hf.Notes)
		}
	}
}
