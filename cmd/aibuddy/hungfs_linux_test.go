package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// mountHungFS mounts, at dir, a FUSE filesystem whose daemon never
// answers (this test holds /dev/fuse and reads nothing from it), like a
// network filesystem whose server is gone: any lookup in it blocks in the
// kernel until the connection is aborted, whatever the caller's context
// says. Cleanup aborts it (closing the device fails every waiting request
// with ENOTCONN) and unmounts. Skips where the host cannot mount FUSE
// (needs /dev/fuse and CAP_SYS_ADMIN).
func mountHungFS(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no /dev/fuse here (%v): a hung filesystem cannot be made", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d", fd, os.Getuid(), os.Getgid())
	if err := unix.Mount("aibuddy-hungfs", dir, "fuse", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(fd)
		t.Skipf("cannot mount FUSE here (%v): a hung filesystem cannot be made", err)
	}
	t.Cleanup(func() {
		unix.Close(fd) // aborts the connection: stuck lookups return ENOTCONN
		unix.Unmount(dir, unix.MNT_DETACH)
	})
}

// blockedInFUSE reports whether a thread of process pid waits in the FUSE
// client (its wchan names a fuse function).
func blockedInFUSE(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	for _, p := range tasks {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "fuse") {
			return true
		}
	}
	return false
}

// A call stuck in a system call that its cancellation cannot stop (a
// read_file on a hung filesystem) must not keep `aibuddy mcp` alive after
// SIGTERM: the process waits mcp.stopGrace for the cancelled calls, then
// says which are still running and exits (issue 11: a hung edit made it
// ignore SIGTERM). The temporary file sweep, which also walks into the hung
// mount at start-up, does not hold the exit either.
func TestMCPSigtermEndsWhileACallIsStuck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws := t.TempDir()
	mountHungFS(t, filepath.Join(ws, "hung"))
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, []byte(`{"mcp": {"stopGrace": "2s"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg, "--data-dir", t.TempDir())
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-hungfs", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	exited := make(chan struct{})
	go func() { cmd.Process.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})

	answered := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hung/notes.txt"}})
		answered <- err
	}()
	// The call reaches the hung filesystem: a thread of aibuddy waits in
	// the FUSE client.
	for !blockedInFUSE(cmd.Process.Pid) {
		select {
		case err := <-answered:
			t.Fatalf("read_file on the hung filesystem returned (%v): it was meant to be stuck", err)
		case <-ctx.Done():
			t.Fatal("no thread of aibuddy ever waited in the FUSE client")
		case <-time.After(20 * time.Millisecond):
		}
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	select {
	case <-exited:
	case <-guard.C:
		t.Fatalf("aibuddy mcp was still running 30 s after SIGTERM with a call stuck on a hung filesystem; stderr:\n%s", stderr.String())
	}
	t.Logf("exited %v after SIGTERM (mcp.stopGrace 2s)", time.Since(sent).Round(10*time.Millisecond))
	if !strings.Contains(stderr.String(), "still running") {
		t.Errorf("stderr does not say a call was left running:\n%s", stderr.String())
	}
}
