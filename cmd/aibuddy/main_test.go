package main_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxmrtr"
)

// bin is the aibuddy binary built once for these tests.
var bin string

func TestMain(m *testing.M) {
	if os.Getenv(fixtureEnv) != "" {
		// This test binary started as a fixture MCP server (crash_test.go).
		os.Exit(runFixtureServer(os.Getenv(fixtureEnv)))
	}
	if args := os.Getenv(fxmrtr.EnvArgs); args != "" { // fixture fx-mrtr (protocol_test.go)
		os.Exit(fxmrtr.Main(context.Background(), strings.Fields(args), os.Stdin, os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "aibuddy-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin = filepath.Join(dir, "aibuddy")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		// The concurrency these tests drive runs in the aibuddy processes:
		// under -race they are race builds, and each race they report goes
		// to a file here, which fails the run.
		args = append(args, "-race")
		os.Setenv("GORACE", "log_path="+filepath.Join(dir, "race"))
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building aibuddy:", err)
		os.Exit(2)
	}
	// Call records go to folders of this run, never the user's cache (where
	// another build's schema may be newer): AIBUDDY_DATA_DIR for the aibuddy
	// the tests start, XDG_CACHE_HOME (set after the build, which uses the
	// Go build cache there) for an aibuddy started as an MCP server, which
	// inherits only the default variables.
	os.Setenv("AIBUDDY_DATA_DIR", filepath.Join(dir, "data"))
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	code := m.Run()
	if reports, _ := filepath.Glob(filepath.Join(dir, "race.*")); len(reports) > 0 {
		for _, r := range reports {
			b, _ := os.ReadFile(r)
			fmt.Fprintf(os.Stderr, "data race in an aibuddy process (%s):\n%s\n", filepath.Base(r), b)
		}
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// repoRoot is two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func connect(t *testing.T, ctx context.Context, ws string, extra ...string) *mcp.ClientSession {
	t.Helper()
	args := append([]string{"mcp", "--workspace", ws}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type testWriter struct {
	t      *testing.T
	prefix string
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// lockedBuilder is a strings.Builder that a process's output copier may
// write while the test reads it.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mustOK(t *testing.T, name string, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s failed: %s", name, text(res))
	}
	return text(res)
}

// TestMCPServerEndToEnd starts the built binary as an MCP server over stdio
// and drives it with the official SDK's client, checking files on disk.
func TestMCPServerEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	cs := connect(t, ctx, ws)

	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
		schema, _ := json.Marshal(tl.InputSchema)
		if !strings.Contains(string(schema), `"type":"object"`) {
			t.Errorf("%s: input schema %s is not an object schema", tl.Name, schema)
		}
		if tl.Description == "" {
			t.Errorf("%s has no description", tl.Name)
		}
	}
	sort.Strings(names)
	if got, want := strings.Join(names, ","), "ask_user_question,edit_file,execute,glob,grep,job_kill,job_output,jobs,ls,read_file,view_tool_call,write_file"; got != want {
		t.Fatalf("tools/list = %s, want %s", got, want)
	}

	content := "package demo\n\nfunc Answer() int {\n\treturn 41\n}\n"
	res := callTool(t, ctx, cs, "write_file", map[string]any{"path": "src/demo.go", "content": content})
	mustOK(t, "write_file", res)
	onDisk, err := os.ReadFile(filepath.Join(ws, "src", "demo.go"))
	if err != nil || string(onDisk) != content {
		t.Fatalf("write_file: disk has %q, %v", onDisk, err)
	}
	sum := sha256.Sum256(onDisk)
	if ev, _ := json.Marshal(res.Meta["aibuddy/evidence"]); !strings.Contains(string(ev), hex.EncodeToString(sum[:])) {
		t.Errorf("write_file evidence %s lacks the sha256 of the file on disk", ev)
	}

	out := mustOK(t, "read_file", callTool(t, ctx, cs, "read_file", map[string]any{"path": "src/demo.go"}))
	if !strings.Contains(out, "\treturn 41") || !strings.Contains(out, "func Answer() int {") {
		t.Errorf("read_file output lacks the file's lines (tabs kept):\n%s", out)
	}

	mustOK(t, "edit_file", callTool(t, ctx, cs, "edit_file",
		map[string]any{"path": "src/demo.go", "old_string": "\treturn 41", "new_string": "\treturn 42"}))
	onDisk, _ = os.ReadFile(filepath.Join(ws, "src", "demo.go"))
	if want := strings.Replace(content, "41", "42", 1); string(onDisk) != want {
		t.Fatalf("edit_file: disk has %q, want %q", onDisk, want)
	}

	out = mustOK(t, "grep", callTool(t, ctx, cs, "grep", map[string]any{"pattern": "return 4[0-9]"}))
	if !strings.Contains(out, "src/demo.go") || !strings.Contains(out, "return 42") {
		t.Errorf("grep output:\n%s", out)
	}

	res = callTool(t, ctx, cs, "execute", map[string]any{"command": "cat src/demo.go | wc -l && echo made > made.txt"})
	out = mustOK(t, "execute", res)
	if !strings.Contains(out, "5") {
		t.Errorf("execute output %q lacks the line count 5", out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("execute's effect on disk: %q, %v", b, err)
	}
	res = callTool(t, ctx, cs, "execute", map[string]any{"command": "exit 3"})
	if ev, _ := json.Marshal(res.Meta["aibuddy/evidence"]); !strings.Contains(string(ev), `"exit_code":3`) {
		t.Errorf("execute exit code not in evidence: %s / %s", ev, text(res))
	}

	// Bad input is a Parameters-stage tool error, not a protocol error.
	res = callTool(t, ctx, cs, "read_file", map[string]any{"path": 7})
	if !res.IsError || res.Meta["aibuddy/stage"] != "parameters" || !strings.Contains(text(res), "path") {
		t.Errorf("bad input: isError=%v meta=%v text=%q", res.IsError, res.Meta, text(res))
	}
}

// TestMCPConfinement: reads that resolve outside the workspace are
// Authorization-stage errors and touch nothing outside (cases BH-055, BH-057).
func TestMCPConfinement(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(parent, "outside.txt")
	if err := os.WriteFile(outside, []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "leak")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(outside)
	cs := connect(t, ctx, ws)
	for _, p := range []string{"../outside.txt", outside, "leak"} {
		res := callTool(t, ctx, cs, "read_file", map[string]any{"path": p})
		if !res.IsError || res.Meta["aibuddy/stage"] != "authorization" {
			t.Errorf("read_file %s: isError=%v stage=%v text=%q", p, res.IsError, res.Meta["aibuddy/stage"], text(res))
		}
		if strings.Contains(text(res), "s3cr3t") {
			t.Errorf("read_file %s leaked the outside file", p)
		}
	}
	for _, p := range []string{"../outside.txt", outside, "leak"} {
		res := callTool(t, ctx, cs, "write_file", map[string]any{"path": p, "content": "OWNED"})
		if !res.IsError || res.Meta["aibuddy/stage"] != "authorization" {
			t.Errorf("write_file %s: isError=%v stage=%v text=%q", p, res.IsError, res.Meta["aibuddy/stage"], text(res))
		}
	}
	after, _ := os.Stat(outside)
	b, _ := os.ReadFile(outside)
	if string(b) != "s3cr3t\n" || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the outside file changed: %q", b)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 2 {
		t.Errorf("something was created outside the workspace: %v", entries)
	}
}

// TestMCPStdoutCarriesOnlyFrames speaks raw JSON-RPC to the server with
// verbose logging on and checks that every stdout line is a JSON-RPC frame.
func TestMCPStdoutCarriesOnlyFrames(t *testing.T) {
	ws := t.TempDir()
	cmd := exec.Command(bin, "mcp", "--verbose", "--workspace", ws)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr lockedBuilder // read below while the process may still write
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	frames := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo to-stdout; echo to-stderr >&2"}}}`,
	}
	for _, f := range frames {
		fmt.Fprintln(stdin, f)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	seen := map[float64]bool{}
	deadline := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for len(seen) < 3 && sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not a JSON-RPC frame: %q", sc.Text())
		}
		if id, ok := msg["id"].(float64); ok {
			seen[id] = true
			if id == 3 && !strings.Contains(sc.Text(), "to-stdout") {
				t.Errorf("execute result lacks its output: %s", sc.Text())
			}
		}
	}
	if len(seen) < 3 {
		t.Fatalf("got responses %v; stderr: %s", seen, stderr.String())
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("server did not exit after stdin closed")
	}
}

// TestInspectorCLI drives the server with a third-party client: the MCP
// Inspector's CLI mode from npm (installed by scripts/test with npm ci).
func TestInspectorCLI(t *testing.T) {
	inspector := filepath.Join(repoRoot(t), "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(inspector); err != nil {
		t.Fatalf("MCP Inspector not installed (%v): run `bash scripts/test`, which runs npm ci", err)
	}
	ws := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		full := append([]string{"--cli", bin, "mcp", "--workspace", ws}, args...)
		cmd := exec.CommandContext(ctx, inspector, full...)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr)
		}
		return string(out)
	}
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(run("--method", "tools/list")), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tl := range list.Tools {
		got[tl.Name] = tl.InputSchema["type"] == "object"
	}
	for _, n := range []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute"} {
		if !got[n] {
			t.Errorf("inspector tools/list lacks %s (or its schema is not an object): %v", n, got)
		}
	}
	var call struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	out := run("--method", "tools/call", "--tool-name", "write_file", "--tool-arg", "path=notes/inspected.txt", "--tool-arg", "content=from the inspector")
	if err := json.Unmarshal([]byte(out), &call); err != nil || call.IsError {
		t.Fatalf("inspector write_file: %v %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes", "inspected.txt")); string(b) != "from the inspector" {
		t.Errorf("disk has %q", b)
	}
	out = run("--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=../../etc/passwd")
	if err := json.Unmarshal([]byte(out), &call); err != nil || !call.IsError || !strings.Contains(out, "Authorization") {
		t.Errorf("inspector read_file outside: %v %s", err, out)
	}
}

// TestExecuteHeartbeatsOverMCP: while execute runs, heartbeats (shortened
// to 200 ms in the settings) and output reach the host as
// notifications/progress for the request's progress token; none of them
// enters the result the model sees. The command waits on a FIFO that the
// host side opens only once it has the output chunk and three heartbeats,
// so they are proved to come while the command runs, on any machine.
func TestExecuteHeartbeatsOverMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "gate"), 0o600); err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(func() {
		go func() { // opening for writing lets the command's cat see EOF
			if f, err := os.OpenFile(filepath.Join(ws, "gate"), os.O_WRONLY, 0); err == nil {
				f.Close()
			}
		}()
	})
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, []byte(`{"limits":{"execHeartbeat":"200ms"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs []string
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-progress", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			msgs = append(msgs, req.Params.Message)
			joined := strings.Join(msgs, "|")
			mu.Unlock()
			if strings.Count(joined, "running") >= 3 && strings.Contains(joined, "first") {
				release()
			}
		}})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": "echo first; cat gate >/dev/null; echo second"}}
	params.SetProgressToken("exec-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("execute: %v %+v; progress notifications %q: want >= 3 heartbeats and the output chunk before the command ends", err, res, msgs)
	}
	out := text(res)
	if !strings.Contains(out, "first") || !strings.Contains(out, "second") || strings.Contains(out, "running") {
		t.Errorf("result text %q", out)
	}
}
