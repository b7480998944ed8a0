package localsandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aibuddy/aibuddy/sandbox"
)

// A file under another process's write lease (fcntl F_SETLEASE): an open
// of it for reading blocks until the holder lets go or the kernel's
// lease-break-time (45 s by default) runs out, and a context cannot stop
// it. The sandbox opens with O_NONBLOCK, so the call fails at once
// (EWOULDBLOCK) with an error that says what happened, instead of hanging.
func TestReadOfALeasedFileDoesNotBlock(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, "leased.txt")
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		t.Skipf("no write lease here: %v", err)
	}
	sb := open(t, ws, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := sb.Read(ctx, sandbox.ReadRequest{Path: "leased.txt"})
		done <- err
	}()
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	select {
	case err := <-done:
		t.Logf("read of a leased file: %v", err)
		if err == nil || !strings.Contains(err.Error(), "lease") {
			t.Errorf("error %v, want one that names the lease", err)
		}
	case <-guard.C:
		unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
		<-done
		t.Fatal("the read blocked on the lease")
	}
}
