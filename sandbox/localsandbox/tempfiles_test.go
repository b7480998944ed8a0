package localsandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// The helper process of TestKilledWriteLeavesATempFileTheNextStartRemoves:
// it writes a large file through the sandbox until it is killed.
func TestHelperWriteHugeFile(t *testing.T) {
	ws := os.Getenv("AIBUDDY_TEST_WRITE_WS")
	if ws == "" {
		t.Skip("helper process only")
	}
	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.Write(context.Background(), sandbox.WriteRequest{Path: "data/big.bin", Content: bytes.Repeat([]byte("0123456789abcdef"), 16<<20)}) // 256 MiB
	t.Fatalf("the write finished (%v) before the test killed this process", err)
}

// Issue 10, item 5: a process killed with SIGKILL in the middle of Write
// leaves its temporary file, named as this package's; the next sandbox
// started on the workspace removes it, keeps the target as it was, and
// leaves alone a live process's temporary file and the user's files with
// similar names.
func TestKilledWriteLeavesATempFileTheNextStartRemoves(t *testing.T) {
	if testing.Short() {
		t.Skip("writes up to 256 MiB")
	}
	ws := t.TempDir()
	dataDir := filepath.Join(ws, "data")
	os.MkdirAll(dataDir, 0o755)
	os.WriteFile(filepath.Join(dataDir, "big.bin"), []byte("the old content\n"), 0o644)
	// The user's files: names close to ours, but not ours.
	user := map[string]string{
		"data/.aibuddy-tmp-notes":           "user",
		"data/.big.bin.swp":                 "vim",
		"data/aibuddy-tmp-1-0123456789ab-x": "no leading dot",
		"data/.aibuddy-tmp-1-XYZ-x":         "not our digits",
		fmt.Sprintf("data/.aibuddy-tmp-%d-0123456789ab-live", os.Getpid()): "a live process's",
	}
	for rel, content := range user {
		os.WriteFile(filepath.Join(ws, filepath.FromSlash(rel)), []byte(content), 0o644)
	}

	var stale string
	for attempt := 1; stale == ""; attempt++ {
		if attempt > 5 {
			t.Fatal("the helper never was caught in the middle of its write")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriteHugeFile$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AIBUDDY_TEST_WRITE_WS="+ws)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		prefix := fmt.Sprintf(".aibuddy-tmp-%d-", cmd.Process.Pid)
		// Wait for its temporary file to hold data, then freeze the
		// process and check the file is still there before killing it.
		deadline := time.Now().Add(30 * time.Second)
		for stale == "" && time.Now().Before(deadline) {
			ents, _ := os.ReadDir(dataDir)
			for _, e := range ents {
				if fi, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), prefix) && fi.Size() > 0 {
					cmd.Process.Signal(syscall.SIGSTOP)
					if _, err := os.Stat(filepath.Join(dataDir, e.Name())); err == nil {
						stale = "data/" + e.Name()
					}
				}
			}
			if stale == "" {
				time.Sleep(time.Millisecond) // polling for the file to appear, not proving anything
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}

	if got, _ := os.ReadFile(filepath.Join(dataDir, "big.bin")); string(got) != "the old content\n" {
		t.Fatalf("the target changed: %d bytes", len(got))
	}
	if _, err := os.Stat(filepath.Join(ws, stale)); err != nil {
		t.Fatalf("the killed write left no temporary file: %v", err)
	}

	sb := open(t, ws, nil)
	removed, err := sb.StaleTemps(t.Context())
	if err != nil || len(removed) != 1 || removed[0] != stale {
		t.Fatalf("removed %q (%v), want [%s]", removed, err, stale)
	}
	if _, err := os.Stat(filepath.Join(ws, stale)); !os.IsNotExist(err) {
		t.Errorf("the stale temporary file is still there: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dataDir, "big.bin")); string(got) != "the old content\n" {
		t.Errorf("the target changed after the sweep")
	}
	for rel, content := range user {
		if got, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel))); err != nil || string(got) != content {
			t.Errorf("user file %s: %q %v", rel, got, err)
		}
	}
}
