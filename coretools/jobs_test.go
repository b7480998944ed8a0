//go:build linux

package coretools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// jobRig is execute with background jobs and the jobs group's tools over
// a real local sandbox and sqlite store.
type jobRig struct {
	t     *testing.T
	tools map[string]*tool.Tool
	r     *jobs.Runner
	ctx   context.Context
	n     int
}

func newJobRig(t *testing.T, maxChars int) *jobRig {
	t.Helper()
	ws, data := t.TempDir(), t.TempDir()
	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true, Confinement: &confine.Settings{Confinement: "off"},
		KillDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := jobs.New(sb, st, &jobs.Options{LogDir: filepath.Join(data, "jobs")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	env := registry.Env{Sandbox: sb, Services: map[string]any{jobs.Service: r}}
	g := &jobRig{t: t, r: r, tools: map[string]*tool.Tool{}, ctx: tool.WithTaskID(context.Background(), "session-1")}
	for _, grp := range Groups(nil, &ExecuteOptions{MaxOutputChars: maxChars}) {
		if grp.Key != ExecuteKey && grp.Key != JobsKey {
			continue
		}
		built, err := grp.Build(env)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range built {
			g.tools[tl.Name()] = tl
		}
	}
	return g
}

func (g *jobRig) call(name string, args any) *tool.Result {
	g.t.Helper()
	g.n++
	in, _ := json.Marshal(args)
	return g.tools[name].Call(g.ctx, &tool.Call{ID: fmt.Sprintf("c%d", g.n), Name: name, Input: in})
}

func (g *jobRig) start(command string) string {
	g.t.Helper()
	res := g.call("execute", map[string]any{"command": command, "background": true})
	if res.IsError {
		g.t.Fatalf("execute background: %s", res.AllText())
	}
	if v, ok := g.tools["execute"].Verify(&tool.Call{Name: "execute"}, res); !ok || v.Problem != "" {
		g.t.Errorf("the background start fails its verification: %+v", v)
	}
	return res.Evidence["job_id"].(string)
}

// execute offers "background" only with a job runner; its description
// names the jobs tools then.
func TestExecuteBackgroundOnlyWithJobs(t *testing.T) {
	sb, err := localsandbox.New(t.TempDir(), &localsandbox.Options{NoTempSweep: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	plain := Execute(sb, nil)
	if strings.Contains(string(plain.InputSchema()), "background") || strings.Contains(plain.Description(), "job_output") {
		t.Error("execute without jobs offers background")
	}
	g := newJobRig(t, 0)
	ex := g.tools["execute"]
	if !strings.Contains(string(ex.InputSchema()), `"background"`) || !strings.Contains(ex.Description(), "job_output") {
		t.Errorf("execute with jobs: schema %s", ex.InputSchema())
	}
	for _, n := range JobToolNames {
		if g.tools[n] == nil || !strings.Contains(g.tools[n].Description(), "job") {
			t.Errorf("tool %s missing or undescribed", n)
		}
	}
}

// job_output projects new output like execute: capped head and tail with
// the cut notice first, naming the log and the offset that reads the
// omitted part again; the next read returns only what is new; offset 0
// reads it all again.
func TestJobOutputCappedLikeExecute(t *testing.T) {
	g := newJobRig(t, 2000)
	id := g.start("seq 1 20000; echo done-marker; sleep 100000")
	var res *tool.Result
	for end := time.Now().Add(30 * time.Second); ; {
		res = g.call("job_output", map[string]any{"job_id": id, "offset": 0, "wait_ms": 1000})
		// "\ndone-marker" is the output line; the header's "command:"
		// line carries "echo done-marker" on every read.
		if strings.Contains(res.AllText(), "\ndone-marker") || time.Now().After(end) {
			break
		}
	}
	got := res.AllText()
	if res.IsError || !strings.HasPrefix(got, "[cut by job_output at the 2,000-character output cap") ||
		!strings.Contains(got, "tail -c +1 ") || !strings.Contains(got, `"offset":0`) || !strings.Contains(got, "\n1\n2\n3\n") {
		t.Fatalf("capped job_output:\n%s", got[:min(len(got), 1500)])
	}
	if n, _ := res.Evidence["omitted_chars"].(int64); n <= 0 || res.Evidence["running"] != true {
		t.Errorf("evidence: %v", res.Evidence)
	}
	again := g.call("job_output", map[string]any{"job_id": id})
	if !strings.Contains(again.AllText(), "nothing new yet") || again.Evidence["new_bytes"] != int64(0) {
		t.Errorf("the next read: %s", again.AllText())
	}
	k := g.call("job_kill", map[string]any{"job_id": id})
	if k.IsError || !strings.Contains(k.AllText(), "stopped job "+id) || !strings.Contains(k.AllText(), "none left") ||
		k.Evidence[tool.EvidenceExitCode] != -1 || len(k.Evidence["stopped_pids"].([]int)) == 0 {
		t.Errorf("job_kill: %s %v", k.AllText(), k.Evidence)
	}
	k2 := g.call("job_kill", map[string]any{"job_id": id})
	if k2.IsError || !strings.Contains(k2.AllText(), "had already ended") {
		t.Errorf("second job_kill: %s", k2.AllText())
	}
}

// jobs lists this session's jobs with state, pid, age and output; an
// unknown id is a Parameters error that says how to find ids.
func TestJobsListAndUnknownID(t *testing.T) {
	g := newJobRig(t, 0)
	id := g.start("echo hi; exit 7")
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if r := g.call("job_output", map[string]any{"job_id": id, "wait_ms": 1000}); r.Evidence["running"] == false {
			if !strings.Contains(r.AllText(), "exit code: 7") {
				t.Errorf("ended job: %s", r.AllText())
			}
			break
		}
	}
	list := g.call("jobs", map[string]any{})
	if !strings.Contains(list.AllText(), id+" · exited (exit 7)") || list.Evidence["count"] != 1 {
		t.Errorf("jobs: %s", list.AllText())
	}
	bad := g.call("job_output", map[string]any{"job_id": "nope"})
	if !bad.IsError || bad.Stage != tool.Parameters || !strings.Contains(bad.AllText(), "jobs tool") {
		t.Errorf("unknown id: %s %s", bad.Stage, bad.AllText())
	}
}

// BH-097 (a) for jobs: job_output names the bytes of the job's output
// that were not valid UTF-8 by their offsets in the log, also when the
// read starts past the log's first byte.
func TestJobOutputReportsInvalidUTF8(t *testing.T) {
	g := newJobRig(t, 0)
	id := g.start(`printf 'abc\n'; printf 'ok \355\240\200 end\n'`)
	var all *tool.Result
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if all = g.call("job_output", map[string]any{"job_id": id, "wait_ms": 1000, "offset": 0}); all.Evidence["running"] == false {
			break
		}
	}
	if got := all.AllText(); !strings.Contains(got, "note: 3 bytes in the job's output were not valid UTF-8 and shown as U+FFFD (at byte offsets 7, 8, 9); the raw bytes are in its log") ||
		!strings.Contains(got, "\nok \uFFFD\uFFFD\uFFFD end") {
		t.Fatalf("job_output from 0:\n%s", got)
	}
	from4 := g.call("job_output", map[string]any{"job_id": id, "offset": 4}).AllText()
	if !strings.Contains(from4, "(at byte offsets 7, 8, 9)") {
		t.Errorf("job_output from byte 4:\n%s", from4)
	}
}
