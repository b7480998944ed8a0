package main_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/sandbox/sandboxtest"
)

// Issue 11: a file swapped for a FIFO between a check and the open hung
// read_file, grep and edit_file for ever; a hung edit held the write lock,
// and `aibuddy mcp` then ignored SIGTERM (it waits for the calls in
// flight). Here a real `aibuddy mcp` serves a host that calls edit_file,
// read_file, write_file and grep on a name a swapper keeps exchanging with
// a FIFO (renameat2 RENAME_EXCHANGE): every call returns within its guard,
// some are refused as a FIFO (the race is met), and SIGTERM sent while
// calls are in flight ends the process.
func TestMCPFIFOSwapNeverHangsAndSigtermEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ws := t.TempDir()
	a, fifo := filepath.Join(ws, "a.txt"), filepath.Join(ws, "p")
	if err := os.WriteFile(a, []byte("n=0 public\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("host cannot make a FIFO: %v", err)
	}
	repair := func() { // a write_file may rename a regular file over the FIFO
		if isFIFOPath(a) || isFIFOPath(fifo) {
			return
		}
		os.Remove(fifo)
		syscall.Mkfifo(fifo, 0o644)
	}
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--data-dir", t.TempDir())
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-fifo-swap", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	exited := make(chan struct{})
	var state *os.ProcessState
	go func() { state, _ = cmd.Process.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default: // the old code: still stuck; let the FIFO readers go, then kill
			releaseFIFOs(a, fifo)
			cmd.Process.Kill()
			<-exited
		}
	})

	sw := sandboxtest.StartSwapper(t, a, fifo, repair)
	calls := map[string]map[string]any{
		"edit_file":  {"path": "a.txt", "old_string": "n=0", "new_string": "n=0 "},
		"read_file":  {"path": "a.txt"},
		"write_file": {"path": "a.txt", "content": "n=0 public\n"},
		"grep":       {"pattern": "n=", "path": "a.txt"},
	}
	n := 150
	if testing.Short() {
		n = 50
	}
	const callTimeout, guard = 10 * time.Second, 30 * time.Second
	var refused, ok, other, stuck atomic.Int64
	call := func(name string, args map[string]any) bool {
		cctx, ccancel := context.WithTimeout(ctx, callTimeout)
		defer ccancel()
		type answer struct {
			res *mcp.CallToolResult
			err error
		}
		done := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
			done <- answer{res, err}
		}()
		g := time.NewTimer(guard)
		defer g.Stop()
		select {
		case ans := <-done:
			switch res := ans.res; {
			case errors.Is(ans.err, context.DeadlineExceeded):
				// No answer within callTimeout for a one-line file: the
				// server is stuck (its handler is still in the system
				// call; only the host's wait ended).
				stuck.Add(1)
				return false
			case ans.err != nil:
				other.Add(1)
			case !res.IsError:
				ok.Add(1)
			case strings.Contains(resultText(res), "named pipe (FIFO)"):
				refused.Add(1)
			default:
				other.Add(1)
			}
			return true
		case <-g.C:
			stuck.Add(1)
			return false
		}
	}
	var wg sync.WaitGroup
	for name, args := range calls {
		wg.Go(func() {
			for range n {
				if !call(name, args) {
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d calls of edit_file, read_file, write_file and grep on a name swapped with a FIFO (%d swaps): %d refused as a FIFO, %d ok, %d other errors, %d stuck",
		4*n, sw.Swaps(), refused.Load(), ok.Load(), other.Load(), stuck.Load())
	if stuck.Load() != 0 {
		t.Errorf("%d calls got no answer within %s", stuck.Load(), callTimeout)
	}
	if refused.Load() == 0 {
		t.Errorf("no call met the FIFO: the race was not exercised")
	}

	// SIGTERM with calls in flight: the process ends.
	var inflight sync.WaitGroup
	started := make(chan struct{}, len(calls))
	for name, args := range calls {
		inflight.Go(func() {
			started <- struct{}{}
			for {
				cctx, ccancel := context.WithTimeout(ctx, callTimeout)
				_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
				ccancel()
				if err != nil {
					return // the session ended
				}
			}
		})
	}
	for range calls {
		<-started
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	g := time.NewTimer(guard)
	defer g.Stop()
	select {
	case <-exited:
	case <-g.C:
		t.Fatalf("aibuddy mcp did not exit %s after SIGTERM with calls in flight; stderr:\n%s", guard, stderr.String())
	}
	sw.Stop()
	inflight.Wait()
	// The transport may reap the process first (then state is nil); when
	// this wait did, the exit is the normal end of a host's stop.
	if state != nil {
		if code := state.ExitCode(); code != 0 && code != 143 {
			t.Errorf("exit code %d after SIGTERM (%v)", code, state)
		}
	}
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func isFIFOPath(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// releaseFIFOs opens each FIFO among paths as a writer without blocking:
// a reader stuck in open(2) on it returns.
func releaseFIFOs(paths ...string) {
	for _, p := range paths {
		if fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
			syscall.Close(fd)
		}
	}
}
