package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
