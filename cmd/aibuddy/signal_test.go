package main_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host stopping `aibuddy mcp` with SIGTERM while execute runs: the call is
// cancelled, the command's process group is stopped and aibuddy exits, long
// before the command's own timeout (10 minutes here).
func TestMCPSigtermStopsCommandsInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ws := t.TempDir()
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--data-dir", t.TempDir())
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-sigterm", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute",
			Arguments: map[string]any{"command": treeLine + " > pid; sleep 600 & sleep 600", "timeout_ms": 600000}})
	}()
	pgid := waitPID(ctx, t, filepath.Join(ws, "pid"))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call was not ended by SIGTERM")
	}
	exited := make(chan error, 1)
	go func() { _, err := cmd.Process.Wait(); exited <- err }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("aibuddy mcp did not exit after SIGTERM")
	}
	gone, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	waitGroupGone(gone, t, pgid)
	// A host's SIGTERM is the normal end: no ERROR or WARN lines.
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
			t.Errorf("noise on a host's stop: %s", line)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
