package localsandbox_test

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// readChars is this process's rchar from /proc/self/io: the bytes its
// read system calls have returned so far (the kernel's count, not ours).
func readChars(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io here (%v): the bytes a call reads cannot be counted", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("/proc/self/io has no rchar line")
	return 0
}

// Issue 11: read_file hashed a 10 GiB sparse file whole (30 s). Read now
// reads at most Options.MaxReadBytes of it, counted by the kernel (rchar),
// not by time: the default bound and a small configured one.
func TestReadOfASparseFileReadsAtMostTheBound(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("rchar is linux's")
	}
	ws := t.TempDir()
	p := filepath.Join(ws, "huge.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10 << 30); err != nil {
		t.Skipf("no 10 GiB sparse file here: %v", err)
	}
	f.Close()
	for _, c := range []struct {
		name  string
		bound int64 // Options.MaxReadBytes; 0 is the default
		want  int64
	}{{"default bound", 0, 64 << 20}, {"maxReadBytes 1 MiB", 1 << 20, 1 << 20}} {
		t.Run(c.name, func(t *testing.T) {
			sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true, MaxReadBytes: c.bound})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			before := readChars(t)
			r, err := sb.Read(t.Context(), sandbox.ReadRequest{Path: "huge.bin"})
			read := readChars(t) - before
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Read of a %d-byte sparse file: %d bytes read from the kernel, HashedBytes %d, Truncated %v", r.Size, read, r.HashedBytes, r.Truncated)
			if r.HashedBytes != c.want || !r.Truncated {
				t.Errorf("HashedBytes %d, Truncated %v; want %d, true", r.HashedBytes, r.Truncated, c.want)
			}
			// The bound, the one byte that tells more follows, and the
			// 1 KiB of /proc/self/io itself.
			if read > c.want+64<<10 {
				t.Errorf("%d bytes were read, over the %d-byte bound", read, c.want)
			}
		})
	}
}
