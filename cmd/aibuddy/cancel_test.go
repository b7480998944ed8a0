package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/proctest"
)

// rawHost drives `aibuddy mcp` over stdio with hand-written frames, as a
// host does, and sees every frame aibuddy writes and every stderr line.
type rawHost struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	frames chan map[string]json.RawMessage // stdout, one per line; closed at EOF
	stderr chan string                     // closed at EOF
}

func startRawHost(t *testing.T, args ...string) *rawHost {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &rawHost{t: t, cmd: cmd, stdin: stdin, frames: make(chan map[string]json.RawMessage, 100), stderr: make(chan string, 1000)}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		defer close(h.frames)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]json.RawMessage{"invalid": json.RawMessage(strconv.Quote(sc.Text()))}
			}
			h.frames <- m
		}
	}()
	go func() {
		defer close(h.stderr)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("aibuddy stderr: " + sc.Text())
			select {
			case h.stderr <- sc.Text():
			default:
			}
		}
	}()
	return h
}

func (h *rawHost) send(frame string) {
	h.t.Helper()
	if _, err := fmt.Fprintln(h.stdin, frame); err != nil {
		h.t.Fatalf("writing to aibuddy: %v", err)
	}
}

// until reads frames until one has the given id and returns it with the
// frames before it.
func (h *rawHost) until(ctx context.Context, id string) (map[string]json.RawMessage, []map[string]json.RawMessage) {
	h.t.Helper()
	var before []map[string]json.RawMessage
	for {
		select {
		case m, ok := <-h.frames:
			if !ok {
				h.t.Fatalf("aibuddy closed stdout before answering id %s; frames: %v", id, before)
			}
			if string(m["id"]) == id && m["method"] == nil {
				return m, before
			}
			before = append(before, m)
		case <-ctx.Done():
			h.t.Fatalf("no answer to id %s; frames: %v", id, before)
		}
	}
}

// expectDropped waits until aibuddy says (stderr, --verbose) that it held
// back the answer to request id; an answer frame for id before that fails
// the test.
func (h *rawHost) expectDropped(ctx context.Context, id string) {
	h.t.Helper()
	for {
		select {
		case m, ok := <-h.frames:
			if !ok {
				h.t.Fatal("aibuddy closed stdout")
			}
			if string(m["id"]) == id && m["method"] == nil {
				b, _ := json.Marshal(m)
				h.t.Fatalf("the cancelled request %s was answered: %s", id, b)
			}
		case line, ok := <-h.stderr:
			if !ok {
				h.t.Fatalf("stderr closed before a line with %q", dropped)
			}
			if strings.Contains(line, dropped) {
				return
			}
		case <-ctx.Done():
			h.t.Fatalf("no stderr line with %q", dropped)
		}
	}
}

// waitPID waits for the file a command writes its treeLine into (on its
// folder's inotify events), until ctx's deadline.
func waitPID(ctx context.Context, t *testing.T, path string) tree {
	t.Helper()
	b, err := proctest.WaitLine(path, untilDeadline(ctx))
	if err != nil {
		t.Fatalf("the command never started: %v", err)
	}
	return parseTree(t, b)
}

// waitGroupGone waits until no live process of the command is left (on
// the processes' pidfds), until ctx's deadline.
func waitGroupGone(ctx context.Context, t *testing.T, pgid tree) {
	t.Helper()
	left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.Live(pgid) }, untilDeadline(ctx))
	if err != nil || len(left) > 0 {
		t.Fatalf("the command's processes (%+v) still run after the cancellation: %v %v", pgid, left, err)
	}
}

// untilDeadline is the time left before ctx's deadline (a minute without
// one).
func untilDeadline(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return time.Minute
}

// dropped is what aibuddy logs (with --verbose) when it holds back the
// answer to a cancelled request.
const dropped = "answer to a request the host cancelled not sent"

// A host cancels a running execute (notifications/cancelled, MCP spec
// "Cancellation"): the command's process group is stopped and no response
// is sent for that id (the receiver SHOULD NOT answer a cancelled
// request; the SDK answered it before); the session goes on.
func TestMCPCancelledCallIsNotAnswered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	h := startRawHost(t, "mcp", "--workspace", ws, "--data-dir", t.TempDir(), "--verbose")
	for _, f := range strings.Split(strings.TrimSpace(rawFrames()), "\n") {
		h.send(f)
	}
	h.until(ctx, "1")
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo $$ $(readlink /proc/self/ns/pid) > pid; sleep 600","timeout_ms":600000}}}`)
	pgid := waitPID(ctx, t, filepath.Join(ws, "pid"))
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user pressed stop"}}`)
	waitGroupGone(ctx, t, pgid)
	h.expectDropped(ctx, "2")
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo still-serving"}}}`)
	res, before := h.until(ctx, "3")
	for _, m := range before {
		if string(m["id"]) == "2" {
			b, _ := json.Marshal(m)
			t.Fatalf("the cancelled request was answered: %s", b)
		}
	}
	if !strings.Contains(string(res["result"]), "still-serving") {
		t.Errorf("the session did not go on: %s", res["result"])
	}
}

// The same through the gateway: cancelling a call to an upstream MCP
// server's tool (here a second aibuddy mcp, "inner") forwards the
// cancellation upstream, which stops its command, and the host gets no
// answer for that id.
func TestMCPCancelledProxiedCallIsForwarded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ws, innerWS := t.TempDir(), t.TempDir()
	doc := map[string]any{
		"mcpServers": map[string]any{"inner": map[string]any{"command": bin,
			"args": []string{"mcp", "--workspace", innerWS, "--data-dir", t.TempDir()}}},
		"mcp":      map[string]any{"initTimeout": "60s", "startupWait": "60s"},
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
	h := startRawHost(t, "mcp", "--workspace", ws, "--config", cfg, "--data-dir", t.TempDir(), "--verbose")
	for _, f := range strings.Split(strings.TrimSpace(rawFrames()), "\n") {
		h.send(f)
	}
	h.until(ctx, "1")
	h.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"inner__execute","arguments":{"command":"echo $$ $(readlink /proc/self/ns/pid) > pid; sleep 600","timeout_ms":600000}}}`)
	pgid := waitPID(ctx, t, filepath.Join(innerWS, "pid"))
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long"}}`)
	waitGroupGone(ctx, t, pgid)
	h.expectDropped(ctx, `"long"`)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"inner__execute","arguments":{"command":"echo upstream-serving"}}}`)
	res, before := h.until(ctx, "3")
	for _, m := range before {
		if string(m["id"]) == `"long"` {
			b, _ := json.Marshal(m)
			t.Fatalf("the cancelled request was answered: %s", b)
		}
	}
	if !strings.Contains(string(res["result"]), "upstream-serving") {
		t.Errorf("the upstream session did not go on: %s", res["result"])
	}
}
