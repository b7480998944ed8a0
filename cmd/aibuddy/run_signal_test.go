package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chatToolCall is a chat completions stream whose one choice calls execute
// with command (the wire format of the API reference's streaming example).
func chatToolCall(command string) string {
	chunk := func(c string) string {
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"local","choices":[` + c + `]}` + "\n\n"
	}
	in, _ := json.Marshal(map[string]any{"command": command, "timeout_ms": 600000})
	args, _ := json.Marshal(string(in))
	return chunk(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"execute","arguments":`+string(args)+`}}]},"finish_reason":null}`) +
		chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`) + "data: [DONE]\n\n"
}

// Ctrl-C (SIGINT) of `aibuddy run` while a command runs: the run stops
// like a cancelled run (exit 130, "stopped"), the command's process group
// is stopped, and stderr carries no ERROR or WARN lines (a user's stop is
// not a failure). Before, it exited 3, "the plane failed".
func TestRunInterruptExits130Quietly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chatToolCall(treeLine+" > pid; sleep 600"))
	}))
	defer ts.Close()
	cmd := exec.CommandContext(ctx, bin, "run", "--provider", "openai-chat", "--model", "local", "--base-url", ts.URL+"/v1",
		"--workspace", ws, "--data-dir", t.TempDir(), "--config", settings(t, ws, []string{"memory"}, nil), "sleep for a while")
	cmd.Env = append(cmd.Environ(), "OPENAI_API_KEY=test-key")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := waitPID(ctx, t, filepath.Join(ws, "pid"))
	// A terminal's Ctrl-C reaches the whole foreground process group:
	// aibuddy and the MCP servers it started.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("aibuddy run did not stop on SIGINT; stderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130 (stopped by the user); stderr:\n%s", err, stderr.String())
	}
	waitGroupGone(ctx, t, pgid)
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
			t.Errorf("noise on a user's stop: %s", line)
		}
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("stderr does not say the run was stopped:\n%s", stderr.String())
	}
}
