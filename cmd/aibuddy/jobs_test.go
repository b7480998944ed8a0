//go:build linux

package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/internal/proctest"
	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// jobsRig starts `aibuddy mcp` processes over one workspace and data
// folder, so a later one finds the jobs of an earlier one.
type jobsRig struct {
	t        *testing.T
	ctx      context.Context
	ws, data string
	cfg      string
}

func newJobsRig(t *testing.T, ctx context.Context, confinement string) *jobsRig {
	t.Helper()
	g := &jobsRig{t: t, ctx: ctx, ws: t.TempDir(), data: t.TempDir()}
	doc := map[string]any{
		"sandbox":  map[string]any{"confinement": confinement, "killDelay": "500ms"},
		"jobs":     map[string]any{"flushInterval": "50ms", "maxWait": "5s"},
		"approval": map[string]any{"off": true},
	}
	b, _ := json.Marshal(doc)
	g.cfg = filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(g.cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return g
}

// start starts one aibuddy mcp and returns its session and process.
func (g *jobsRig) start(name string) (*mcp.ClientSession, *exec.Cmd) {
	g.t.Helper()
	cmd := exec.Command(bin, "mcp", "--workspace", g.ws, "--config", g.cfg, "--data-dir", g.data)
	cmd.Stderr = &testWriter{t: g.t, prefix: name + " stderr: "}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-jobs", Version: "1"}, nil).
		Connect(g.ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		g.t.Fatalf("%s: connect: %v", name, err)
	}
	g.t.Cleanup(func() { cs.Close() })
	return cs, cmd
}

// startJob runs execute with background: true and returns the job id.
func startJob(t *testing.T, ctx context.Context, cs *mcp.ClientSession, command string) string {
	t.Helper()
	res := callTool(t, ctx, cs, "execute", map[string]any{"command": command, "background": true})
	got := mustOK(t, "execute background", res)
	ev, _ := res.Meta["aibuddy/evidence"].(map[string]any)
	id, _ := ev["job_id"].(string)
	if id == "" || !strings.Contains(got, "started background job "+id) || !strings.Contains(got, "log: ") {
		t.Fatalf("execute background: %q, evidence %v", got, ev)
	}
	if pid, _ := ev["pid"].(float64); pid <= 0 {
		t.Errorf("execute background: no pid in %v", ev)
	}
	return id
}

// pollOutput calls job_output (waiting for news) until cond holds of
// everything it returned so far, or the test's deadline. Every read
// repeats the job's "command:" line, so cond matches output lines
// ("\nword"), not a bare word the command echoes.
func pollOutput(t *testing.T, ctx context.Context, cs *mcp.ClientSession, id string, cond func(all string, last *mcp.CallToolResult) bool) string {
	t.Helper()
	var all strings.Builder
	for {
		res := callTool(t, ctx, cs, "job_output", map[string]any{"job_id": id, "wait_ms": 2000})
		all.WriteString(mustOK(t, "job_output", res))
		if cond(all.String(), res) {
			return all.String()
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s: condition not met before the deadline; job_output returned %q", id, all.String())
		}
	}
}

// waitNoProcess waits (on pidfds, under the test's deadline) until no
// process carries the job's marker.
func waitNoProcess(t *testing.T, ctx context.Context, id, when string) {
	t.Helper()
	within := time.Minute
	if d, ok := ctx.Deadline(); ok {
		within = time.Until(d)
	}
	if left, err := proctest.WaitGone(markedProcs(id), within); err != nil || len(left) > 0 {
		t.Fatalf("%s: processes of job %s still alive: %v (%v)", when, id, left, err)
	}
}

// markedProcs lists the live processes carrying job id's marker.
func markedProcs(id string) func() []proctest.Proc {
	return func() []proctest.Proc {
		var ps []proctest.Proc
		for _, pid := range jobs.MarkedPIDs(jobs.Marker(id)) {
			ps = append(ps, proctest.Proc{PID: pid})
		}
		return ps
	}
}

// Background jobs through `aibuddy mcp` with a real process tree (issue
// 14, BH-089, BH-090): start, poll, kill; a job of an aibuddy killed with
// SIGKILL is reported lost by the next aibuddy with its last output, and
// none of its processes is left; a job still running when the session
// ends is stopped with it. Every check of processes reads /proc for the
// job's marker (AIBUDDY_JOB_ID).
func TestBackgroundJobsOverMCP(t *testing.T) {
	for _, mode := range []string{"off", "workspace-write"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			g := newJobsRig(t, ctx, mode)
			a, aProc := g.start("first aibuddy")
			if mode != "off" {
				probe := callTool(t, ctx, a, "execute", map[string]any{"command": "true"})
				if probe.IsError && strings.Contains(text(probe), "confinement cannot be enforced") {
					t.Skipf("the confinement cannot be enforced on this machine: %s", text(probe))
				}
			}
			names := toolNames(t, ctx, a)
			for _, n := range []string{"execute", "job_output", "job_kill", "jobs"} {
				if !names[n] {
					t.Fatalf("tools/list lacks %s: %v", n, names)
				}
			}

			// Start and poll: only new output each time.
			id := startJob(t, ctx, a, "echo ready; (while :; do echo tick; sleep 0.05; done) & sleep 100000 & setsid sleep 100000 & wait")
			pollOutput(t, ctx, a, id, func(all string, _ *mcp.CallToolResult) bool { return strings.Count(all, "\ntick") >= 2 })
			res := callTool(t, ctx, a, "job_output", map[string]any{"job_id": id, "wait_ms": 2000})
			if got := mustOK(t, "job_output", res); strings.Contains(got, "---\nready") || !strings.Contains(got, "· running") {
				t.Errorf("a later read repeats old output or lost the state: %q", got)
			}
			if pids := jobs.MarkedPIDs(jobs.Marker(id)); len(pids) < 4 {
				t.Fatalf("the job's tree in /proc: %v, want the shell, the loop and two sleepers", pids)
			}
			list := mustOK(t, "jobs", callTool(t, ctx, a, "jobs", map[string]any{}))
			if !strings.Contains(list, id+" · running") {
				t.Errorf("jobs: %q", list)
			}

			// Kill: the whole tree, reported.
			k := mustOK(t, "job_kill", callTool(t, ctx, a, "job_kill", map[string]any{"job_id": id}))
			if !strings.Contains(k, "stopped job "+id) || !strings.Contains(k, "none left") || !strings.Contains(k, "killed") {
				t.Errorf("job_kill: %q", k)
			}
			waitNoProcess(t, ctx, id, "after job_kill")

			// A job survives its aibuddy's SIGKILL only until the next
			// aibuddy finds it lost; its last output is kept.
			lost := startJob(t, ctx, a, "echo before-the-crash; sleep 100000")
			pollOutput(t, ctx, a, lost, func(all string, _ *mcp.CallToolResult) bool { return strings.Contains(all, "\nbefore-the-crash") })
			if err := aProc.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = a.Close() // the SDK's transport reaps the killed process
			b, _ := g.start("second aibuddy")
			waitNoProcess(t, ctx, lost, "after the next aibuddy started")
			list = mustOK(t, "jobs", callTool(t, ctx, b, "jobs", map[string]any{}))
			if !strings.Contains(list, lost+" · lost") || !strings.Contains(list, "earlier session") {
				t.Errorf("jobs after the restart: %q", list)
			}
			out := mustOK(t, "job_output", callTool(t, ctx, b, "job_output", map[string]any{"job_id": lost, "offset": 0}))
			if !strings.Contains(out, "· lost") || !strings.Contains(out, "before-the-crash") || !strings.Contains(out, "ended while it ran") {
				t.Errorf("job_output of the lost job: %q", out)
			}

			// The session's end ends its jobs.
			last := startJob(t, ctx, b, "sleep 100000 & sleep 100000 & wait")
			// aibuddy calls jobs (another process) lists it running with its pid.
			if rows := callsJobs(t, g, false); len(rows) != 1 || rows[0]["jobId"] != last || rows[0]["state"] != "running" || rows[0]["pid"].(float64) <= 0 {
				t.Errorf("aibuddy calls jobs while the last job runs: %v", rows)
			}
			if err := b.Close(); err != nil {
				t.Logf("closing the session: %v", err)
			}
			waitNoProcess(t, ctx, last, "after the session ended")
			states := map[string]any{}
			for _, r := range callsJobs(t, g, true) {
				states[r["jobId"].(string)] = r["state"]
			}
			if states[id] != "killed" || states[lost] != "lost" || states[last] != "killed" {
				t.Errorf("aibuddy calls jobs --all: %v", states)
			}
			st, err := sqlitestore.Open(filepath.Join(g.data, "records.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for want, ids := range map[store.JobState][]string{store.JobKilled: {id, last}, store.JobLost: {lost}} {
				for _, jid := range ids {
					rec, err := st.GetJob(ctx, jid)
					if err != nil || rec.State != want {
						t.Errorf("job %s in the records: %+v %v, want %s", jid, rec, err, want)
					}
				}
			}
		})
	}
}

// callsJobs runs `aibuddy calls jobs --json` over the rig's data folder.
func callsJobs(t *testing.T, g *jobsRig, all bool) []map[string]any {
	t.Helper()
	args := []string{"calls", "jobs", "--json", "--data-dir", g.data}
	if all {
		args = append(args, "--all")
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("aibuddy calls jobs: %v", err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("aibuddy calls jobs: %v: %s", err, out)
	}
	return rows
}
