//go:build linux

package jobs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/proctest"
	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// deadline bounds every wait of these tests (they wait for events, and
// this only says "it never came").
const deadline = 30 * time.Second

type rig struct {
	t    *testing.T
	ws   string
	data string
	sb   *localsandbox.Sandbox
	st   *sqlitestore.Store
	r    *jobs.Runner
}

func newRig(t *testing.T, confinement string, opts *jobs.Options) *rig {
	t.Helper()
	ws, data := t.TempDir(), t.TempDir()
	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true,
		Confinement: &confine.Settings{Confinement: confinement}, KillDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &rig{t: t, ws: ws, data: data, sb: sb, st: st, r: newRunner(t, sb, st, data, opts)}
}

func newRunner(t *testing.T, sb *localsandbox.Sandbox, st jobs.Store, data string, opts *jobs.Options) *jobs.Runner {
	t.Helper()
	o := jobs.Options{}
	if opts != nil {
		o = *opts
	}
	o.LogDir = filepath.Join(data, "jobs")
	r, err := jobs.New(sb, st, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func (g *rig) start(task, command string) *jobs.Info {
	g.t.Helper()
	info, err := g.r.Start(context.Background(), jobs.StartRequest{TaskID: task, ToolCallID: "call-" + task, Command: command})
	if err != nil {
		g.t.Fatalf("start %q: %v", command, err)
	}
	return info
}

// readUntil reads the job's new output (waiting for news each time) until
// cond holds of everything read so far, or the deadline.
func readUntil(t *testing.T, r *jobs.Runner, id string, cond func(all string, o *jobs.Output) bool) (string, *jobs.Output) {
	t.Helper()
	return readUntilWait(t, r, id, 5*time.Second, cond)
}

// readUntilWait is readUntil with each read's wait for news.
func readUntilWait(t *testing.T, r *jobs.Runner, id string, wait time.Duration, cond func(all string, o *jobs.Output) bool) (string, *jobs.Output) {
	t.Helper()
	var all bytes.Buffer
	end := time.Now().Add(deadline)
	for {
		o, err := r.Read(context.Background(), jobs.ReadRequest{JobID: id, Wait: wait}, func(b []byte) { all.Write(b) })
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		if cond(all.String(), o) {
			return all.String(), o
		}
		if time.Now().After(end) {
			t.Fatalf("job %s: condition not met within %s; read %q, state %s", id, deadline, all.String(), o.State)
		}
	}
}

// waitGone waits (on pidfds, at most deadline) until no process carries
// the job's marker.
func waitGone(t *testing.T, id string) {
	t.Helper()
	list := func() []proctest.Proc {
		var ps []proctest.Proc
		for _, pid := range jobs.MarkedPIDs(jobs.Marker(id)) {
			ps = append(ps, proctest.Proc{PID: pid})
		}
		return ps
	}
	if left, err := proctest.WaitGone(list, deadline); err != nil || len(left) > 0 {
		t.Fatalf("job %s: processes %v still alive after %s (%v)", id, left, deadline, err)
	}
}

// A job's tree (a shell, a child that prints, two sleepers, one of which
// left the process group with setsid) runs in the background; job_output
// returns only what is new; job_kill stops every process of it and says
// which; the record in the store says how it ended. In both sandbox
// modes: plain (process group + marker sweep) and under the OS
// confinement (the namespace's init).
func TestStartReadKillTree(t *testing.T) {
	for _, mode := range []string{"off", "workspace-write"} {
		t.Run(mode, func(t *testing.T) {
			g := newRig(t, mode, nil)
			if mode != "off" {
				if err := confine.NewDriver(nil).Check(mustPolicy(t, g.ws)); err != nil {
					t.Skipf("confinement unavailable here: %v", err)
				}
			}
			info, err := g.r.Start(context.Background(), jobs.StartRequest{TaskID: "task-a",
				Command: `echo first; (while :; do echo tick; sleep 0.05; done) & sleep 100000 & setsid sleep 100000 & wait`})
			if errors.Is(err, sandbox.ErrConfinement) {
				t.Skipf("the confinement cannot be enforced on this machine: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.State != store.JobRunning || info.PID <= 0 || info.LogPath == "" {
				t.Fatalf("started: %+v", info)
			}
			all, _ := readUntil(t, g.r, info.ID, func(all string, _ *jobs.Output) bool { return strings.Contains(all, "tick\ntick\n") })
			if !strings.HasPrefix(all, "first\n") {
				t.Errorf("output starts %q, want first", all[:min(len(all), 20)])
			}
			// The next read starts where this one stopped.
			o, err := g.r.Read(context.Background(), jobs.ReadRequest{JobID: info.ID, Wait: 5 * time.Second}, func([]byte) {})
			if err != nil {
				t.Fatal(err)
			}
			if o.From != int64(len(all)) || o.To <= o.From || !o.Running() {
				t.Errorf("second read: from %d to %d (first read %d bytes), running %v", o.From, o.To, len(all), o.Running())
			}
			if pids := jobs.MarkedPIDs(jobs.Marker(info.ID)); len(pids) < 3 {
				t.Fatalf("job's processes by marker: %v, want at least shell, loop and sleepers", pids)
			}
			k, err := g.r.Kill(context.Background(), info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if k.State != store.JobKilled || k.Reason != jobs.ReasonKilled || len(k.Found) < 3 || len(k.Left) != 0 || k.EndedAt.IsZero() {
				t.Errorf("kill: state %s reason %q found %v left %v", k.State, k.Reason, k.Found, k.Left)
			}
			waitGone(t, info.ID)
			rec, err := g.st.GetJob(context.Background(), info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != store.JobKilled || rec.OutputBytes != k.OutputBytes || rec.ReadOffset == 0 || rec.TaskID != "task-a" {
				t.Errorf("stored: %+v", rec)
			}
			// The store's copy holds the whole output (flushed before the end).
			data, size, err := g.st.ReadPayload(context.Background(), "task-a", rec.Log, 0, 0)
			if err != nil || size != k.OutputBytes || !bytes.HasPrefix(data, []byte("first\ntick\n")) {
				t.Errorf("payload: %d bytes (job %d), err %v, starts %q", size, k.OutputBytes, err, data[:min(len(data), 20)])
			}
		})
	}
}

func mustPolicy(t *testing.T, ws string) *confine.Policy {
	p, err := confine.NewPolicy(confine.Settings{}, ws, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A job that ends on its own is reported exited with its exit code, and
// its last output is there.
func TestExitStatus(t *testing.T) {
	g := newRig(t, "off", nil)
	info := g.start("t", "echo out; echo err >&2; exit 3")
	all, o := readUntil(t, g.r, info.ID, func(_ string, o *jobs.Output) bool { return !o.Running() })
	if o.State != store.JobExited || o.ExitCode != 3 || all != "out\nerr\n" || o.Reason != "" {
		t.Errorf("state %s exit %d output %q reason %q", o.State, o.ExitCode, all, o.Reason)
	}
}

// BH-089: output past jobs.maxOutputBytes is counted, not kept; the pipe
// is always drained, so the job keeps running and counting; the store
// keeps exactly the cap.
func TestOutputCap(t *testing.T) {
	const limit = 10000
	g := newRig(t, "off", &jobs.Options{MaxOutputBytes: limit})
	info := g.start("t", "yes incoming-line")
	var first int64
	// Past the cap nothing new is kept, so a read waits its whole wait:
	// short waits here.
	_, o := readUntilWait(t, g.r, info.ID, 50*time.Millisecond, func(_ string, o *jobs.Output) bool {
		if first == 0 && o.OutputBytes > limit {
			first = o.OutputBytes
		}
		return first > 0 && o.OutputBytes > 2*first
	})
	if o.StoredBytes != limit || o.Dropped() != o.OutputBytes-limit || !o.Running() {
		t.Errorf("stored %d dropped %d total %d running %v", o.StoredBytes, o.Dropped(), o.OutputBytes, o.Running())
	}
	k, err := g.r.Kill(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, size, err := g.st.ReadPayload(context.Background(), "t", k.LogPayload, 0, 1)
	if err != nil || size != limit {
		t.Errorf("store copy %d bytes (%v), want %d", size, err, limit)
	}
	if fi, err := os.Stat(k.LogPath); err != nil || fi.Size() != limit {
		t.Errorf("log file: %v %v", fi, err)
	}
}

// The running-jobs limit of a task refuses a start at the Authorization
// stage, naming the setting; another task is not affected.
func TestMaxRunning(t *testing.T) {
	g := newRig(t, "off", &jobs.Options{MaxRunning: 1})
	g.start("a", "sleep 100000")
	_, err := g.r.Start(context.Background(), jobs.StartRequest{TaskID: "a", Command: "sleep 100000"})
	var te *tool.Error
	if !errors.As(err, &te) || te.Stage != tool.Authorization || !strings.Contains(te.Error(), "jobs.maxRunning") {
		t.Fatalf("second start: %v", err)
	}
	g.start("b", "sleep 100000")
}

// A task's end stops its jobs (not another task's); with KeepAfterTask
// they run on until the Runner closes.
func TestEndTask(t *testing.T) {
	g := newRig(t, "off", nil)
	a, b := g.start("a", "sleep 100000"), g.start("b", "sleep 100000")
	ended := g.r.EndTask("a")
	if len(ended) != 1 || ended[0].ID != a.ID || ended[0].State != store.JobKilled || ended[0].Reason != jobs.ReasonTaskEnd {
		t.Fatalf("EndTask(a): %+v", ended)
	}
	waitGone(t, a.ID)
	if pids := jobs.MarkedPIDs(jobs.Marker(b.ID)); len(pids) == 0 {
		t.Fatal("task b's job was stopped with task a")
	}
	g.r.Close()
	waitGone(t, b.ID)
	got, err := g.r.Get(context.Background(), b.ID)
	if err != nil || got.State != store.JobKilled || got.Reason != jobs.ReasonShutdown {
		t.Errorf("after Close: %+v %v", got, err)
	}

	k := newRig(t, "off", &jobs.Options{KeepAfterTask: true})
	c := k.start("c", "sleep 100000")
	if ended := k.r.EndTask("c"); len(ended) != 0 || len(jobs.MarkedPIDs(jobs.Marker(c.ID))) == 0 {
		t.Fatalf("KeepAfterTask: EndTask stopped %+v", ended)
	}
	k.r.Close()
	waitGone(t, c.ID)
}

// A job whose aibuddy process died while it ran (here: a record owned by
// a process that has exited, with processes carrying the job's marker
// still alive, as a plain sandbox leaves them) is reported lost with its
// last output, and what is left of it is stopped.
func TestLostJob(t *testing.T) {
	g := newRig(t, "off", nil)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	leftover := exec.Command("sleep", "100000")
	leftover.Env = []string{jobs.Marker("jlost")}
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- leftover.Wait() }()
	ctx := context.Background()
	if _, err := g.st.AppendPayload(ctx, "old-task", "jobs/jlost.log", []byte("serving on :8080\nGET / 200\n")); err != nil {
		t.Fatal(err)
	}
	if err := g.st.PutJob(ctx, &store.Job{JobID: "jlost", TaskID: "old-task", Command: "python3 -m http.server", State: store.JobRunning,
		PID: leftover.Process.Pid, Owner: "aibuddy:" + host + ":" + strconv.Itoa(dead.Process.Pid) + ":1", StartedAt: time.Now(),
		OutputBytes: 27, Log: "jobs/jlost.log", Detail: []byte(`{"workspace":` + strconv.Quote(g.sb.Workspace()) + `}`)}); err != nil {
		t.Fatal(err)
	}
	lost, err := g.r.Recover(ctx)
	if err != nil || len(lost) != 1 || lost[0].State != store.JobLost || !strings.Contains(lost[0].Reason, "ended while it ran") {
		t.Fatalf("Recover: %+v %v", lost, err)
	}
	select {
	case <-exited:
	case <-time.After(deadline):
		t.Fatal("the lost job's leftover process was not stopped")
	}
	var all bytes.Buffer
	o, err := g.r.Read(ctx, jobs.ReadRequest{JobID: "jlost", Wait: time.Second}, func(b []byte) { all.Write(b) })
	if err != nil || o.State != store.JobLost || all.String() != "serving on :8080\nGET / 200\n" || o.Source != "store" || o.Waited != 0 {
		t.Fatalf("read of a lost job: %+v %v %q", o, err, all.String())
	}
	list, err := g.r.List(ctx, "")
	if err != nil || len(list) != 1 || list[0].State != store.JobLost {
		t.Errorf("list: %+v %v", list, err)
	}
	if _, err := g.r.Kill(ctx, "jlost"); err != nil {
		t.Errorf("kill of a lost job: %v", err)
	}
}

// Another Runner on the same store (another aibuddy process, or the next
// one) reads a job's output and waits for news through the store.
func TestReadFromAnotherRunner(t *testing.T) {
	g := newRig(t, "off", nil)
	info := g.start("t", "echo one; sleep 0.3; echo two; sleep 100000")
	other := newRunner(t, g.sb, g.st, t.TempDir(), nil)
	all, o := readUntil(t, other, info.ID, func(all string, _ *jobs.Output) bool { return strings.Contains(all, "two") })
	if all != "one\ntwo\n" || !o.Running() || o.Local {
		t.Errorf("other runner read %q, %+v", all, o)
	}
	if _, err := other.Kill(context.Background(), info.ID); err == nil {
		t.Error("another runner stopped a job it does not run")
	}
	if _, err := other.Read(context.Background(), jobs.ReadRequest{JobID: "nope"}, func([]byte) {}); err == nil {
		t.Error("unknown id read without error")
	}
}

// A job that runs past jobs.maxLifetime is killed with the reason
// "lifetime"; one silent for jobs.idleTimeout with "idle".
func TestLifetimeAndIdle(t *testing.T) {
	g := newRig(t, "off", &jobs.Options{MaxLifetime: 300 * time.Millisecond})
	info := g.start("t", "sleep 100000")
	_, o := readUntil(t, g.r, info.ID, func(_ string, o *jobs.Output) bool { return !o.Running() })
	if o.State != store.JobKilled || o.Reason != jobs.ReasonLifetime {
		t.Errorf("lifetime: %s %q", o.State, o.Reason)
	}
	h := newRig(t, "off", &jobs.Options{IdleTimeout: 300 * time.Millisecond, FlushInterval: 50 * time.Millisecond})
	info = h.start("t", "echo once; sleep 100000")
	_, o = readUntil(t, h.r, info.ID, func(_ string, o *jobs.Output) bool { return !o.Running() })
	if o.State != store.JobKilled || o.Reason != jobs.ReasonIdle {
		t.Errorf("idle: %s %q", o.State, o.Reason)
	}
}

// wait_ms past jobs.maxWait is clamped, and the output says so; an
// offset reads again from there.
func TestWaitClampAndOffset(t *testing.T) {
	g := newRig(t, "off", &jobs.Options{MaxWait: 100 * time.Millisecond})
	info := g.start("t", "echo abcdef; sleep 100000")
	readUntil(t, g.r, info.ID, func(all string, _ *jobs.Output) bool { return all == "abcdef\n" })
	o, err := g.r.Read(context.Background(), jobs.ReadRequest{JobID: info.ID, Wait: time.Hour}, func([]byte) {})
	if err != nil || !o.WaitClamped || o.From != o.To {
		t.Fatalf("clamped read: %+v %v", o, err)
	}
	off := int64(3)
	var got bytes.Buffer
	if _, err := g.r.Read(context.Background(), jobs.ReadRequest{JobID: info.ID, Offset: &off}, func(b []byte) { got.Write(b) }); err != nil || got.String() != "def\n" {
		t.Fatalf("offset 3: %q %v", got.String(), err)
	}
}
