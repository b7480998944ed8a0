package mcpclient_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aibuddy/aibuddy/mcpclient"
)

func TestParseServers(t *testing.T) {
	env := map[string]string{"HOME": "/srv/u", "TOKEN": "t0k", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	raw := map[string]json.RawMessage{
		// Claude Desktop stdio entry.
		"files": json.RawMessage(`{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","${HOME}/docs"],
			"env":{"DEBUG":"${DEBUG:-0}","KEY":"${TOKEN}"},"cwd":"${HOME}"}`),
		// Claude Code remote entries.
		"remote": json.RawMessage(`{"type":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}`),
		"cursor": json.RawMessage(`{"url":"https://example.com/mcp"}`),
		"old":    json.RawMessage(`{"type":"sse","url":"http://localhost:9/sse"}`),
		"vs":     json.RawMessage(`{"type":"streamable-http","url":"https://e.com/${EMPTY:-x}"}`),
		// Cline keys are accepted; disabled is kept.
		"cline": json.RawMessage(`{"command":"uvx","args":["mcp-server-git"],"disabled":true,"autoApprove":[],"timeout":60}`),
	}
	got, err := mcpclient.ParseServersWith(raw, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []mcpclient.ServerConfig{
		{Name: "cline", Type: "stdio", Command: "uvx", Args: []string{"mcp-server-git"}, Disabled: true},
		{Name: "cursor", Type: "http", TypeGuessed: true, URL: "https://example.com/mcp"},
		{Name: "files", Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/u/docs"},
			Env: map[string]string{"DEBUG": "0", "KEY": "t0k"}, Cwd: "/srv/u"},
		{Name: "old", Type: "sse", URL: "http://localhost:9/sse"},
		{Name: "remote", Type: "http", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer t0k"}},
		{Name: "vs", Type: "http", URL: "https://e.com/x"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseServers (-want +got):\n%s", diff)
	}
}

func TestParseServersErrors(t *testing.T) {
	for _, tc := range []struct {
		entry string
		want  string // the error names the server and the key
	}{
		{`{"command":"x","colour":"red"}`, `server "s": key "colour": unknown key`},
		{`{"command":"x","args":"-v"}`, `server "s": key "args": got a JSON string where an array of strings is expected`},
		{`{"command":"x","env":{"N":1}}`, `server "s": key "env": got a JSON number where an object of string values is expected`},
		{`{"command":"x","url":"http://a"}`, `server "s": has both "command" and "url"`},
		{`{}`, `server "s": needs "command" (a stdio server) or "url" (a remote server)`},
		{`{"type":"http","command":"x"}`, `server "s": key "url": is required for type "http"`},
		{`{"type":"ws","url":"ws://a"}`, `server "s": key "type": "ws" is not a transport`},
		{`{"url":"ftp://a"}`, `server "s": key "url": "ftp://a" must start with http:// or https://`},
		{`{"command":"x","env":{"K":"${NOPE}"}}`, `server "s": key "env.K": environment variable NOPE is not set`},
		{`{"url":"https://a","headers":{"A":"${NOPE}"}}`, `server "s": key "headers.A": environment variable NOPE is not set`},
		{`[1]`, `server "s": must be a JSON object`},
	} {
		_, err := mcpclient.ParseServersWith(map[string]json.RawMessage{"s": json.RawMessage(tc.entry)},
			func(string) (string, bool) { return "", false })
		if err == nil || !errors.Is(err, mcpclient.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.entry, err, tc.want)
		}
	}
}

// Cursor's "envFile": the dotenv file's variables join env, and env wins.
func TestParseServersEnvFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "server.env")
	if err := os.WriteFile(f, []byte("# keys\nAPI_KEY=from-file\nexport REGION=\"eu west\"\nKEEP=file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		if k == "DIR" {
			return dir, true
		}
		return "", false
	}
	raw := map[string]json.RawMessage{"c": json.RawMessage(`{"command":"srv","envFile":"${DIR}/server.env","env":{"KEEP":"env"}}`)}
	got, err := mcpclient.ParseServersWith(raw, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"API_KEY": "from-file", "REGION": "eu west", "KEEP": "env"}
	if diff := cmp.Diff(want, got[0].Env); diff != "" || got[0].EnvFile != f {
		t.Errorf("env (-want +got):\n%s envFile %q", diff, got[0].EnvFile)
	}
	for entry, msg := range map[string]string{
		`{"command":"srv","envFile":"${DIR}/missing.env"}`:  `server "c": key "envFile": open`,
		`{"url":"https://a","envFile":"${DIR}/server.env"}`: `a remote (http) server takes "url" and "headers", not`,
	} {
		_, err := mcpclient.ParseServersWith(map[string]json.RawMessage{"c": json.RawMessage(entry)}, lookup)
		if err == nil || !errors.Is(err, mcpclient.ErrConfig) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", entry, err, msg)
		}
	}
}
