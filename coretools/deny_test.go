package coretools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/permissions"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// BH-059: a deny rule on the file tools holds for read_file, ls, glob and
// grep content alike; the secret never reaches a result.
func TestDeniedPathsNeverReachTheModel(t *testing.T) {
	ws := t.TempDir()
	for name, data := range map[string]string{".env": "API_KEY=abc123\n", ".env.local": "API_KEY=zzz\n",
		"config/app.env": "API_KEY=fine\n", "src/main.go": "package main // reads API_KEY from the env\n"} {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	tools := map[string]*tool.Tool{}
	for _, tl := range coretools.Filesystem(sb, &coretools.FSOptions{DeniedPaths: []string{".env", ".env.*"}}) {
		tools[tl.Name()] = tl
	}
	call := func(name, input string) *tool.Result {
		return tools[name].Call(context.Background(), &tool.Call{Name: name, Input: json.RawMessage(input)})
	}
	for _, c := range []struct{ tool, input string }{
		{"read_file", `{"path":".env"}`}, {"read_file", `{"path":"./.env.local"}`},
		{"write_file", `{"path":".env","content":"X=1"}`}, {"edit_file", `{"path":".env","old_string":"abc","new_string":"x"}`},
		{"grep", `{"pattern":"KEY","path":".env"}`},
	} {
		res := call(c.tool, c.input)
		if !res.IsError || res.Stage != tool.Authorization || strings.Contains(res.AllText(), "abc123") {
			t.Errorf("%s %s: stage %s: %s", c.tool, c.input, res.Stage, res.AllText())
		}
	}
	res := call("grep", `{"pattern":"API_KEY","include_hidden":true}`)
	if res.IsError || strings.Contains(res.AllText(), "abc123") || strings.Contains(res.AllText(), "zzz") ||
		!strings.Contains(res.AllText(), "config/app.env") || !strings.Contains(res.AllText(), "src/main.go") {
		t.Errorf("grep over the workspace: %s", res.AllText())
	}
	for _, c := range []struct{ tool, input string }{
		{"glob", `{"pattern":"**/*","include_hidden":true}`}, {"ls", `{"path":".","include_hidden":true}`},
	} {
		res := call(c.tool, c.input)
		if res.IsError || !strings.Contains(res.AllText(), "config") {
			t.Errorf("%s: %s", c.tool, res.AllText())
		}
		for _, line := range strings.Split(res.AllText(), "\n") {
			if f := strings.Fields(line); len(f) > 0 && (f[0] == ".env" || strings.HasPrefix(f[0], ".env.")) {
				t.Errorf("%s lists a denied name: %q", c.tool, line)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".env")); string(b) != "API_KEY=abc123\n" {
		t.Errorf(".env changed: %q", b)
	}
}

// BH-059, the link variant: a symlink inside the workspace to a denied file
// (or a path through a linked folder) is refused like the file itself, and
// a walk never brings the target's content through the link.
func TestDeniedPathsThroughSymlinks(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=abc123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("API_KEY=fine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(".env", filepath.Join(ws, "envlink")))
	must(os.Symlink("a.txt", filepath.Join(ws, "alink")))
	must(os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	must(os.Symlink("..", filepath.Join(ws, "sub", "up")))
	sb, err := localsandbox.New(ws, nil)
	must(err)
	defer sb.Close()
	tools := map[string]*tool.Tool{}
	for _, tl := range coretools.Filesystem(sb, &coretools.FSOptions{DeniedPaths: []string{".env"}}) {
		tools[tl.Name()] = tl
	}
	call := func(name, input string) *tool.Result {
		return tools[name].Call(context.Background(), &tool.Call{Name: name, Input: json.RawMessage(input)})
	}
	for _, c := range []struct{ tool, input string }{
		{"read_file", `{"path":"envlink"}`}, {"read_file", `{"path":"sub/up/envlink"}`},
		{"write_file", `{"path":"envlink","content":"X=1"}`},
		{"edit_file", `{"path":"envlink","old_string":"abc","new_string":"x"}`},
		{"grep", `{"pattern":"KEY","path":"envlink"}`},
	} {
		res := call(c.tool, c.input)
		if !res.IsError || res.Stage != tool.Authorization || strings.Contains(res.AllText(), "abc123") ||
			!strings.Contains(res.AllText(), `a link to ".env"`) {
			t.Errorf("%s %s: stage %s: %s", c.tool, c.input, res.Stage, res.AllText())
		}
	}
	res := call("grep", `{"pattern":"API_KEY"}`)
	if res.IsError || strings.Contains(res.AllText(), "abc123") || strings.Contains(res.AllText(), "envlink") ||
		!strings.Contains(res.AllText(), "alink") {
		t.Errorf("grep over the workspace: %s", res.AllText())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".env")); string(b) != "API_KEY=abc123\n" {
		t.Errorf(".env changed: %q", b)
	}
}

// The permissions block's deny rules hold in the file tools themselves,
// through the matcher the approval gate uses (package permissions): Read
// rules for reads, listings and searches (a walk never enters a denied
// folder), Edit rules for writes only.
func TestPermissionDenyRulesInTheFileTools(t *testing.T) {
	ws := t.TempDir()
	for name, data := range map[string]string{"secrets/key.txt": "TOKEN=s3cr3t\n", "src/gen/a.go": "package gen // TOKEN\n",
		"src/main.go": "package main // TOKEN\n", "link.txt": ""} {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(ws, "link.txt"))
	if err := os.Symlink("secrets/key.txt", filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	tools := map[string]*tool.Tool{}
	opts := &coretools.FSOptions{Permissions: &permissions.Settings{Deny: []string{"Read(./secrets/**)", "Edit(src/gen/**)"}}}
	for _, tl := range coretools.Filesystem(sb, opts) {
		tools[tl.Name()] = tl
	}
	call := func(name, input string) *tool.Result {
		return tools[name].Call(context.Background(), &tool.Call{Name: name, Input: json.RawMessage(input)})
	}
	for _, c := range []struct{ tool, input string }{
		{"read_file", `{"path":"secrets/key.txt"}`}, {"read_file", `{"path":"link.txt"}`},
		{"ls", `{"path":"secrets"}`}, {"write_file", `{"path":"src/gen/b.go","content":"x"}`},
	} {
		res := call(c.tool, c.input)
		if !res.IsError || res.Stage != tool.Authorization || !strings.Contains(res.AllText(), "permissions.deny[") {
			t.Errorf("%s %s: stage %s: %s", c.tool, c.input, res.Stage, res.AllText())
		}
	}
	res := call("grep", `{"pattern":"TOKEN"}`)
	if res.IsError || strings.Contains(res.AllText(), "s3cr3t") || !strings.Contains(res.AllText(), "src/gen/a.go") {
		t.Errorf("grep: %s", res.AllText())
	}
	if res := call("read_file", `{"path":"src/gen/a.go"}`); res.IsError {
		t.Errorf("an Edit rule refuses a read: %s", res.AllText())
	}
}
