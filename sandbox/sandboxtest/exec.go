package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

// hangBound is the timeout the exec cases give a command that must end
// by other means (cancellation, the drain grace): reaching it is a
// failure, not a timing measurement.
const hangBound = 2 * time.Minute

// pgidLine prints the shell's process group id (field 5 of
// /proc/self/stat, after the command name) as the first output line.
const pgidLine = `read -r l </proc/self/stat; l=${l##*) }; set -- $l; echo "pgid=$3"`

// groupAlive is a command that prints "alive" when a non-zombie process
// of group $PG remains, else "gone". Its own group is left out: where
// each command gets its own pid namespace (localsandbox confined), group
// ids repeat across commands, and the earlier command's processes went
// with its namespace.
const groupAlive = `read -r l </proc/self/stat; l=${l##*) }; set -- $l; self=$3; ` +
	`for f in /proc/[0-9]*/stat; do IFS= read -r l 2>/dev/null <"$f" || continue; l=${l##*) }; set -- $l; ` +
	`if [ "$1" != Z ] && [ "$1" != X ] && [ "$3" = "$PG" ] && [ "$3" != "$self" ]; then echo alive; exit 0; fi; done; echo gone`

type execRun struct {
	res    *sandbox.ExecResult
	err    error
	stdout string
	stderr string
}

// lockedBuf is a writer the test reads while Exec may still write.
type lockedBuf struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
	max    int
	onData func(string)
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.writes++
	l.max = max(l.max, len(p))
	s := l.b.String()
	f := l.onData
	l.mu.Unlock()
	if f != nil {
		f(s)
	}
	return len(p), nil
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (e *env) exec(ctx context.Context, req sandbox.ExecRequest) execRun {
	e.t.Helper()
	var out, errb lockedBuf
	req.Stdout, req.Stderr = &out, &errb
	res, err := e.sb.Exec(ctx, req)
	return execRun{res: res, err: err, stdout: out.String(), stderr: errb.String()}
}

// pgidOf reads the "pgid=N" line pgidLine printed.
func pgidOf(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "pgid="); ok {
			return v
		}
	}
	t.Fatalf("no pgid line in %q", out)
	return ""
}

// assertGroupGone checks, with a new command in the sandbox, that no
// process of group pgid is left.
func (e *env) assertGroupGone(pgid string) {
	e.t.Helper()
	r := e.exec(context.Background(), sandbox.ExecRequest{Command: "PG=" + pgid + "; " + groupAlive, Timeout: hangBound})
	if r.err != nil {
		e.t.Fatalf("checking group %s: %v", pgid, r.err)
	}
	if strings.TrimSpace(r.stdout) != "gone" {
		e.t.Errorf("process group %s still has live members after Exec returned (%q)", pgid, r.stdout)
	}
}

// runExec is the exec contract of sandbox.ExecRequest / ExecResult
// (seed: "Long-running execution combines heartbeats, cancellation, and
// output bounds"; BH-021, BH-022, BH-030): exit codes and streams, the
// working directory's confinement, stdin closed, the environment,
// timeouts and cancellation stopping the whole process tree, lingering
// output, output streamed in bounded chunks. The commands are POSIX sh;
// the process-tree checks read /proc inside the sandbox (Linux).
func runExec(t *testing.T, newSandbox suite) {
	probe := newEnv(t, newSandbox)
	if !probe.sb.Supports(sandbox.OpExec) {
		reason := "Supports(OpExec) is false"
		if c, ok := probe.sb.(sandbox.OpChecker); ok && c.CheckOp(sandbox.OpExec) != nil {
			reason = c.CheckOp(sandbox.OpExec).Error()
		}
		t.Skipf("the adapter cannot run commands here: %s", reason)
	}

	t.Run("exit code and both streams", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: "echo out; echo err >&2; exit 3", Timeout: hangBound})
		noError(t, r.err)
		if r.res.ExitCode != 3 || r.stdout != "out\n" || r.stderr != "err\n" || r.res.TimedOut || r.res.Cancelled {
			t.Errorf("result %+v stdout %q stderr %q: want exit 3, out, err", r.res, r.stdout, r.stderr)
		}
	})

	t.Run("working directory is resolved inside the workspace", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		_, err := e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "sub/f.txt", Content: []byte("x")})
		noError(t, err)
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: "cat f.txt", Dir: "sub", Timeout: hangBound})
		noError(t, r.err)
		if r.stdout != "x" || r.res.ExitCode != 0 {
			t.Errorf("in sub: %+v %q", r.res, r.stdout)
		}
		_, err = e.sb.Exec(e.ctx, sandbox.ExecRequest{Command: "true", Dir: ".."})
		wantOutside(t, err)
		_, err = e.sb.Exec(e.ctx, sandbox.ExecRequest{Command: "true", Dir: "nope"})
		wantErr(t, err, sandbox.ErrNotFound)
		_, err = e.sb.Exec(e.ctx, sandbox.ExecRequest{Command: "true", Dir: "sub/f.txt"})
		wantErr(t, err, sandbox.ErrNotDir)
	})

	t.Run("stdin is closed", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: `if read -r x; then echo "got $x"; else echo eof; fi`, Timeout: hangBound})
		noError(t, r.err)
		if r.stdout != "eof\n" || r.res.TimedOut {
			t.Errorf("a read from stdin: %+v %q, want eof at once", r.res, r.stdout)
		}
	})

	t.Run("Stdin is fed to the end and Started gives the pid", func(t *testing.T) {
		// Hooks give their JSON here (sandbox.ExecRequest.Stdin), jobs
		// record the pid Started reports.
		e := newEnv(t, newSandbox)
		in := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
		var pids []int
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: `wc -c`, Stdin: strings.NewReader(in), Timeout: hangBound,
			Started: func(pid int) { pids = append(pids, pid) }})
		noError(t, r.err)
		if strings.TrimSpace(r.stdout) != "1048576" || r.res.ExitCode != 0 || r.res.TimedOut {
			t.Errorf("wc -c of 1 MiB on stdin: %+v %q, want 1048576", r.res, r.stdout)
		}
		if len(pids) > 1 || (len(pids) == 1 && pids[0] < 0) {
			t.Errorf("Started called %v: want at most once, with a pid >= 0", pids)
		}
		r = e.exec(e.ctx, sandbox.ExecRequest{Command: `true`, Stdin: strings.NewReader(in), Timeout: hangBound})
		noError(t, r.err)
		if r.res.ExitCode != 0 || r.res.TimedOut {
			t.Errorf("a command that never reads its stdin: %+v, want exit 0 at once", r.res)
		}
	})

	t.Run("Env is the whole environment", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: `echo "$AIBUDDY_T ${AIBUDDY_UNSET-unset}"`, Env: []string{"AIBUDDY_T=yes", "PATH=/usr/bin:/bin"}, Timeout: hangBound})
		noError(t, r.err)
		if r.stdout != "yes unset\n" {
			t.Errorf("env: %q, want %q", r.stdout, "yes unset\n")
		}
	})

	t.Run("a done context runs nothing", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		_, err := e.sb.Exec(ctx, sandbox.ExecRequest{Command: "echo ran > ran.txt"})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want one wrapping context.Canceled", err)
		}
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: "test -e ran.txt && echo ran || echo no", Timeout: hangBound})
		if r.stdout != "no\n" {
			t.Errorf("the command ran under a done context: %q", r.stdout)
		}
	})

	t.Run("BH-022 timeout stops the whole tree", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: pgidLine + "; sh -c 'sleep 600' & sleep 600 | cat", Timeout: 500 * time.Millisecond})
		noError(t, r.err)
		if !r.res.TimedOut || r.res.Cancelled || r.res.ExitCode != -1 {
			t.Errorf("result %+v: want TimedOut, exit -1", r.res)
		}
		if r.res.Duration < 500*time.Millisecond {
			t.Errorf("Duration %v is shorter than the timeout", r.res.Duration)
		}
		e.assertGroupGone(pgidOf(t, r.stdout))
	})

	t.Run("a group that ignores SIGTERM is killed", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		r := e.exec(e.ctx, sandbox.ExecRequest{
			Command: `trap '' TERM; ` + pgidLine + `; sh -c 'trap "" TERM; while :; do sleep 0.05; done' & while :; do sleep 0.05; done`,
			Timeout: 300 * time.Millisecond,
		})
		noError(t, r.err)
		if !r.res.TimedOut || r.res.ExitCode != -1 {
			t.Errorf("result %+v: want TimedOut, exit -1", r.res)
		}
		e.assertGroupGone(pgidOf(t, r.stdout))
	})

	t.Run("BH-030 cancellation stops the whole tree", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		out := &lockedBuf{onData: func(s string) {
			if strings.Contains(s, "\n") {
				cancel() // the command has started: cancel on that event
			}
		}}
		res, err := e.sb.Exec(ctx, sandbox.ExecRequest{Command: pgidLine + "; sh -c 'sleep 300 & sleep 300'", Timeout: hangBound, Stdout: out})
		noError(t, err)
		if !res.Cancelled || res.TimedOut || res.ExitCode != -1 {
			t.Errorf("result %+v: want Cancelled, exit -1", res)
		}
		e.assertGroupGone(pgidOf(t, out.String()))
	})

	t.Run("BH-021 output held open by a background writer is drained, then stopped", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: pgidLine + "; (while :; do echo tick; sleep 0.1; done) & sleep 0.5; echo fg-done", Timeout: hangBound})
		noError(t, r.err)
		if r.res.ExitCode != 0 || !r.res.Lingering || r.res.TimedOut || r.res.Cancelled {
			t.Errorf("result %+v: want exit 0, Lingering", r.res)
		}
		if !strings.Contains(r.stdout, "tick") || !strings.Contains(r.stdout, "fg-done") {
			t.Errorf("output %q: want ticks and fg-done", r.stdout)
		}
		e.assertGroupGone(pgidOf(t, r.stdout))
	})

	t.Run("a background job does not outlive the call", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		r := e.exec(e.ctx, sandbox.ExecRequest{Command: pgidLine + "; sleep 300 >/dev/null 2>&1 & echo started", Timeout: hangBound})
		noError(t, r.err)
		if r.res.ExitCode != 0 || r.res.TimedOut || r.res.Lingering {
			t.Errorf("result %+v: want exit 0, not Lingering (the job holds no output)", r.res)
		}
		e.assertGroupGone(pgidOf(t, r.stdout))
	})

	t.Run("output is streamed in chunks, not buffered whole", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		const n = 8 << 20
		var out lockedBuf
		res, err := e.sb.Exec(e.ctx, sandbox.ExecRequest{Command: "head -c 8388608 /dev/zero", Stdout: &out, Timeout: hangBound})
		noError(t, err)
		if res.ExitCode != 0 || out.b.Len() != n {
			t.Fatalf("result %+v, %d bytes, want exit 0 and %d", res, out.b.Len(), n)
		}
		if out.max >= n/2 || out.writes < 4 {
			t.Errorf("%d writes, the largest %d bytes: the output of %d bytes came (almost) whole", out.writes, out.max, n)
		}
	})
}
