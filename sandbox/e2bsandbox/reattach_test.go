package e2bsandbox_test

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxenvd"
	"github.com/aibuddy/aibuddy/internal/proctest"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/e2bsandbox"
)

// openWith starts a fixture envd with opts (token and home set here) and
// an adapter on workspace.
func openWith(t *testing.T, workspace string, opts fxenvd.Options, so e2bsandbox.Options) (*e2bsandbox.Sandbox, *fxenvd.Server) {
	t.Helper()
	opts.AccessToken, opts.Home = token, workspace
	srv := fxenvd.Start(t, opts)
	so.EnvdURL, so.AccessToken, so.Workspace = srv.URL, token, workspace
	s, err := e2bsandbox.New(context.Background(), so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, srv
}

// isCommand tells an Exec's command stream (tagged "aibuddy-exec-…") from
// the adapter's helpers (kill, spool reads), which have no tag.
func isCommand(p fxenvd.CutPoint) bool { return strings.HasPrefix(p.Tag, "aibuddy-exec-") }

// cutter resets up to n streams of the command: a Start stream once it
// has sent 100,000 bytes, a Connect stream once it has sent 100,000 bytes
// or at the end event.
type cutter struct {
	mu   sync.Mutex
	n    int
	cuts []fxenvd.CutPoint
}

func (c *cutter) cut(p fxenvd.CutPoint) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cuts) >= c.n || !isCommand(p) {
		return false
	}
	if (p.Call == "Start" && p.Sent >= 100000) || (p.Call == "Connect" && (p.Sent >= 100000 || p.End)) {
		c.cuts = append(c.cuts, p)
		return true
	}
	return false
}

func (c *cutter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cuts)
}

// seqOutput is what "seq 1 n" writes, from this machine's seq.
func seqOutput(t *testing.T, args ...string) []byte {
	t.Helper()
	b, err := exec.Command("seq", args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A command's output stream reset once or twice mid-output (a proxy
// drop): Exec re-attaches with Process.Connect and the caller gets the
// whole output once, in order, and the exit code.
func TestReattachSeqSurvivesCuts(t *testing.T) {
	want := seqOutput(t, "1", "200000")
	for _, n := range []int{1, 2} {
		t.Run(map[int]string{1: "one cut", 2: "two cuts"}[n], func(t *testing.T) {
			c := &cutter{n: n}
			s, srv := openWith(t, t.TempDir(), fxenvd.Options{Cut: c.cut, RetainExited: time.Minute}, e2bsandbox.Options{})
			var out, errb bytes.Buffer
			res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "seq 1 200000; echo to-stderr >&2; exit 7", Stdout: &out, Stderr: &errb})
			if err != nil {
				t.Fatal(err)
			}
			if c.count() != n || srv.Connects() != n {
				t.Fatalf("%d cuts, %d Connect calls; want %d of each", c.count(), srv.Connects(), n)
			}
			if res.ExitCode != 7 || res.TimedOut || res.Cancelled {
				t.Fatalf("result %+v, want exit 7", res)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("stdout: %d bytes, want the %d of seq 1 200000 (first difference at %d)", out.Len(), len(want), firstDiff(out.Bytes(), want))
			}
			if errb.String() != "to-stderr\n" {
				t.Fatalf("stderr %q, want \"to-stderr\\n\"", errb.String())
			}
		})
	}
}

// The stream breaks while the command still runs (it waits for its stdin
// to close, which the test does once the adapter re-attaches): output
// after the re-attach, produced while attached or not, arrives once.
func TestReattachWhileRunning(t *testing.T) {
	want := seqOutput(t, "1", "200000")
	pr, pw := io.Pipe()
	c := &cutter{n: 2}
	var once sync.Once
	s, srv := openWith(t, t.TempDir(), fxenvd.Options{Cut: c.cut, RetainExited: time.Minute,
		OnConnect: func(context.Context, uint32) { once.Do(func() { pw.Close() }) },
	}, e2bsandbox.Options{})
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "seq 1 100000; cat >/dev/null; seq 100001 200000", Stdin: pr, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || c.count() < 1 || srv.Connects() != c.count() {
		t.Fatalf("result %+v after %d cuts and %d Connect calls, want exit 0, a Connect per cut", res, c.count(), srv.Connects())
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("stdout: %d bytes, want %d (first difference at %d)", out.Len(), len(want), firstDiff(out.Bytes(), want))
	}
}

// A stream cut after the process ended, on an envd that forgets ended
// processes: Connect finds nothing; the output is complete (from the
// spool), the exit status unknown, and the error says so.
func TestReattachAfterEndIsAClearError(t *testing.T) {
	cut := func(p fxenvd.CutPoint) bool { return isCommand(p) && p.Call == "Start" && p.End }
	s, _ := openWith(t, t.TempDir(), fxenvd.Options{Cut: cut}, e2bsandbox.Options{})
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "seq 1 1000; exit 3", Stdout: &out})
	if err == nil {
		t.Fatalf("result %+v, no error; want one saying the exit status is unknown", res)
	}
	for _, w := range []string{"Execution", "exit status is unknown", "Process.Connect", "run it again"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if res == nil || res.ExitCode != -1 {
		t.Fatalf("result %+v, want exit -1 (unknown)", res)
	}
	if want := seqOutput(t, "1", "1000"); !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("stdout %d bytes, want the %d of seq 1 1000", out.Len(), len(want))
	}
}

// A cancellation while the adapter re-attaches (envd holds the Connect
// until the caller has cancelled) kills the remote process group at once:
// SendSignal SIGKILL to the pid, and every process of the group is gone.
func TestCancelDuringReattachKills(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cut := func(p fxenvd.CutPoint) bool { return isCommand(p) && p.Call == "Start" } // at its first output
	s, srv := openWith(t, t.TempDir(), fxenvd.Options{Cut: cut,
		OnConnect: func(cctx context.Context, _ uint32) { cancel(); <-cctx.Done() },
	}, e2bsandbox.Options{})
	var pid uint32
	res, err := s.Exec(ctx, sandbox.ExecRequest{
		Command: "echo one; sleep 300",
		Started: func(p int) { pid = uint32(p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled {
		t.Fatalf("result %+v, want Cancelled", res)
	}
	if got := srv.Signals(); len(got) == 0 || got[len(got)-1] != "SIGKILL "+strconv.FormatUint(uint64(pid), 10) {
		t.Fatalf("signals %q, want SIGKILL %d", got, pid)
	}
	if left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.InGroup(int(pid)) }, 30*time.Second); err != nil || len(left) > 0 {
		t.Fatalf("the command's group %d still has %v (%v)", pid, left, err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A timeout holds across a re-attach (its timer runs from the start, not
// from the re-attach): the command is stopped as a timed-out one, its
// whole group gone.
func TestTimeoutAcrossReattach(t *testing.T) {
	cut := func(p fxenvd.CutPoint) bool { return isCommand(p) && p.Call == "Start" } // at its first output
	s, srv := openWith(t, t.TempDir(), fxenvd.Options{Cut: cut, RetainExited: time.Minute}, e2bsandbox.Options{KillDelay: 200 * time.Millisecond})
	var pid int
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "echo one; sleep 300", Timeout: 2 * time.Second, Stdout: &out,
		Started: func(p int) { pid = p }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || srv.Connects() != 1 || out.String() != "one\n" {
		t.Fatalf("result %+v after %d Connect calls, output %q; want TimedOut after one re-attach, \"one\\n\"", res, srv.Connects(), out.String())
	}
	if left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.InGroup(pid) }, 30*time.Second); err != nil || len(left) > 0 {
		t.Fatalf("the command's group %d still has %v (%v)", pid, left, err)
	}
}
