package coretools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// This file holds execute's background jobs (issue 14, cases BH-089..091):
// execute {"background": true} starts a job in package jobs' Runner, and
// the jobs group's tools read (job_output), stop (job_kill) and list
// (jobs) them. A job's new output is projected like execute's: the same
// normalization and head + tail cap (outputCap), with the full log kept.

// JobsKey is the key of the jobs group (job_output, job_kill, jobs).
const JobsKey = "jobs"

// JobToolNames are the tools of the jobs group.
var JobToolNames = []string{"job_output", "job_kill", "jobs"}

// JobsGroup is the jobs group: built only when the run injects a
// *jobs.Runner as the service jobs.Service (and the sandbox runs
// commands); maxChars bounds job_output's text like execute's output
// (0: DefaultExecMaxOutputChars).
func JobsGroup(maxChars int) registry.Group {
	if maxChars <= 0 {
		maxChars = DefaultExecMaxOutputChars
	}
	return registry.Group{
		Key:      JobsKey,
		Names:    JobToolNames,
		Requires: registry.Requirements{Services: []string{jobs.Service}, SandboxOps: []sandbox.Op{sandbox.OpExec}},
		Build: func(env registry.Env) ([]*tool.Tool, error) {
			r, ok := registry.Service[*jobs.Runner](env, jobs.Service)
			if !ok || r == nil {
				return nil, fmt.Errorf("the %q service is not a *jobs.Runner", jobs.Service)
			}
			return JobTools(r, maxChars), nil
		},
		Instructions: JobsInstructions,
	}
}

// JobsMeta is the jobs group's metadata.
var JobsMeta = registry.Meta{Key: JobsKey, DisplayName: "Background jobs", Category: "execution",
	Description: "Read, stop and list the background jobs execute starts with background: true."}

// JobsInstructions are the jobs group's runtime instructions.
const JobsInstructions = `Background jobs: for a dev server, a watcher or a long build, call execute with "background": true. It returns at once with a job_id; the command runs on, confined like any command.
- job_output {"job_id"} returns the output that is new since your last read (capped like execute's, the full log kept), the state and, once ended, the exit code; add wait_ms to wait for new output or the end.
- job_kill {"job_id"} stops the job's whole process tree; jobs lists the jobs with state, age and output size.
- Jobs end when this session ends (unless the settings keep them); do not start one for a command that finishes within execute's timeout.`

// JobTools builds job_output, job_kill and jobs over r.
func JobTools(r *jobs.Runner, maxChars int) []*tool.Tool {
	jt := &jobTools{r: r, maxChars: maxChars}
	ro := &tool.Annotations{Title: "Read a background job's output", ReadOnlyHint: true}
	t := true
	return []*tool.Tool{
		tool.MustDefine(tool.Spec{Name: "job_output", Description: jt.description("job_output"), InputSchema: []byte(jobOutputSchema),
			Annotations: ro, Handler: jt.output}),
		tool.MustDefine(tool.Spec{Name: "job_kill", Description: jt.description("job_kill"), InputSchema: []byte(jobKillSchema),
			Annotations: &tool.Annotations{Title: "Stop a background job", DestructiveHint: &t, IdempotentHint: true}, Handler: jt.kill}),
		tool.MustDefine(tool.Spec{Name: "jobs", Description: jt.description("jobs"), InputSchema: []byte(jobsSchema),
			Annotations: &tool.Annotations{Title: "List background jobs", ReadOnlyHint: true}, Handler: jt.list}),
	}
}

type jobTools struct {
	r        *jobs.Runner
	maxChars int
}

const jobOutputSchema = `{
  "type": "object",
  "properties": {
    "job_id": {"type": "string", "minLength": 1, "description": "The job's id, from execute with background: true (or the jobs list)."},
    "wait_ms": {"type": "integer", "minimum": 0, "description": "When nothing is new, wait up to this many milliseconds for new output or the job's end; default 0 (answer at once)."},
    "offset": {"type": "integer", "minimum": 0, "description": "Read from this byte of the job's output instead of where the last read stopped (0 reads it all again)."}
  },
  "required": ["job_id"],
  "additionalProperties": false
}`

const jobKillSchema = `{
  "type": "object",
  "properties": {
    "job_id": {"type": "string", "minLength": 1, "description": "The job's id."}
  },
  "required": ["job_id"],
  "additionalProperties": false
}`

const jobsSchema = `{
  "type": "object",
  "properties": {
    "all": {"type": "boolean", "description": "List the jobs of every session in this workspace, not only this session's and the running ones."}
  },
  "additionalProperties": false
}`

// description renders descriptions/<name>.md with the runner's options
// ({{dur .MaxWait}}, {{n .MaxOutputBytes}}, {{n .MaxChars}}, ...).
func (jt *jobTools) description(name string) string {
	raw, err := descriptionFS.ReadFile("descriptions/" + name + ".md")
	if err != nil {
		panic(fmt.Sprintf("coretools: missing description for %s: %v", name, err))
	}
	tmpl := template.Must(template.New(name).Funcs(template.FuncMap{
		"n":   func(v any) string { return fsCount(fsInt64(v)) },
		"dur": exDuration,
	}).Parse(string(raw)))
	data := struct {
		jobs.Options
		MaxChars int
	}{jt.r.Options(), jt.maxChars}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		panic(fmt.Sprintf("coretools: description for %s: %v", name, err))
	}
	return strings.TrimSpace(b.String())
}

// jobSchema adds execute's background field when jobs run.
func (e *executor) jobSchema(schema string) []byte {
	if e.opts.Jobs == nil {
		return []byte(schema)
	}
	field := `"background": {"type": "boolean", "description": "Start the command as a background job and return at once with its job_id (a server, a watcher, a long build); read it with job_output, stop it with job_kill. timeout_ms does not apply: the job runs until it ends, is killed, or its session ends."},
    "command":`
	return []byte(strings.Replace(schema, `"command":`, field, 1))
}

// jobDescription is execute's sentence on background jobs, when they run.
func (e *executor) jobDescription() string {
	if e.opts.Jobs == nil {
		return ""
	}
	o := e.opts.Jobs.Options()
	return fmt.Sprintf("\nWith background: true the command starts as a background job and the call returns at once with its job_id: read its new output with job_output (wait_ms waits for news), stop its process tree with job_kill, list jobs with jobs. At most %d run at once per session; a job ends when its session ends, after %s, or when killed.",
		o.MaxRunning, exDuration(o.MaxLifetime))
}

// background starts in's command as a job.
func (e *executor) background(ctx context.Context, call *tool.Call, in executeInput) (*tool.Result, error) {
	r := e.opts.Jobs
	if r == nil {
		return nil, tool.Errorf(tool.Parameters, "background jobs are not available here").
			WithHint("run the command without background (it then ends within the timeout), or enable the jobs group")
	}
	info, err := r.Start(ctx, jobs.StartRequest{TaskID: tool.TaskID(ctx), ToolCallID: call.ID, Command: in.Command, Dir: in.Workdir})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "started background job %s", info.ID)
	if info.PID > 0 {
		fmt.Fprintf(&b, " (pid %d)", info.PID)
	}
	fmt.Fprintf(&b, ": %s\n", info.Command)
	if in.TimeoutMS != nil {
		b.WriteString("note: timeout_ms does not apply to a background job; it runs until it ends, is killed or its session ends\n")
	}
	o := r.Options()
	fmt.Fprintf(&b, "log: %s (full output up to %s bytes; a copy is kept in the records as %s)\n", info.LogPath, exCount(o.MaxOutputBytes), info.LogPayload)
	id, _ := json.Marshal(info.ID)
	fmt.Fprintf(&b, "next: job_output {\"job_id\":%s} for its output (add \"wait_ms\" to wait for news), job_kill {\"job_id\":%s} to stop it; it ends when this session ends", id, id)
	if !info.Keep {
		b.WriteString(" or after " + exDuration(o.MaxLifetime))
	}
	b.WriteString("\n")
	return &tool.Result{Content: []tool.Content{{Type: tool.TextContent, Text: b.String()}},
		Evidence: tool.Evidence{"background": true, "job_id": info.ID, "pid": info.PID, "state": string(info.State),
			"log_path": info.LogPath}}, nil
}

// verifyBackground checks a background start's result: the job id in
// the evidence is the one the text names.
func verifyBackground(res *tool.Result) tool.Verdict {
	v := tool.Verdict{Checked: "execute (background): the job id in the evidence is the one the result names"}
	id, _ := res.Evidence["job_id"].(string)
	if id == "" || !strings.Contains(res.AllText(), "started background job "+id) {
		v.Problem = "execute reported a background job without its id in the evidence and the text"
	}
	return v
}

func (jt *jobTools) output(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[struct {
		JobID  string `json:"job_id"`
		WaitMS *int64 `json:"wait_ms,omitempty"`
		Offset *int64 `json:"offset,omitempty"`
	}](call)
	if err != nil {
		return nil, err
	}
	req := jobs.ReadRequest{JobID: in.JobID, Offset: in.Offset}
	if in.WaitMS != nil {
		req.Wait = time.Duration(*in.WaitMS) * time.Millisecond
	}
	out := newOutputCap(jt.maxChars, nil)
	w := out.writer(outStdout)
	o, err := jt.r.Read(ctx, req, func(b []byte) { _, _ = w.Write(b) })
	if err != nil {
		return nil, err
	}
	out.finish()
	text, st := out.projection()
	var b strings.Builder
	jt.header(&b, &o.Info)
	if o.WaitClamped {
		fmt.Fprintf(&b, "note: wait_ms is over the maximum %d (jobs.maxWait); waited at most %s\n", jt.r.Options().MaxWait.Milliseconds(), exDuration(jt.r.Options().MaxWait))
	}
	fmt.Fprintf(&b, "read: bytes %s-%s of the output (%s new)", exCount(o.From), exCount(o.To), exPlural(o.To-o.From, "byte", "bytes"))
	if o.Waited > 0 {
		fmt.Fprintf(&b, " after waiting %s", exDuration(o.Waited.Round(time.Millisecond)))
	}
	if o.Source == "store" {
		b.WriteString(", from the records' copy")
	}
	b.WriteString("\n")
	contentNotes(&b, st, [2]string{"the job's output", "stderr"}, o.From, "its log")
	if o.To == o.From {
		if o.Running() && o.Dropped() > 0 {
			b.WriteString("nothing new is kept: the job is past its output limit (jobs.maxOutputBytes / jobs.maxTotalBytes); what it prints is counted, no longer kept (job_kill stops it)\n")
		} else if o.Running() {
			b.WriteString("nothing new yet (wait_ms waits for news)\n")
		} else {
			b.WriteString("nothing new: the job has ended and everything kept was read (offset 0 reads it again)\n")
		}
	}
	if st.Chars > 0 {
		b.WriteString("---\n")
		b.WriteString(text)
	}
	res := b.String()
	if st.OmittedChars > 0 {
		id, _ := json.Marshal(o.ID)
		next := fmt.Sprintf("recover them with execute: tail -c +%d %s | sed -n '%d,%dp', or job_output {\"job_id\":%s,\"offset\":%d} reads from that byte again",
			o.From+1, exShellQuote(o.LogPath), st.FirstOmitted, st.LastOmitted, id, o.From)
		res = tool.Cut{By: "job_output", Bound: "the " + exCount(int64(jt.maxChars)) + "-character output cap",
			TotalChars: st.Chars, TotalLines: st.Lines, HeadChars: int64(out.headMax), TailChars: int64(out.tailMax),
			OmittedChars: st.OmittedChars, OmittedFirst: st.FirstOmitted, OmittedLast: st.LastOmitted, Next: next}.Notice() + "\n" + res
	}
	ev := jt.evidence(&o.Info)
	ev["offset"], ev["next_offset"], ev["new_bytes"] = o.From, o.To, o.To-o.From
	ev[tool.EvidenceOutputChars], ev[tool.EvidenceShownChars], ev["omitted_chars"] = st.Chars, st.Shown, st.OmittedChars
	return &tool.Result{Content: []tool.Content{{Type: tool.TextContent, Text: res}}, Evidence: ev}, nil
}

// header writes the job's state lines.
func (jt *jobTools) header(b *strings.Builder, i *jobs.Info) {
	fmt.Fprintf(b, "job %s · %s", i.ID, i.State)
	if i.PID > 0 {
		fmt.Fprintf(b, " · pid %d", i.PID)
	}
	now := time.Now()
	if i.Running() {
		fmt.Fprintf(b, " · running for %s", exDuration(now.Sub(i.StartedAt).Round(time.Second)))
	} else if !i.EndedAt.IsZero() {
		fmt.Fprintf(b, " · ran %s, ended %s ago", exDuration(i.EndedAt.Sub(i.StartedAt).Round(time.Millisecond)), exDuration(now.Sub(i.EndedAt).Round(time.Second)))
	}
	fmt.Fprintf(b, "\ncommand: %s\n", i.Command)
	switch i.State {
	case store.JobExited:
		if i.Reason != "" {
			fmt.Fprintf(b, "exit code: %d (%s)\n", i.ExitCode, i.Reason)
		} else {
			fmt.Fprintf(b, "exit code: %d\n", i.ExitCode)
		}
	case store.JobKilled:
		fmt.Fprintf(b, "exit code: %d (stopped by aibuddy: %s)\n", i.ExitCode, jobReason(i.Reason))
	case store.JobLost:
		fmt.Fprintf(b, "exit code: unknown (lost: %s; its output up to then is kept)\n", i.Reason)
	}
	fmt.Fprintf(b, "output: %s in all", exPlural(i.OutputBytes, "byte", "bytes"))
	if d := i.Dropped(); d > 0 {
		fmt.Fprintf(b, "; %s kept (jobs.maxOutputBytes / jobs.maxTotalBytes), %s counted but not kept", exCount(i.StoredBytes), exCount(d))
	}
	fmt.Fprintf(b, "; log: %s\n", i.LogPath)
	if i.LogError != "" {
		fmt.Fprintf(b, "note: %s\n", i.LogError)
	}
	if i.Escaped > 0 {
		fmt.Fprintf(b, "note: %d process(es) had left the job's process group (setsid/daemon) and were stopped with it\n", i.Escaped)
	}
	for _, d := range i.Denied {
		b.WriteString("denied by confinement: " + d + "\n")
	}
}

// jobReason says in words why aibuddy stopped a job.
func jobReason(r string) string {
	switch r {
	case jobs.ReasonKilled:
		return "job_kill"
	case jobs.ReasonTaskEnd:
		return "its session ended (jobs.keepAfterSession is off)"
	case jobs.ReasonShutdown:
		return "aibuddy ended"
	case jobs.ReasonLifetime:
		return "it ran past jobs.maxLifetime"
	case jobs.ReasonIdle:
		return "it printed nothing for jobs.idleTimeout"
	}
	return r
}

func (jt *jobTools) evidence(i *jobs.Info) tool.Evidence {
	ev := tool.Evidence{"job_id": i.ID, "state": string(i.State), "running": i.Running(), "pid": i.PID,
		"bytes_total": i.OutputBytes, "bytes_kept": i.StoredBytes, "bytes_dropped": i.Dropped(), "log_path": i.LogPath}
	if !i.Running() {
		ev[tool.EvidenceExitCode] = i.ExitCode
		if i.Reason != "" {
			ev["reason"] = i.Reason
		}
	}
	return ev
}

func (jt *jobTools) kill(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[struct {
		JobID string `json:"job_id"`
	}](call)
	if err != nil {
		return nil, err
	}
	k, err := jt.r.Kill(ctx, in.JobID)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	switch {
	case k.AlreadyEnded && k.State == store.JobLost:
		fmt.Fprintf(&b, "job %s was lost (%s); ", k.ID, k.Reason)
		if len(k.Stopped) > 0 {
			fmt.Fprintf(&b, "its leftover processes %s were stopped when it was found\n", pidList(k.Stopped))
		} else {
			b.WriteString("none of its processes was left\n")
		}
	case k.AlreadyEnded:
		fmt.Fprintf(&b, "job %s had already ended (%s); nothing to stop\n", k.ID, k.State)
	default:
		fmt.Fprintf(&b, "stopped job %s: its process tree got SIGTERM, then SIGKILL after the sandbox's kill delay", k.ID)
		if len(k.Found) > 0 {
			fmt.Fprintf(&b, "; processes stopped: %s", pidList(k.Found))
		}
		switch {
		case len(k.Left) > 0:
			fmt.Fprintf(&b, "; still alive after %s: %s (inspect them with ps)", exDuration(k.Waited.Round(time.Millisecond)), pidList(k.Left))
		case k.Running():
			fmt.Fprintf(&b, "; the sandbox had not reported its end after %s", exDuration(k.Waited.Round(time.Millisecond)))
		default:
			b.WriteString("; none left")
		}
		b.WriteString("\n")
	}
	jt.header(&b, &k.Info)
	if unread := k.StoredBytes - k.ReadOffset; unread > 0 {
		id, _ := json.Marshal(k.ID)
		fmt.Fprintf(&b, "unread: %s of its output; job_output {\"job_id\":%s} reads them\n", exPlural(unread, "byte", "bytes"), id)
	}
	ev := jt.evidence(&k.Info)
	ev["already_ended"], ev["stopped_pids"], ev["left_pids"] = k.AlreadyEnded, orEmpty(k.Found), orEmpty(k.Left)
	r := &tool.Result{Content: []tool.Content{{Type: tool.TextContent, Text: b.String()}}, Evidence: ev}
	if len(k.Left) > 0 || (k.Running() && !k.AlreadyEnded) {
		r.IsError, r.Stage = true, tool.Execution
	}
	return r, nil
}

func orEmpty(p []int) []int {
	if p == nil {
		return []int{}
	}
	return p
}

func pidList(p []int) string {
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

func (jt *jobTools) list(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[struct {
		All bool `json:"all,omitempty"`
	}](call)
	if err != nil {
		return nil, err
	}
	all, err := jt.r.List(ctx, "")
	if err != nil {
		return nil, err
	}
	task := tool.TaskID(ctx)
	var b strings.Builder
	var rows []map[string]any
	now := time.Now()
	shown := 0
	for _, i := range all {
		// This session's jobs, the running ones and the lost ones
		// (reported once found) of earlier sessions; all with "all".
		if !in.All && i.TaskID != task && !i.Running() && i.State != store.JobLost {
			continue
		}
		shown++
		age := exDuration(now.Sub(i.StartedAt).Round(time.Second))
		fmt.Fprintf(&b, "%s · %s", i.ID, i.State)
		if !i.Running() {
			fmt.Fprintf(&b, " (exit %d", i.ExitCode)
			if i.Reason != "" {
				fmt.Fprintf(&b, ", %s", jobReason(i.Reason))
			}
			b.WriteString(")")
		}
		if i.PID > 0 {
			fmt.Fprintf(&b, " · pid %d", i.PID)
		}
		fmt.Fprintf(&b, " · age %s · output %s bytes (%s unread)", age, exCount(i.OutputBytes), exCount(max(0, i.StoredBytes-i.ReadOffset)))
		if i.TaskID != task {
			fmt.Fprintf(&b, " · earlier session %s", i.TaskID)
		}
		fmt.Fprintf(&b, "\n  %s\n", i.Command)
		rows = append(rows, map[string]any{"job_id": i.ID, "state": string(i.State), "pid": i.PID, "age_ms": now.Sub(i.StartedAt).Milliseconds(),
			"bytes_total": i.OutputBytes, "bytes_unread": max(0, i.StoredBytes-i.ReadOffset), "command": i.Command, "task_id": i.TaskID,
			"exit_code": i.ExitCode})
	}
	head := fmt.Sprintf("%s", exPlural(int64(shown), "job", "jobs"))
	if !in.All {
		head += " (this session's, and running or lost ones of earlier sessions; all: true lists every one)"
	}
	text := head + "\n" + b.String()
	if rows == nil {
		rows = []map[string]any{}
	}
	return &tool.Result{Content: []tool.Content{{Type: tool.TextContent, Text: text}}, Evidence: tool.Evidence{"jobs": rows, "count": shown}}, nil
}

// withJobs gives execute the run's job runner, when it has one.
func withJobs(ex *ExecuteOptions, env registry.Env) *ExecuteOptions {
	r, ok := registry.Service[*jobs.Runner](env, jobs.Service)
	if !ok || r == nil {
		return ex
	}
	var o ExecuteOptions
	if ex != nil {
		o = *ex
	}
	o.Jobs = r
	return &o
}

func maxOutputChars(ex *ExecuteOptions) int {
	if ex == nil {
		return 0
	}
	return ex.MaxOutputChars
}
