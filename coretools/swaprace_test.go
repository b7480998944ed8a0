package coretools

// Issue 11, item 3: checks on the object actually opened. Each scenario
// runs a real swapper (sandboxtest.Swapper: renameat2(RENAME_EXCHANGE) of
// two names in a loop, in its own goroutine) while one tool at a time is
// called over and over on one of the names. A call that checks a name and
// then opens it again meets the other object about half the time: a link
// to the denied .env, a link to a file outside, a link to a denied
// folder, or a FIFO. The counts are logged and are the assertion: no
// secret in any result, no byte written through to a secret, no call that
// outlives its guard; and the race was met (calls refused at the
// Authorization stage, so the test has teeth).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/sandbox/sandboxtest"
	"github.com/aibuddy/aibuddy/tool"
)

// The secret marker: in every denied or outside file's content and in the
// name of a file in the denied folder. A result holding it is a leak.
const raceMarker = "abc123"

const (
	raceCallTimeout = 5 * time.Second  // each call's context
	raceGuard       = 20 * time.Second // a call still running then is stuck (it ignored its context)
)

// raceCalls is how many times each tool is called per scenario: 1,000
// (issue 11: ">= 1,000 calls"), 200 with -short (the race pass), which
// still meets the other object in far more than half the calls. The old
// code leaked read_file in 30/30 trials and grep in 329/1,000.
func raceCalls() int {
	if testing.Short() {
		return 200
	}
	return 1000
}

// raceCall is one tool call of a scenario; i counts the calls of the tool.
type raceCall struct {
	tool string
	args func(i int) map[string]any
}

// raceScenario is two names the swapper exchanges and the calls made on
// them.
type raceScenario struct {
	name  string
	setup func(t *testing.T, ws, outside string) (a, b string, repair func(), targets map[string]string)
	calls []raceCall
}

// raceCount is one tool's tally in one scenario.
type raceCount struct {
	calls, ok, denied, otherErr int
	leaks, writes, hangs        int
	firstLeak, firstOther       string
}

func TestSwapRaceChecksTheOpenedObject(t *testing.T) {
	onA := func(tl string, extra map[string]any) raceCall {
		return raceCall{tool: tl, args: func(i int) map[string]any {
			m := map[string]any{"path": "a.txt"}
			for k, v := range extra {
				m[k] = v
			}
			return m
		}}
	}
	editToggle := func(p string) raceCall {
		return raceCall{tool: "edit_file", args: func(i int) map[string]any {
			old, nw := "n=0", "n=1"
			if i%2 == 1 {
				old, nw = nw, old
			}
			return map[string]any{"path": p, "old_string": old, "new_string": nw}
		}}
	}
	walks := func(root string) []raceCall {
		return []raceCall{
			{tool: "grep", args: func(int) map[string]any {
				return map[string]any{"pattern": "n=", "path": root, "include_hidden": true, "no_ignore": true}
			}},
			{tool: "glob", args: func(int) map[string]any {
				return map[string]any{"pattern": "**", "path": root, "include_hidden": true, "no_ignore": true}
			}},
			{tool: "ls", args: func(int) map[string]any {
				return map[string]any{"path": root, "include_hidden": true, "depth": 2}
			}},
		}
	}
	fileCalls := append([]raceCall{
		onA("read_file", nil),
		onA("write_file", map[string]any{"content": "n=0 public\n"}),
		editToggle("a.txt"),
		onA("grep", map[string]any{"pattern": "n="}),
	}, walks(".")...)

	// repairLink puts a link back at one of the two names when a write
	// renamed a regular file over it.
	repairLink := func(a, b, target string) func() {
		return func() {
			if isLink(a) || isLink(b) {
				return
			}
			os.Remove(b)
			os.Symlink(target, b)
		}
	}
	scenarios := []raceScenario{
		{
			name: "file and a link to the denied .env",
			setup: func(t *testing.T, ws, outside string) (string, string, func(), map[string]string) {
				writeRaceFile(t, filepath.Join(ws, ".env"), "n=0 SECRET="+raceMarker+"-env\n")
				writeRaceFile(t, filepath.Join(ws, "a.txt"), "n=0 public\n")
				a, b := filepath.Join(ws, "a.txt"), filepath.Join(ws, "b")
				if err := os.Symlink(".env", b); err != nil {
					t.Fatal(err)
				}
				return a, b, repairLink(a, b, ".env"), map[string]string{filepath.Join(ws, ".env"): "n=0 SECRET=" + raceMarker + "-env\n"}
			},
			calls: fileCalls,
		},
		{
			name: "file and a link to a file outside",
			setup: func(t *testing.T, ws, outside string) (string, string, func(), map[string]string) {
				secret := filepath.Join(outside, "secret.txt")
				writeRaceFile(t, secret, "n=0 SECRET="+raceMarker+"-outside\n")
				writeRaceFile(t, filepath.Join(ws, "a.txt"), "n=0 public\n")
				a, b := filepath.Join(ws, "a.txt"), filepath.Join(ws, "b")
				if err := os.Symlink(secret, b); err != nil {
					t.Fatal(err)
				}
				return a, b, repairLink(a, b, secret), map[string]string{secret: "n=0 SECRET=" + raceMarker + "-outside\n"}
			},
			calls: fileCalls,
		},
		{
			name: "folder and a link to the denied folder",
			setup: func(t *testing.T, ws, outside string) (string, string, func(), map[string]string) {
				writeRaceFile(t, filepath.Join(ws, "secrets", "x.txt"), "n=0 SECRET="+raceMarker+"-dir\n")
				writeRaceFile(t, filepath.Join(ws, "secrets", "token-"+raceMarker+".txt"), "n=0 token\n")
				writeRaceFile(t, filepath.Join(ws, "d", "x.txt"), "n=0 public\n")
				a, b := filepath.Join(ws, "d"), filepath.Join(ws, "l")
				if err := os.Symlink("secrets", b); err != nil {
					t.Fatal(err)
				}
				return a, b, nil, map[string]string{filepath.Join(ws, "secrets", "x.txt"): "n=0 SECRET=" + raceMarker + "-dir\n"}
			},
			calls: append([]raceCall{
				{tool: "read_file", args: func(int) map[string]any { return map[string]any{"path": "d/x.txt"} }},
				{tool: "write_file", args: func(int) map[string]any { return map[string]any{"path": "d/x.txt", "content": "n=0 public\n"} }},
				editToggle("d/x.txt"),
			}, walks("d")...),
		},
		{
			name: "file and a FIFO",
			setup: func(t *testing.T, ws, outside string) (string, string, func(), map[string]string) {
				writeRaceFile(t, filepath.Join(ws, "a.txt"), "n=0 public\n")
				a, b := filepath.Join(ws, "a.txt"), filepath.Join(ws, "p")
				if err := syscall.Mkfifo(b, 0o644); err != nil {
					t.Skipf("host cannot make a FIFO: %v", err)
				}
				repair := func() {
					if isFIFO(a) || isFIFO(b) {
						return
					}
					os.Remove(b)
					syscall.Mkfifo(b, 0o644)
				}
				return a, b, repair, nil
			},
			calls: fileCalls,
		},
	}

	n := raceCalls()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			a, b, repair, targets := sc.setup(t, ws, outside)
			sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sb.Close() })
			opts := &FSOptions{DeniedPaths: []string{".env", "secrets"}}
			var total raceCount
			for _, c := range sc.calls {
				// A tool set of its own per tool: no read tracker shared
				// between tools.
				tools := fsToolsByName(t, sb, opts)
				sw := sandboxtest.StartSwapper(t, a, b, repair)
				cnt := runRaceTool(t, tools, c, n, sw, a, b, targets)
				swaps := sw.Stop()
				label := c.tool + " " + mustJSON(c.args(0))
				t.Logf("%-70s calls %4d  ok %4d  denied %4d  other errors %4d | leaks %d  writes through %d  hangs %d | swaps %d",
					label, cnt.calls, cnt.ok, cnt.denied, cnt.otherErr, cnt.leaks, cnt.writes, cnt.hangs, swaps)
				if cnt.firstOther != "" {
					// Honest errors of a raced call (ErrChanged, a stale
					// edit, an old_string the other object lacks).
					t.Logf("    first other error: %s", cnt.firstOther)
				}
				if cnt.leaks > 0 {
					t.Errorf("%s: %d of %d calls leaked a secret; first: %s", label, cnt.leaks, cnt.calls, cnt.firstLeak)
				}
				if cnt.writes > 0 {
					t.Errorf("%s: %d of %d calls wrote through to a secret", label, cnt.writes, cnt.calls)
				}
				if cnt.hangs > 0 {
					t.Errorf("%s: a call was still running %s after it started (its context ended at %s); stopped after %d calls",
						label, raceGuard, raceCallTimeout, cnt.calls)
				}
				total.calls += cnt.calls
				total.denied += cnt.denied
				total.leaks += cnt.leaks
				total.writes += cnt.writes
				total.hangs += cnt.hangs
			}
			t.Logf("scenario total: calls %d, refused at Authorization %d, leaks %d, writes through %d, hangs %d",
				total.calls, total.denied, total.leaks, total.writes, total.hangs)
			if total.denied == 0 {
				t.Errorf("no call met the swapped-in object (0 refusals in %d calls): the race was not exercised", total.calls)
			}
		})
	}
}

// runRaceTool calls c n times while sw swaps a and b, and tallies.
func runRaceTool(t *testing.T, tools map[string]*tool.Tool, c raceCall, n int, sw *sandboxtest.Swapper, a, b string, targets map[string]string) raceCount {
	t.Helper()
	var cnt raceCount
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), raceCallTimeout)
		done := make(chan *tool.Result, 1)
		args := c.args(i)
		go func() { done <- fsCallCtx(t, ctx, tools, c.tool, args) }()
		guard := time.NewTimer(raceGuard)
		var res *tool.Result
		select {
		case res = <-done:
			guard.Stop()
		case <-guard.C:
			// Stuck in a system call its context cannot stop (an open of
			// a FIFO with no writer). Let it go: stop swapping, then open
			// each name as a writer without blocking, which releases a
			// reader waiting in open(2).
			cnt.hangs++
			sw.Stop()
			release := time.NewTimer(raceGuard)
			for res == nil {
				releaseFIFO(a)
				releaseFIFO(b)
				select {
				case res = <-done:
				case <-release.C:
					cancel()
					t.Fatalf("%s: a stuck call did not return after its FIFO was opened for writing", c.tool)
				default:
				}
			}
			release.Stop()
		}
		cancel()
		cnt.calls++
		text := res.AllText()
		ev, _ := json.Marshal(res.Evidence)
		leak := strings.Contains(text, raceMarker) || strings.Contains(string(ev), raceMarker)
		if !res.IsError && (c.tool == "ls" || c.tool == "glob") {
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), ".env") {
					leak = true
				}
			}
		}
		if leak {
			cnt.leaks++
			if cnt.firstLeak == "" {
				cnt.firstLeak = fmt.Sprintf("call %d: %.300q", i+1, text)
			}
		}
		switch {
		case !res.IsError:
			cnt.ok++
		case res.Stage == tool.Authorization:
			cnt.denied++
		default:
			cnt.otherErr++
			if cnt.firstOther == "" {
				cnt.firstOther = fmt.Sprintf("%s: %.200s", res.Stage, text)
			}
		}
		for p, want := range targets {
			if got, err := os.ReadFile(p); err != nil || string(got) != want {
				cnt.writes++
				writeRaceFile(t, p, want)
			}
		}
		if cnt.hangs > 0 {
			break // the old code hangs at once; one is enough to fail
		}
	}
	return cnt
}

// releaseFIFO opens p as a FIFO writer without blocking and closes it: a
// reader blocked in open(2) on it returns (and reads end of file). Any
// other object, or no reader, fails harmlessly.
func releaseFIFO(p string) {
	fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err == nil {
		syscall.Close(fd)
	}
}

func writeRaceFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

func isLink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func isFIFO(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
