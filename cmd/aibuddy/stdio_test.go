package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/proctest"
)

// A bad line on stdin (not JSON, not JSON-RPC, over the frame limit) is
// answered with a JSON-RPC error and skipped; the session goes on and a
// call in the same session still works.
func TestMCPStdioSurvivesBadFrames(t *testing.T) {
	ws := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, []byte(`{"mcp": {"maxFrameBytes": 4096}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	frames := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`this is not json`,
		`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"` + strings.Repeat("x", 8000) + `"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo still-here"}}}`,
	}
	for _, f := range frames {
		fmt.Fprintln(stdin, f)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	var codes []float64
	ok := false
	for !ok && sc.Scan() {
		var msg struct {
			ID     any
			Result json.RawMessage
			Error  *struct{ Code float64 }
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		switch {
		case msg.Error != nil:
			codes = append(codes, msg.Error.Code)
		case msg.ID == float64(2):
			ok = strings.Contains(string(msg.Result), "still-here")
			if !ok {
				t.Errorf("execute result: %s", msg.Result)
			}
		}
	}
	if !ok {
		t.Fatalf("the session did not survive the bad lines; errors seen %v", codes)
	}
	if fmt.Sprint(codes) != "[-32700 -32600 -32600]" {
		t.Errorf("error codes %v, want parse error, invalid request, frame too large", codes)
	}
	if _, err := os.Stat(filepath.Join(ws, "big.txt")); err == nil {
		t.Error("the over-limit frame was executed")
	}
}

// rawFrames are the first frames a host sends, then more.
func rawFrames(more ...string) string {
	frames := append([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}, more...)
	return strings.Join(frames, "\n") + "\n"
}

// responses parses stdout lines into id -> raw message.
func responses(t *testing.T, out []byte) map[string]json.RawMessage {
	t.Helper()
	got := map[string]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		if msg.Method == "" && len(msg.ID) > 0 {
			got[string(msg.ID)] = json.RawMessage(line)
		}
	}
	return got
}

// A host that writes its requests and closes stdin (printf ... | aibuddy
// mcp) gets an answer to every request read before EOF, then aibuddy
// exits 0. Before, the SDK stopped writing at EOF and 0 of 10 piped runs
// answered the tools/call.
func TestMCPStdioAnswersRequestsReadBeforeEOF(t *testing.T) {
	ws := t.TempDir()
	data := t.TempDir()
	in := rawFrames(
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo answered"}}}`,
		`{"jsonrpc":"2.0","id":"four","method":"tools/call","params":{"name":"write_file","arguments":{"path":"a.txt","content":"x"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
	)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, bin, "mcp", "--workspace", ws, "--data-dir", data)
		cmd.Stdin = strings.NewReader(in)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v\nstderr: %s", i, err, stderr.String())
		}
		got := responses(t, out)
		for _, id := range []string{"1", "2", "3", `"four"`, "5"} {
			if _, ok := got[id]; !ok {
				t.Fatalf("run %d: no response for id %s; stdout:\n%s\nstderr: %s", i, id, out, stderr.String())
			}
		}
		if !strings.Contains(string(got["3"]), "answered") {
			t.Fatalf("run %d: execute answer %s", i, got["3"])
		}
		if err := os.Remove(filepath.Join(ws, "a.txt")); err != nil {
			t.Fatalf("run %d: write_file did not run: %v", i, err)
		}
	}
}

// A call still running mcp.drainGrace after the host closed stdin is
// cancelled: its process group is stopped and aibuddy exits, long before
// the command's own 10-minute timeout. The host closes stdin only once the
// command has started (its first output arrives as notifications/progress,
// after it wrote its pid file), so the grace is measured against a running
// command however long the start took on a loaded machine.
func TestMCPStdioDrainGraceCancelsLongCalls(t *testing.T) {
	ws := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, []byte(`{"mcp": {"drainGrace": "2s"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp", "--workspace", ws, "--config", cfg, "--data-dir", t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = stdin.Write([]byte(rawFrames(
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","_meta":{"progressToken":"p"},"arguments":{"command":"echo $$ $(readlink /proc/self/ns/pid) > pid; echo started; sleep 600","timeout_ms":600000}}}`)))
	var out []byte
	started := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		out = append(append(out, line...), '\n')
		var msg struct {
			Method string
			Params struct{ Message string }
		}
		if !started && json.Unmarshal(line, &msg) == nil && msg.Method == "notifications/progress" && strings.Contains(msg.Params.Message, "started") {
			started = true
			_ = stdin.Close() // the host goes away while the command runs
		}
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("aibuddy mcp did not exit after the drain grace (command started: %v); stderr: %s", started, stderr.String())
	}
	if err != nil {
		t.Fatalf("exit: %v\nstderr: %s", err, stderr.String())
	}
	if !started {
		t.Fatalf("the command's first output never came as notifications/progress: %s\nstderr: %s", out, stderr.String())
	}
	if _, ok := responses(t, out)["1"]; !ok {
		t.Errorf("initialize was not answered: %s", out)
	}
	if !strings.Contains(stderr.String(), "mcp.drainGrace") {
		t.Errorf("stderr does not say the call was cancelled at the grace: %s", stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(ws, "pid"))
	if err != nil {
		t.Fatalf("the command never started: %v", err)
	}
	if id := parseTree(t, b); treeHasLive(id) {
		t.Errorf("the command's processes (%+v) outlived aibuddy mcp", id)
	}
}

// treeLine is the shell code that writes what identifies a command's
// processes on the host (proctest.TreeLine).
const treeLine = proctest.TreeLine

// tree identifies a command's processes (see treeLine).
type tree = proctest.Tree

func parseTree(t *testing.T, b []byte) tree {
	t.Helper()
	id, err := proctest.ParseTree(string(b))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	return id
}

// treeHasLive reports whether a process of the command is alive: one in
// its PID namespace (confined), else one in its process group.
func treeHasLive(id tree) bool { return len(proctest.Live(id)) > 0 }
