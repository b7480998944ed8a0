package coretools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/internal/proctest"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// execHangBound proves "does not hang"; speed goals live in the benchmark.
const execHangBound = 30 * time.Second

// shortStops are short sandbox stop delays for the BH-021/022/030 cases,
// so that "returns within the grace" is checked against known values:
// the call must return within the command's own time + the delay +
// stopMargin (generous for a loaded machine; the final drain after the
// group kill is 250 ms of it).
var shortStops = &localsandbox.Options{KillDelay: 300 * time.Millisecond, DrainGrace: 300 * time.Millisecond}

const stopMargin = 8 * time.Second

type execRig struct {
	t    *testing.T
	ws   string
	sb   *localsandbox.Sandbox
	tool *tool.Tool
}

func newExecRig(t *testing.T, sbOpts *localsandbox.Options, opts *ExecuteOptions) *execRig {
	t.Helper()
	sb, err := localsandbox.New(t.TempDir(), sbOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return &execRig{t: t, ws: sb.Workspace(), sb: sb, tool: Execute(sb, opts)}
}

// eventLog records the client events of one call.
type eventLog struct {
	mu     sync.Mutex
	events []tool.Event
}

func (l *eventLog) add(e tool.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) count(k tool.EventKind) (n int, data string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Kind == k {
			n++
			data += string(e.Data)
		}
	}
	return n, data
}

// call runs execute with args and checks it returned within the bound.
func (r *execRig) call(ctx context.Context, args map[string]any) (*tool.Result, *eventLog) {
	r.t.Helper()
	in, _ := json.Marshal(args)
	log := &eventLog{}
	start := time.Now()
	res := r.tool.Call(ctx, &tool.Call{ID: "call_" + strconv.Itoa(time.Now().Nanosecond()), Input: in, Events: log.add})
	if d := time.Since(start); d > execHangBound {
		r.t.Errorf("execute took %v, over the %v bound", d, execHangBound)
	}
	return res, log
}

func evInt(t *testing.T, r *tool.Result, key tool.EvidenceKey) int64 {
	t.Helper()
	switch v := r.Evidence[key].(type) {
	case int:
		return int64(v)
	case int64:
		return v
	}
	t.Fatalf("evidence %s = %#v", key, r.Evidence[key])
	return 0
}

// body is the projection after the header's "---" line.
func body(r *tool.Result) string {
	_, b, _ := strings.Cut(r.AllText(), "\n---\n")
	return b
}

// treeLine is the shell code whose output line identifies a command's
// processes on the host (proctest.TreeLine).
const treeLine = proctest.TreeLine

// groupGone checks that no live process of the command is left
// (proctest.Live: its PID namespace when confined, else its process
// group; zombies count as gone), waiting on their ends for at most 5 s; a
// group left over is killed.
func groupGone(t *testing.T, id proctest.Tree) {
	t.Helper()
	left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.Live(id) }, 5*time.Second)
	if err != nil {
		t.Error(err)
	}
	if len(left) > 0 {
		t.Errorf("the command's processes %+v survived the call: %v", id, left)
		if !id.Confined() {
			syscall.Kill(-id.PGID, syscall.SIGKILL)
		}
	}
}

// pidFromBody parses the first line of the output as a treeLine.
func pidFromBody(t *testing.T, r *tool.Result) proctest.Tree {
	t.Helper()
	id, err := proctest.ParseTree(body(r))
	if err != nil {
		t.Fatalf("%v: %q", err, r.AllText())
	}
	return id
}

func TestExecuteNonZeroExitIsAResult(t *testing.T) {
	r := newExecRig(t, nil, nil)
	res, log := r.call(context.Background(), map[string]any{"command": "echo hello; echo oops >&2; exit 3"})
	if res.IsError {
		t.Fatalf("non-zero exit became an error: %s", res.AllText())
	}
	txt := res.AllText()
	if !strings.HasPrefix(txt, "exit code: 3 · duration: ") || body(res) != "hello\noops" ||
		!strings.Contains(txt, "5 characters from stderr") {
		t.Errorf("result:\n%s", txt)
	}
	if evInt(t, res, "exit_code") != 3 || res.Evidence["timed_out"] != false || res.Evidence["cancelled"] != false ||
		evInt(t, res, "output_chars") != 11 || evInt(t, res, "omitted_chars") != 0 {
		t.Errorf("evidence %v", res.Evidence)
	}
	if _, out := log.count(tool.EventStdout); out != "hello\n" {
		t.Errorf("stdout events %q", out)
	}
	if _, errs := log.count(tool.EventStderr); errs != "oops\n" {
		t.Errorf("stderr events %q", errs)
	}
}

func TestExecuteNoOutput(t *testing.T) {
	r := newExecRig(t, nil, nil)
	res, _ := r.call(context.Background(), map[string]any{"command": "true"})
	if res.IsError || !strings.Contains(res.AllText(), "output: none") || strings.Contains(res.AllText(), "---") {
		t.Errorf("result:\n%s", res.AllText())
	}
}

// Heartbeats come every Heartbeat while the command runs, and none after
// the call returned. In a synctest bubble (fake clock) over a sandbox whose
// command runs until the test releases it: exactly 10 heartbeats in 10.5
// intervals, then none in the 10 intervals after the return.
func TestExecuteHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 100 * time.Millisecond
		sb := heldSandbox{release: make(chan struct{})}
		tl := Execute(sb, &ExecuteOptions{Heartbeat: every})
		log := &eventLog{}
		done := make(chan *tool.Result, 1)
		go func() {
			done <- tl.Call(context.Background(), &tool.Call{ID: "hb", Input: []byte(`{"command":"held"}`), Events: log.add})
		}()
		time.Sleep(10*every + every/2)
		synctest.Wait()
		if n, _ := log.count(tool.EventHeartbeat); n != 10 {
			t.Errorf("%d heartbeats in %v at %v, want 10", n, 10*every+every/2, every)
		}
		close(sb.release)
		res := <-done
		atReturn, _ := log.count(tool.EventHeartbeat)
		time.Sleep(10 * every)
		synctest.Wait()
		if after, _ := log.count(tool.EventHeartbeat); after != atReturn {
			t.Errorf("%d heartbeats arrived after the call returned", after-atReturn)
		}
		if strings.Contains(strings.ToLower(res.AllText()), "heartbeat") || body(res) != "done" {
			t.Errorf("heartbeats leaked into the model text:\n%s", res.AllText())
		}
	})
}

func TestExecuteSchema(t *testing.T) {
	r := newExecRig(t, nil, nil)
	for _, args := range []map[string]any{
		{},
		{"command": ""},
		{"command": "true", "timeout_ms": 0},
		{"command": "true", "timeout_ms": 1.5},
		{"command": "true", "extra": 1},
	} {
		res, _ := r.call(context.Background(), args)
		if !res.IsError || res.Stage != tool.Parameters {
			t.Errorf("%v: %s", args, res.AllText())
		}
	}
}

func TestExecuteTimeoutClamped(t *testing.T) {
	r := newExecRig(t, nil, &ExecuteOptions{MaxTimeout: 3 * time.Second})
	res, _ := r.call(context.Background(), map[string]any{"command": "true", "timeout_ms": 999999})
	if res.IsError || !strings.Contains(res.AllText(), "note: timeout_ms 999999 is over the maximum 3000; clamped to 3 s") ||
		evInt(t, res, "timeout_ms") != 3000 {
		t.Errorf("result:\n%s\n%v", res.AllText(), res.Evidence)
	}
}

func TestExecuteWorkdir(t *testing.T) {
	r := newExecRig(t, nil, nil)
	os.MkdirAll(filepath.Join(r.ws, "sub"), 0o755)
	res, _ := r.call(context.Background(), map[string]any{"command": "pwd -P", "workdir": "sub"})
	if res.IsError || body(res) != filepath.Join(r.ws, "sub") {
		t.Errorf("workdir sub:\n%s", res.AllText())
	}
	res, _ = r.call(context.Background(), map[string]any{"command": "pwd", "workdir": "../.."})
	if !res.IsError || res.Stage != tool.Authorization || !strings.Contains(res.AllText(), "outside the workspace") {
		t.Errorf("workdir ../..: %s", res.AllText())
	}
	res, _ = r.call(context.Background(), map[string]any{"command": "pwd", "workdir": "nope"})
	if !res.IsError || res.Stage != tool.Parameters {
		t.Errorf("workdir nope: %s", res.AllText())
	}
}

func TestExecuteEnvPassThrough(t *testing.T) {
	t.Setenv("AIBUDDY_TEST_PASS", "passed")
	t.Setenv("AIBUDDY_TEST_SECRET", "s3cret")
	r := newExecRig(t, nil, &ExecuteOptions{Env: []string{"AIBUDDY_TEST_PASS"}})
	res, _ := r.call(context.Background(), map[string]any{"command": `echo "$AIBUDDY_TEST_PASS/$AIBUDDY_TEST_SECRET/$NO_COLOR"`})
	if body(res) != "passed//1" {
		t.Errorf("env: %s", res.AllText())
	}
}

// The command's environment says "not interactive" (CI=1 and the rest of
// localsandbox.DefaultEnv's set), and the settings' overrides (Env:
// NAME=VALUE, -NAME, NAME) change it: checked through real programs that
// read them (sh's parameter expansion and git's own view of its pager).
func TestExecuteNonInteractiveEnv(t *testing.T) {
	r := newExecRig(t, nil, nil)
	res, _ := r.call(context.Background(), map[string]any{"command": `echo "CI=${CI-unset} DEBIAN_FRONTEND=${DEBIAN_FRONTEND-unset} GIT_TERMINAL_PROMPT=$GIT_TERMINAL_PROMPT GH_PROMPT_DISABLED=$GH_PROMPT_DISABLED PIP_NO_INPUT=$PIP_NO_INPUT MANPAGER=$MANPAGER GH_PAGER=$GH_PAGER"`})
	if want := "CI=1 DEBIAN_FRONTEND=noninteractive GIT_TERMINAL_PROMPT=0 GH_PROMPT_DISABLED=1 PIP_NO_INPUT=1 MANPAGER=cat GH_PAGER=cat"; body(res) != want {
		t.Errorf("default environment:\n got %s\nwant %s", body(res), want)
	}
	t.Setenv("AIBUDDY_TEST_PAGER", "less -R")
	r = newExecRig(t, nil, &ExecuteOptions{Env: []string{"CI=0", "-DEBIAN_FRONTEND", "GIT_PAGER=more", "AIBUDDY_TEST_PAGER"}})
	res, _ = r.call(context.Background(), map[string]any{"command": `echo "CI=${CI-unset} DEBIAN_FRONTEND=${DEBIAN_FRONTEND-unset} T=$AIBUDDY_TEST_PAGER"`})
	if want := "CI=0 DEBIAN_FRONTEND=unset T=less -R"; body(res) != want {
		t.Errorf("overridden environment:\n got %s\nwant %s", body(res), want)
	}
	if _, err := exec.LookPath("git"); err == nil {
		res, _ = r.call(context.Background(), map[string]any{"command": "git var GIT_PAGER"})
		if body(res) != "more" {
			t.Errorf("git var GIT_PAGER: %s", res.AllText())
		}
	}
}

// unsupportedSandbox offers no operation; slowSandbox ignores ctx and
// never stops. Both embed the interface for the methods they do not use.
type unsupportedSandbox struct{ sandbox.Sandbox }

func (unsupportedSandbox) Kind() sandbox.Kind       { return "none" }
func (unsupportedSandbox) Supports(sandbox.Op) bool { return false }

type stuckSandbox struct {
	sandbox.Sandbox
	release chan struct{}
}

func (stuckSandbox) Supports(sandbox.Op) bool { return true }
func (s stuckSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (*sandbox.ExecResult, error) {
	req.Stdout.Write([]byte("partial\n"))
	<-s.release // ignores ctx and its own timeout
	req.Stdout.Write([]byte("after the call ended\n"))
	return &sandbox.ExecResult{}, nil
}

// heldSandbox runs every command until release is closed; it then prints
// "done" and exits 0.
type heldSandbox struct {
	sandbox.Sandbox
	release chan struct{}
}

func (heldSandbox) Supports(sandbox.Op) bool { return true }
func (s heldSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (*sandbox.ExecResult, error) {
	<-s.release
	req.Stdout.Write([]byte("done\n"))
	return &sandbox.ExecResult{}, nil
}

func TestExecuteUnsupportedSandbox(t *testing.T) {
	res := Execute(unsupportedSandbox{}, nil).Call(context.Background(), &tool.Call{Input: []byte(`{"command":"true"}`)})
	if !res.IsError || res.Stage != tool.Execution || !strings.Contains(res.AllText(), "does not run commands") {
		t.Errorf("%s", res.AllText())
	}
}

// A sandbox that ignores ctx and its timeout holds the call exactly
// timeout + Grace, and at most Grace after the caller cancels (synctest:
// the durations are exact on the fake clock).
func TestExecuteHardDeadlineOnStuckSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sb := stuckSandbox{release: make(chan struct{})}
		defer close(sb.release)
		tl := Execute(sb, &ExecuteOptions{Grace: 300 * time.Millisecond})
		start := time.Now()
		res := tl.Call(context.Background(), &tool.Call{Input: []byte(`{"command":"x","timeout_ms":200}`)})
		if d := time.Since(start); d != 500*time.Millisecond {
			t.Errorf("a stuck sandbox held the call %v, want the 200 ms timeout + 300 ms grace", d)
		}
		txt := res.AllText()
		if !res.IsError || res.Stage != tool.Execution || res.Evidence["sandbox_unresponsive"] != true ||
			res.Evidence["timed_out"] != true || !strings.Contains(txt, "may still be running") || body(res) != "partial" {
			t.Errorf("result:\n%s\n%v", txt, res.Evidence)
		}
		// Cancellation: the sandbox gets at most Grace after ctx is done.
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start = time.Now()
		res = tl.Call(ctx, &tool.Call{Input: []byte(`{"command":"x"}`)})
		if d := time.Since(start); d != 400*time.Millisecond {
			t.Errorf("a cancelled stuck call took %v, want the 100 ms to the cancel + 300 ms grace", d)
		}
		if !res.IsError || res.Evidence["cancelled"] != true || res.Evidence["timed_out"] != false {
			t.Errorf("cancelled stuck call:\n%s\n%v", res.AllText(), res.Evidence)
		}
	})
}

// BH-021: a chatty background process after the foreground ends.
func TestExecuteBH021BackgroundWriter(t *testing.T) {
	r := newExecRig(t, shortStops, &ExecuteOptions{MaxOutputChars: 100})
	start := time.Now()
	res, log := r.call(context.Background(), map[string]any{
		"command": treeLine + "; (while :; do echo tick; sleep 0.1; done) & sleep 1; echo fg-done"})
	// The foreground's 1 s, then at most the drain grace (it runs from the
	// start: here a quarter of it after the exit), then the kill.
	if d, bound := time.Since(start), time.Second+shortStops.DrainGrace+stopMargin; d > bound {
		t.Errorf("returned after %v, over 1 s + drain grace %v + margin %v", d, shortStops.DrainGrace, stopMargin)
	}
	if res.IsError || evInt(t, res, "exit_code") != 0 || res.Evidence["lingering"] != true {
		t.Fatalf("result:\n%s\n%v", res.AllText(), res.Evidence)
	}
	_, streamed := log.count(tool.EventStdout)
	if !strings.Contains(streamed, "fg-done") || strings.Count(streamed, "tick") < 5 {
		t.Errorf("streamed %q", streamed)
	}
	// The cap still applies to what was captured.
	if evInt(t, res, "shown_chars") > 100 || !strings.Contains(res.AllText(), "background processes kept the output open") {
		t.Errorf("result:\n%s", res.AllText())
	}
	groupGone(t, pidFromBody(t, res))
}

// BH-022: the timeout kills the whole tree, with partial output.
func TestExecuteBH022Timeout(t *testing.T) {
	r := newExecRig(t, shortStops, nil)
	start := time.Now()
	res, _ := r.call(context.Background(), map[string]any{"command": treeLine + "; echo started; sleep 600 | cat", "timeout_ms": 2000})
	if d, bound := time.Since(start), 2*time.Second+shortStops.KillDelay+stopMargin; d > bound {
		t.Errorf("returned after %v, over the 2 s timeout + kill delay %v + margin %v", d, shortStops.KillDelay, stopMargin)
	}
	txt := res.AllText()
	if !res.IsError || res.Stage != tool.Execution || res.Evidence["timed_out"] != true || evInt(t, res, "exit_code") != -1 ||
		evInt(t, res, "duration_ms") < 2000 || !strings.Contains(txt, "timed out after 2 s") || !strings.Contains(body(res), "started") {
		t.Errorf("result:\n%s\n%v", txt, res.Evidence)
	}
	groupGone(t, pidFromBody(t, res))
}

// BH-023: a process-substitution grandchild holds stdout.
func TestExecuteBH023ProcessSubstitution(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	r := newExecRig(t, &localsandbox.Options{Shell: "bash"}, nil)
	res, _ := r.call(context.Background(), map[string]any{
		"command": "exec > >(tee -a run.log) 2>&1; (sleep 100 &); echo built; exit 0"})
	if res.IsError || evInt(t, res, "exit_code") != 0 || body(res) != "built" {
		t.Errorf("result:\n%s", res.AllText())
	}
	if b, _ := os.ReadFile(filepath.Join(r.ws, "run.log")); string(b) != "built\n" {
		t.Errorf("run.log %q", b)
	}
}

// BH-025: no editor or pager waits for a terminal.
func TestExecuteBH025Editor(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	r := newExecRig(t, nil, nil)
	res, _ := r.call(context.Background(), map[string]any{"command": "git init -q . && git -c user.email=t@e -c user.name=T commit -q --allow-empty -m one && git -c user.email=t@e -c user.name=T commit --allow-empty; echo rc=$?; git log | cat | wc -l"})
	if res.IsError || !strings.Contains(body(res), "rc=1") {
		t.Errorf("result:\n%s", res.AllText())
	}
}

// BH-026: ANSI sequences are stripped before the cap; the client still
// gets the raw stream.
func TestExecuteBH026ANSI(t *testing.T) {
	r := newExecRig(t, nil, nil)
	res, log := r.call(context.Background(), map[string]any{
		"command": `for i in $(seq 1 1500); do printf '\033[2m12:00:%02d\033[0m \033[1;34mDEBUG\033[0m job step %d\n' $((i%60)) $i; done`})
	b := body(res)
	if strings.ContainsRune(b, 0x1b) || !strings.HasPrefix(b, "12:00:01 DEBUG job step 1\n") || !strings.HasSuffix(b, "12:00:00 DEBUG job step 1500") {
		t.Errorf("projection: %.200q", b)
	}
	// Only text counts: the cap is spent on characters, not escape codes.
	var text int
	for i := 1; i <= 1500; i++ {
		text += len(fmt.Sprintf("12:00:%02d DEBUG job step %d\n", i%60, i))
	}
	if evInt(t, res, "output_chars") != int64(text) || evInt(t, res, "shown_chars") != 30000 {
		t.Errorf("counted %v, want %d characters of text", res.Evidence, text)
	}
	if _, raw := log.count(tool.EventStdout); !strings.Contains(raw, "\x1b[1;34m") {
		t.Error("the client stream lost the raw bytes")
	}
}

// BH-027: carriage-return progress frames collapse.
func TestExecuteBH027CarriageReturn(t *testing.T) {
	r := newExecRig(t, nil, nil)
	res, _ := r.call(context.Background(), map[string]any{
		"command": `for p in 10 20 30 40 50 60 70 80 90 100; do printf '\rfetch %3d%%' $p; done; printf '\nready\r\n'`})
	if body(res) != "fetch 100%\nready" || evInt(t, res, "output_chars") != 17 {
		t.Errorf("result:\n%q\n%v", res.AllText(), res.Evidence)
	}
}

// BH-029: one line longer than the cap.
func TestExecuteBH029LongLine(t *testing.T) {
	r := newExecRig(t, nil, nil)
	for _, cmd := range []string{`python3 -c "print('q'*80000)"`, `python3 -c "import sys; sys.stdout.write('q'*80000)"`} {
		res, _ := r.call(context.Background(), map[string]any{"command": cmd})
		head, tail, ok := strings.Cut(body(res), "\n[50,00")
		_, tail, _ = strings.Cut(tail, " characters omitted: line 1]\n")
		if !ok || head != strings.Repeat("q", 15000) || strings.Trim(tail, "q") != "" || len(tail) < 14999 {
			t.Errorf("%s: %.300q", cmd, res.AllText())
		}
	}
}

// BH-030: cancellation stops the tree and still yields a tool_result. The
// cancel comes when the command's first line (its pid) has streamed back:
// the tree is running then.
func TestExecuteBH030Cancel(t *testing.T) {
	r := newExecRig(t, shortStops, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, _ := json.Marshal(map[string]any{"command": treeLine + "; sh -c 'sleep 300 & sleep 300'"})
	var cancelledAt time.Time
	var once sync.Once
	res := r.tool.Call(ctx, &tool.Call{ID: "call_bh030", Input: in, Events: func(e tool.Event) {
		if e.Kind == tool.EventStdout {
			once.Do(func() { cancelledAt = time.Now(); cancel() })
		}
	}})
	if cancelledAt.IsZero() {
		t.Fatalf("the call returned before the command printed its pid:\n%s", res.AllText())
	}
	if d, bound := time.Since(cancelledAt), shortStops.KillDelay+stopMargin; d > bound {
		t.Errorf("returned %v after the cancel, over the kill delay %v + margin %v", d, shortStops.KillDelay, stopMargin)
	}
	if !res.IsError || res.Stage != tool.Execution || res.Evidence["cancelled"] != true ||
		!strings.Contains(res.AllText(), "cancelled by the caller after ") {
		t.Errorf("result:\n%s\n%v", res.AllText(), res.Evidence)
	}
	groupGone(t, pidFromBody(t, res))
}

// BH-045: the exit code sits in the header; the tail keeps the error.
func TestExecuteBH045ExitCodeAndTail(t *testing.T) {
	r := newExecRig(t, nil, nil)
	res, _ := r.call(context.Background(), map[string]any{"command": `python3 -c "import sys; sys.stdout.write('w'*60000); sys.stdout.flush(); sys.stderr.write('\nerror[E42]: type mismatch in build\n'); sys.exit(101)"`})
	txt := res.AllText()
	notice, rest, _ := strings.Cut(txt, "\n")
	if _, cut := tool.ParseCut(notice); !cut || res.IsError || !strings.HasPrefix(rest, "exit code: 101 ") || !strings.HasSuffix(body(res), "\nerror[E42]: type mismatch in build") {
		t.Errorf("result:\n%.300q ... %q", txt, txt[len(txt)-100:])
	}
}

// BH-046 and BH-047: the marker is exact, the header states true totals,
// and the full output is kept where the result says.
func TestExecuteBH046FullOutputRecoverable(t *testing.T) {
	dir := t.TempDir()
	r := newExecRig(t, nil, &ExecuteOptions{OutputDir: dir})
	script := bh046Output()
	os.WriteFile(filepath.Join(r.ws, "out.txt"), []byte(script), 0o644)
	res, _ := r.call(context.Background(), map[string]any{"command": "printf '\\033[1m'; cat out.txt"})
	txt := res.AllText()
	if !strings.Contains(body(res), "\n[49,940 characters omitted: lines 582-2,446]\n") ||
		!strings.HasPrefix(txt, "[cut by execute at the 30,000-character output cap: 79,940 characters in 3,001 lines produced; 30,000 characters shown") {
		t.Errorf("result:\n%.600s", txt)
	}
	path, _ := res.Evidence["full_output_path"].(string)
	raw, err := os.ReadFile(path)
	if err != nil || string(raw) != "\x1b[1m"+script || !strings.Contains(txt, "full output: "+path) ||
		!strings.Contains(txt, "sed -n '582,2446p' "+path) {
		t.Fatalf("full output %q: %v\n%.600s", path, err, txt)
	}
	// Without a task id in ctx the file is OutputDir/<toolCallId>.log, and
	// the header names the same lines for view_tool_call.
	id := strings.TrimSuffix(filepath.Base(path), ".log")
	if filepath.Dir(path) != dir || !strings.HasPrefix(id, "call_") ||
		!strings.Contains(txt, `; recover them with view_tool_call {"id":"`+id+`","lines":"582-2446"}`) {
		t.Errorf("path %s, header:\n%.800s", path, txt)
	}
	// Recover the decisive line by pattern, as the header suggests.
	res2, _ := r.call(context.Background(), map[string]any{"command": "grep -n FATAL " + path})
	if body(res2) != "1501:FATAL: symbol rotate_key undefined (unit 1500)" {
		t.Errorf("grep: %s", res2.AllText())
	}
}

func TestExecuteBH047TrueTotals(t *testing.T) {
	r := newExecRig(t, nil, nil)
	res, _ := r.call(context.Background(), map[string]any{"command": `python3 -c "[print('row', i) for i in range(400000)]"`})
	txt := res.AllText()
	header, _, _ := strings.Cut(txt, "\n---\n")
	if !strings.Contains(header, "4,288,890 characters in 400,000 lines produced; 30,000 characters shown") ||
		!strings.HasSuffix(body(res), "row 399999") || !strings.HasPrefix(body(res), "row 0\nrow 1\n") {
		t.Errorf("result:\n%.500s", txt)
	}
}

func TestExecuteBinaryOutputDescribed(t *testing.T) {
	r := newExecRig(t, nil, nil)
	res, _ := r.call(context.Background(), map[string]any{"command": "echo text; printf 'bin\\0ary\\1\\2\\3'"})
	txt := res.AllText()
	if !strings.Contains(txt, "note: stdout turned binary (NUL bytes)") || strings.ContainsAny(txt, "\x00\x01\x02\x03") || body(res) != "text\nbin" {
		t.Errorf("result:\n%.400q", txt)
	}
}

// TestExecuteBH097InvalidUTF8IsReported is case BH-097 (a): a command
// prints the UTF-8 encoding of a surrogate (invalid UTF-8). The text the
// model gets is valid UTF-8, each invalid byte is U+FFFD, and a note says
// how many bytes were replaced where, so the change is not silent; the
// full output file keeps the raw bytes; the result's JSON round-trips
// through a strict decoder.
func TestExecuteBH097InvalidUTF8IsReported(t *testing.T) {
	r := newExecRig(t, nil, &ExecuteOptions{OutputDir: t.TempDir()})
	res, _ := r.call(context.Background(), map[string]any{"command": `printf 'ok \355\240\200 end\n'`})
	txt := res.AllText()
	if res.IsError || !utf8.ValidString(txt) || body(res) != "ok \uFFFD\uFFFD\uFFFD end" ||
		!strings.Contains(txt, "note: 3 bytes in stdout were not valid UTF-8 and shown as U+FFFD (at byte offsets 3, 4, 5); the raw bytes are in the full output file") ||
		res.Evidence["invalid_utf8_bytes"] != int64(3) {
		t.Fatalf("result %v:\n%s", res.Evidence, txt)
	}
	raw, err := os.ReadFile(res.Evidence["full_output_path"].(string))
	if err != nil || string(raw) != "ok \xed\xa0\x80 end\n" {
		t.Errorf("full output file: %q %v", raw, err)
	}
	doc, err := json.Marshal(res.Content)
	if err != nil || !json.Valid(doc) || !utf8.Valid(doc) {
		t.Errorf("the result's JSON: %v", err)
	}
}
