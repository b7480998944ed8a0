//go:build unix

package sandboxtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// makeSpecials makes a FIFO, a socket and (where this process may) a
// character device in ws and returns their names with what a refusal must
// call them.
func makeSpecials(t *testing.T, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := unix.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Skipf("host cannot make a FIFO: %v", err)
	}
	out["pipe"] = "named pipe (FIFO)"

	// A socket is bound under a short folder (sun_path holds about 100
	// bytes), then renamed into the workspace.
	short, err := os.MkdirTemp("", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(short)
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0); err == nil {
		sp := filepath.Join(short, "s")
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: sp}); err == nil {
			if os.Rename(sp, filepath.Join(ws, "sock")) == nil {
				out["sock"] = "socket"
			}
		}
		unix.Close(fd)
	}
	if _, ok := out["sock"]; !ok {
		t.Log("no socket case: a socket could not be bound and moved into the workspace here")
	}

	// /dev/zero's numbers: a read of it never ends.
	if err := unix.Mknod(filepath.Join(ws, "zero"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err == nil {
		out["zero"] = "character device"
	} else {
		t.Logf("no device case: mknod needs CAP_MKNOD (%v)", err)
	}
	return out
}

// makeDeep makes n nested folders "d" under ws with a file f.txt at the
// bottom, one component at a time relative to the folder above (a path of
// n levels is far over PATH_MAX), and returns the file's workspace path.
func makeDeep(t *testing.T, ws string, n int) (string, bool) {
	t.Helper()
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			unix.Close(fd)
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	f, err := unix.Openat(fd, "f.txt", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(f, []byte("x\n"))
	unix.Close(f)
	return strings.Repeat("d/", n) + "f.txt", true
}

// mkfifo makes a FIFO at p, or skips t.
func mkfifo(t *testing.T, p string) bool {
	t.Helper()
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Skipf("host cannot make a FIFO: %v", err)
	}
	return true
}

func mkfifoQuiet(p string) { unix.Mkfifo(p, 0o644) }

// releaseFIFO opens p as a FIFO writer without blocking and closes it: a
// reader blocked in open(2) on it returns. Any other object, or no reader,
// fails harmlessly.
func releaseFIFO(p string) {
	if fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
	}
}
