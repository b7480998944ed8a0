package coretools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// ExecuteOptions configures the execute tool. A nil *ExecuteOptions means
// the defaults; a zero or negative field means that field's default.
type ExecuteOptions struct {
	// DefaultTimeout bounds a command when the call gives no timeout_ms.
	// Default 2 min.
	DefaultTimeout time.Duration
	// MaxTimeout is the largest timeout a call may ask for; a larger
	// timeout_ms is clamped to it and the result says so. Default 10 min.
	MaxTimeout time.Duration
	// Grace is added to the timeout to form the tool's own hard deadline
	// (seed: "a further 30-second network grace period as a ... hard
	// deadline"): a sandbox that fails to stop the command still cannot
	// hold the call longer than timeout + Grace. After the caller cancels,
	// the sandbox has at most Grace to report. Default 30 s.
	Grace time.Duration
	// Heartbeat is the interval of tool.EventHeartbeat events while a
	// command runs (seed: "An empty heartbeat is yielded every 30
	// seconds"); they reach the client only, never the model. Default 30 s.
	Heartbeat time.Duration
	// MaxOutputChars bounds the output text in the result, in characters
	// (runes) after normalization: the first half and the last half are
	// kept, the middle is replaced by a marker. Default 30,000 characters.
	MaxOutputChars int
	// Env changes the sandbox's safe default environment (for the local
	// sandbox: PATH, HOME, LANG, ... plus the non-interactive set CI=1,
	// DEBIAN_FRONTEND=noninteractive, GIT_TERMINAL_PROMPT=0, NO_COLOR=1,
	// TERM=dumb, pagers "cat", editors "true"; localsandbox.DefaultEnv),
	// applied in order: NAME passes the host's NAME through when set (for
	// example GOPATH, HTTPS_PROXY), NAME=VALUE sets it (CI=0), -NAME
	// removes it (-CI). It takes effect when the sandbox offers
	// ExecEnv([]string) []string (the local sandbox does); otherwise the
	// sandbox's default environment is used unchanged. Default none.
	Env []string
	// OutputDir is the directory where each call's full raw output
	// (stdout and stderr bytes as they arrived) is written as it is
	// produced, one file per call: <taskId>/<toolCallId>.log when the
	// call's context carries a task id (tool.TaskID; result.Recorder sets
	// it), else <toolCallId>.log, ids made safe as file names. It is
	// created when missing. The path is shown in the result; when the
	// output was capped the result also names the omitted lines as a
	// view_tool_call call ({"id": toolCallId, "lines": "FIRST-LAST"}),
	// which reads this file when compact.ViewOptions.FullOutputDir is this
	// directory (as the aibuddy program sets it). Default "": no file.
	OutputDir string
	// MaxOutputFileBytes bounds one full output file, in bytes; past it the
	// file stops growing and the result says so. Default 1 GiB.
	MaxOutputFileBytes int64
	// Payloads, when set, also receives each call's full output at the
	// call's end (store.OutputPayloadName in the call's task), so
	// view_tool_call works from any process that reaches the store
	// (execpayload.go). Default nil: the local file only.
	Payloads store.Payloads
	// Quota bounds the total size of the data folder the full output files
	// live in, removing the oldest full outputs (and other files under
	// Quota.Evict) to make room; when no room is left the file stops
	// growing, and the result says so and offers no lines that were not
	// kept. nil means the defaults: OutputDir itself, 10 GiB, its own
	// files evictable. Only used with OutputDir.
	Quota *DataQuota
	// Jobs runs the commands of calls with "background": true (package
	// jobs; coretools/jobs.go); nil: execute offers no background field.
	Jobs *jobs.Runner
}

// Defaults of ExecuteOptions (config.DefaultExecMaxTimeout repeats
// DefaultExecMaxTimeout to validate settings; a test in internal/cli checks
// that they agree).
const (
	DefaultExecTimeout        = 2 * time.Minute  // ExecuteOptions.DefaultTimeout
	DefaultExecMaxTimeout     = 10 * time.Minute // ExecuteOptions.MaxTimeout
	DefaultExecGrace          = 30 * time.Second // ExecuteOptions.Grace
	DefaultExecHeartbeat      = 30 * time.Second // ExecuteOptions.Heartbeat
	DefaultExecMaxOutputChars = 30000            // ExecuteOptions.MaxOutputChars, characters
	DefaultExecMaxOutputFile  = 1 << 30          // ExecuteOptions.MaxOutputFileBytes, bytes (1 GiB)
)

// withDefaults returns a copy of o with every unset field at its default.
func (o *ExecuteOptions) withDefaults() ExecuteOptions {
	var r ExecuteOptions
	if o != nil {
		r = *o
		r.Env = append([]string(nil), o.Env...)
	}
	setDur := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	setDur(&r.DefaultTimeout, DefaultExecTimeout)
	setDur(&r.MaxTimeout, DefaultExecMaxTimeout)
	setDur(&r.Grace, DefaultExecGrace)
	setDur(&r.Heartbeat, DefaultExecHeartbeat)
	if r.MaxOutputChars <= 0 {
		r.MaxOutputChars = DefaultExecMaxOutputChars
	}
	if r.MaxOutputFileBytes <= 0 {
		r.MaxOutputFileBytes = DefaultExecMaxOutputFile
	}
	if r.DefaultTimeout > r.MaxTimeout {
		r.DefaultTimeout = r.MaxTimeout
	}
	return r
}

// ExecuteInstructions returns the execute group's runtime instructions for
// the system prompt (seed: "Each ServerToolConfig owns tool creation,
// runtime instructions, and result hooks") with the bounds of opts (nil
// means the defaults): the default and largest timeout, in the units of
// exDuration ("2 min", "45 s"), and the output cap and its head and tail,
// in characters. [Groups] uses it for the execute group, so the agent's
// system prompt and the MCP initialize instructions state the configured
// numbers, as the tool description does. The sentence on the full output
// file appears only when opts.OutputDir is set.
func ExecuteInstructions(opts *ExecuteOptions) string {
	o := opts.withDefaults()
	var b strings.Builder
	b.WriteString(`Use execute to run shell commands in the workspace: builds, tests, git, package managers, scripts. Prefer the filesystem tools to list, read, search and edit files.
- Each call starts a fresh shell (sh -c) in the workspace root, or in workdir (a directory inside the workspace); cd and variables do not carry over between calls.
- There is no terminal and stdin is empty: prompts, editors and pagers cannot wait for input (EDITOR, GIT_EDITOR are "true", PAGER is "cat"). Pass non-interactive flags (-y, -m "message", --no-edit).
`)
	fmt.Fprintf(&b, "- Commands time out after %s unless you set timeout_ms (at most %s). On timeout or when the call is stopped, the whole process tree is killed and you get the partial output. Background processes (cmd &) are stopped when the command ends, so start nothing that must outlive the call.\n",
		exDuration(o.DefaultTimeout), exDuration(o.MaxTimeout))
	b.WriteString("- The result starts with the exit code, the duration and how many characters and lines were produced (after the cut notice, when the output was capped). A non-zero exit code is a normal result: read the output and fix the cause.\n")
	fmt.Fprintf(&b, "- Output is capped at %s characters: %s are kept, a marker line stands where the middle was left out, and the result's first line is a [cut by execute ...] notice naming the omitted characters and lines and how to recover them. Colour codes and progress frames are removed and binary data is described, not shown. When you need the middle, narrow the command (grep, head, tail -n, a quieter flag) or redirect output to a file and read slices of it",
		exCount(int64(o.MaxOutputChars)), exKept(o.MaxOutputChars))
	if o.OutputDir != "" {
		b.WriteString("; when the result names a full output file, read the omitted lines it names with sed -n 'FIRST,LASTp' FILE or grep -n PATTERN FILE, or with the view_tool_call call the result gives")
	}
	b.WriteString(".\n- Exit code 0 is not proof of the goal: check the output and the files or artifacts the command should have produced.")
	return b.String()
}

// exKept names the head and tail that a cap of maxChars keeps (the head is
// maxChars/2 characters, the tail the rest, as newOutputCap splits it).
func exKept(maxChars int) string {
	h := maxChars / 2
	if t := maxChars - h; t != h {
		return fmt.Sprintf("the first %s and the last %s", exCount(int64(h)), exCount(int64(t)))
	}
	return fmt.Sprintf("the first and last %s", exCount(int64(h)))
}

// execEnver is offered by sandboxes that can build their default command
// environment with overrides (localsandbox.Sandbox).
type execEnver interface {
	ExecEnv(overrides []string) []string
}

// executeInput is the decoded input of one call.
type executeInput struct {
	Command   string `json:"command"`
	TimeoutMS *int64 `json:"timeout_ms,omitempty"`
	Workdir   string `json:"workdir,omitempty"`
	// Background starts the command as a background job (Jobs).
	Background bool `json:"background,omitempty"`
}

const executeSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The shell command (sh -c), run in a fresh shell."},
    "timeout_ms": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds; default %d, at most %d (larger values are clamped)."},
    "workdir": {"type": "string", "description": "Working directory relative to the workspace root; default the root."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

// Execute builds the execute tool over sb (seed: "Long-running execution
// combines heartbeats, cancellation, and output bounds"). opts may be nil.
//
// A call runs input command in the sandbox with timeout_ms (default
// DefaultTimeout, clamped to MaxTimeout) and workdir, and:
//   - streams every stdout/stderr chunk to the client as tool.EventStdout /
//     tool.EventStderr events, and a tool.EventHeartbeat every Heartbeat;
//   - builds the model's text as the output is produced: the first and last
//     MaxOutputChars/2 characters of the normalized output (ANSI sequences
//     stripped, carriage-return frames collapsed, invalid UTF-8 replaced,
//     binary data described), with a marker naming the omitted characters
//     and lines ([tool.CutMarker]), under a header with exit code, duration
//     and totals; a capped output's first line is its [tool.Cut] notice;
//   - keeps the full raw output in OutputDir, when set, and then the notice
//     names the omitted lines of a capped output as (for a call with an
//     ID) view_tool_call {"id":ID,"lines":"FIRST-LAST"} and sed -n / grep
//     commands on the file.
//
// A non-zero exit code is a normal result. A timeout, a cancellation and a
// sandbox that does not stop within Grace are error results at the
// Execution stage that still carry the partial output (BH-030). Evidence
// keys: exit_code, timed_out, cancelled, duration_ms, output_chars,
// output_lines, shown_chars, omitted_chars, omitted_lines, stderr_chars,
// output_bytes (raw bytes of both streams), lingering, full_output_path and
// full_output_bytes (when kept), full_output_stopped ("file_limit",
// "data_dir_limit" or "write_error", when the file stopped early),
// evicted_outputs (older files the quota removed, when any), binary_bytes
// (when any), timeout_ms, confinement_denials (what the OS confinement refused, when
// anything). A sandbox without sandbox.OpExec gives an Execution error; a
// workdir outside the workspace an Authorization error; a missing workdir a
// Parameters error.
func Execute(sb sandbox.Sandbox, opts *ExecuteOptions) *tool.Tool {
	e := &executor{sb: sb, opts: opts.withDefaults()}
	e.quota = newDataQuota(e.opts.Quota, e.opts.OutputDir)
	t := true
	return tool.MustDefine(tool.Spec{
		Name:        "execute",
		Description: e.description(),
		InputSchema: e.jobSchema(fmt.Sprintf(executeSchema, e.opts.DefaultTimeout.Milliseconds(), e.opts.MaxTimeout.Milliseconds())),
		Annotations: &tool.Annotations{Title: "Run a shell command", DestructiveHint: &t, OpenWorldHint: &t},
		Handler:     e.call,
		Verify:      verifyExecute,
		OutputFile:  e.outputFile,
		Access:      executeAccess,
	})
}

type executor struct {
	sb    sandbox.Sandbox
	opts  ExecuteOptions
	quota *dataQuota // nil without OutputDir
}

func (e *executor) description() string {
	o := e.opts
	conf := ""
	if cr, ok := e.sb.(sandbox.ConfinementReporter); ok {
		conf = "\n" + cr.Confinement().Summary
	}
	return fmt.Sprintf(`Run a shell command (sh -c) in the workspace and return its exit code, duration and output.
Each call is a fresh, non-interactive shell: no terminal, empty stdin, pagers and editors disabled; cd does not persist. The timeout is %s by default (timeout_ms, at most %s); at the timeout the whole process tree is killed and the partial output returned. Background processes are stopped when the command ends.
Output (stdout and stderr interleaved) is capped at %s characters: %s are kept with a marker naming the omitted characters and lines. Colour codes and progress frames are removed. For the full detail, narrow the command or write output to a file and read slices of it.%s%s`,
		exDuration(o.DefaultTimeout), exDuration(o.MaxTimeout), exCount(int64(o.MaxOutputChars)),
		exKept(o.MaxOutputChars), e.jobDescription(), conf)
}

// execOutcome is what the sandbox's Exec returned.
type execOutcome struct {
	res *sandbox.ExecResult
	err error
}

func (e *executor) call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[executeInput](call)
	if err != nil {
		return nil, err
	}
	if !e.sb.Supports(sandbox.OpExec) {
		return nil, tool.Errorf(tool.Execution, "this sandbox (%s) does not run commands: %w", e.sb.Kind(), sandbox.ErrUnsupported).
			WithHint("use the filesystem tools, or run on a sandbox that supports execute")
	}
	if in.Background {
		return e.background(ctx, call, in)
	}
	var notes []string
	timeout := e.opts.DefaultTimeout
	if in.TimeoutMS != nil {
		asked := time.Duration(*in.TimeoutMS) * time.Millisecond
		if *in.TimeoutMS > e.opts.MaxTimeout.Milliseconds() {
			asked = e.opts.MaxTimeout
			notes = append(notes, fmt.Sprintf("timeout_ms %d is over the maximum %d; clamped to %s",
				*in.TimeoutMS, e.opts.MaxTimeout.Milliseconds(), exDuration(e.opts.MaxTimeout)))
		}
		timeout = asked
	}

	out := newOutputCap(e.opts.MaxOutputChars, call.Events)
	var evicted int // files the quota removed to make room (under out's lock)
	if e.opts.OutputDir != "" {
		began := time.Now()
		f, err := e.createOutputFile(ctx, call.ID)
		if err != nil {
			notes = append(notes, "the full output is not kept: "+err.Error())
		} else {
			defer f.Close()
			e.quota.begin(f.Name())
			defer e.quota.end(f.Name())
			out.keepFile(f, e.opts.MaxOutputFileBytes, func(need, limit int64) int64 {
				g, removed := e.quota.reserve(need, limit, began)
				evicted += removed
				return g
			})
		}
	}
	req := sandbox.ExecRequest{
		Command: in.Command,
		Dir:     in.Workdir,
		Timeout: timeout,
		Stdout:  out.writer(outStdout),
		Stderr:  out.writer(outStderr),
	}
	if len(e.opts.Env) > 0 {
		if en, ok := e.sb.(execEnver); ok {
			req.Env = en.ExecEnv(e.opts.Env)
		}
	}

	o, abandoned, cancelled := e.run(ctx, req, timeout, out)
	out.finish()
	out.dropEmptyFile()
	if o.res == nil && !abandoned {
		if o.err == nil {
			o.err = errors.New("the sandbox returned no result")
		}
		return nil, execError(ctx, o.err, in.Workdir)
	}
	if note := e.copyToPayloads(ctx, call.ID, out.keptFile()); note != "" {
		notes = append(notes, note)
	}
	r := e.result(call.ID, timeout, o, abandoned, cancelled, notes, out)
	if evicted > 0 {
		r.Evidence["evicted_outputs"] = evicted
	}
	return r, nil
}

// run starts the command and waits for it, emitting heartbeats, within the
// hard deadline timeout + Grace (and at most Grace after ctx is done).
// abandoned reports that the sandbox did not return in time; cancelled that
// ctx was done while it ran.
func (e *executor) run(ctx context.Context, req sandbox.ExecRequest, timeout time.Duration, out *outputCap) (o execOutcome, abandoned, cancelled bool) {
	execCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan execOutcome, 1)
	go func() {
		res, err := e.sb.Exec(execCtx, req)
		done <- execOutcome{res, err}
	}()
	beat := time.NewTicker(e.opts.Heartbeat)
	defer beat.Stop()
	hardAt := time.Now().Add(timeout + e.opts.Grace)
	hard := time.NewTimer(time.Until(hardAt))
	defer hard.Stop()
	ctxDone := ctx.Done()
	for {
		select {
		case o = <-done:
			return o, false, cancelled || (o.res != nil && o.res.Cancelled)
		case <-beat.C:
			out.heartbeat()
		case <-ctxDone:
			ctxDone, cancelled = nil, true
			if at := time.Now().Add(e.opts.Grace); at.Before(hardAt) {
				hardAt = at
				hard.Reset(time.Until(hardAt))
			}
		case <-hard.C:
			return execOutcome{}, true, cancelled
		}
	}
}

// createOutputFile creates the call's full output file in OutputDir (made
// absolute: the model reads it from another working directory):
// <taskId>/<toolCallId>.log when ctx carries a task id ([tool.TaskID]; the
// result.Recorder sets it), else <toolCallId>.log; a call without an id
// gets call-<random>.log. Ids become safe file names ([tool.SafeFileName]), so
// no id escapes OutputDir. An existing file is never overwritten: a
// repeated id gets "~2", "~3", ... before ".log".
func (e *executor) createOutputFile(ctx context.Context, callID string) (*os.File, error) {
	dir, err := filepath.Abs(e.opts.OutputDir)
	if err != nil {
		return nil, err
	}
	if task := tool.TaskID(ctx); task != "" {
		dir = filepath.Join(dir, tool.SafeFileName(task))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if callID == "" {
		return os.CreateTemp(dir, "call-*.log")
	}
	base := tool.SafeFileName(callID)
	for n := 1; ; n++ {
		name := base + ".log"
		if n > 1 {
			name = base + "~" + strconv.Itoa(n) + ".log"
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && n < 100 {
			continue
		}
		return f, err
	}
}

// execError maps a sandbox error that prevented the run to a stage.
func execError(ctx context.Context, err error, workdir string) *tool.Error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	e := &tool.Error{Stage: tool.Execution, Msg: err.Error(), Err: err}
	switch {
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		e.Stage, e.Msg = tool.Authorization, fmt.Sprintf("workdir %q is outside the workspace: %v", workdir, err)
		e.Hint = "use a workdir inside the workspace (relative to its root), or omit it"
	case errors.Is(err, sandbox.ErrNotFound), errors.Is(err, sandbox.ErrNotDir):
		e.Stage, e.Msg = tool.Parameters, fmt.Sprintf("workdir %q is not a directory in the workspace: %v", workdir, err)
		e.Hint = "check the directory with ls, or omit workdir to run in the root"
	case errors.Is(err, sandbox.ErrConfinement):
		e.Stage, e.Msg = tool.Authorization, "the command was not run: "+err.Error()
		e.Hint = "commands run only under the configured confinement (sandbox.confinement); retrying will not help: a person must fix the machine or change the setting"
	case errors.Is(err, os.ErrPermission):
		e.Stage = tool.Authorization
		e.Hint = "the host does not permit this; choose another workdir"
	case errors.Is(err, sandbox.ErrUnsupported):
		e.Hint = "this sandbox cannot run commands; use the filesystem tools"
	case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		e.Msg = "cancelled before the command started: " + err.Error()
		e.Hint = "the call was stopped; nothing ran"
	default:
		e.Msg = "the command could not be started: " + err.Error()
		e.Hint = "check the sandbox's shell and workspace"
	}
	return e
}

// result renders the header, notes and projection, and the evidence.
func (e *executor) result(callID string, timeout time.Duration, o execOutcome, abandoned, cancelled bool, notes []string, out *outputCap) *tool.Result {
	text, st := out.projection()
	res := o.res
	if res == nil {
		res = &sandbox.ExecResult{ExitCode: -1, TimedOut: !cancelled, Cancelled: cancelled}
	}
	timedOut := res.TimedOut
	cancelled = cancelled || res.Cancelled
	if cancelled {
		timedOut = false // the caller's stop is the cause the model should see
	}
	dur := res.Duration
	var b strings.Builder
	isError := timedOut || cancelled || abandoned
	switch {
	case abandoned:
		cause := fmt.Sprintf("the command timed out after %s", exDuration(timeout))
		if cancelled {
			cause = "the call was cancelled"
		}
		fmt.Fprintf(&b, "Execution error in execute: %s and the sandbox did not stop it within the %s grace; it may still be running (next: inspect the state before retrying; a narrower or shorter command is safer)\n",
			cause, exDuration(e.opts.Grace))
	case cancelled:
		fmt.Fprintf(&b, "Execution error in execute: cancelled by the caller after %s; the command's process group was stopped (next: inspect the state before retrying)\n",
			exDuration(dur))
	case timedOut:
		fmt.Fprintf(&b, "Execution error in execute: timed out after %s; the command's process group was stopped (next: raise timeout_ms up to %d, or narrow the command; inspect partial effects before retrying)\n",
			exDuration(timeout), e.opts.MaxTimeout.Milliseconds())
	}
	exit := strconv.Itoa(res.ExitCode)
	if res.ExitCode == -1 {
		exit = "-1 (ended by a signal)"
	}
	if abandoned {
		exit = "unknown"
	}
	fmt.Fprintf(&b, "exit code: %s · duration: %s\n", exit, exDuration(dur))
	for _, n := range notes {
		b.WriteString("note: " + n + "\n")
	}
	if res.Lingering {
		b.WriteString("note: background processes kept the output open after the shell exited; they were stopped and output after that point is not included\n")
	}
	if res.Escaped > 0 {
		fmt.Fprintf(&b, "note: %d background process(es) had left the command's process group (setsid/daemon) and were stopped; execute does not keep processes running past the call\n", res.Escaped)
	}
	for _, d := range res.Denied {
		b.WriteString("denied by confinement: " + d + "\n")
	}
	if len(res.Denied) > 0 {
		b.WriteString("note: the sandbox's confinement refused this (policy, not a fault): retrying or working around it will not help; if the task needs it, tell the user which setting would allow it\n")
	}
	raw := ""
	if st.FilePath != "" {
		raw = "the full output file"
	}
	contentNotes(&b, st, [2]string{"stdout", "stderr"}, 0, raw)
	b.WriteString("output: ")
	if st.Chars == 0 {
		b.WriteString("none")
	} else {
		fmt.Fprintf(&b, "%s in %s", exPlural(st.Chars, "character", "characters"), exPlural(st.Lines, "line", "lines"))
		if st.OmittedChars > 0 {
			b.WriteString(" (cut: see the first line)")
		}
	}
	if st.StderrChars > 0 {
		fmt.Fprintf(&b, "; stdout and stderr interleaved, %s from stderr", exPlural(st.StderrChars, "character", "characters"))
	}
	b.WriteString("\n")
	if st.FilePath == "" && st.FileQuota {
		// Not one byte fitted: the empty file was removed.
		fmt.Fprintf(&b, "full output: not kept: the data folder is at its %s-byte limit (limits.dataDirMaxBytes) with no older full output left to remove (free space in it, or raise the limit)\n",
			exCount(e.quota.max))
	}
	if st.FilePath != "" {
		fmt.Fprintf(&b, "full output: %s (raw bytes as produced, %s bytes", st.FilePath, exCount(st.FileBytes))
		if st.FileFull {
			fmt.Fprintf(&b, "; stopped at the %s-byte limit", exCount(e.opts.MaxOutputFileBytes))
		}
		if st.FileQuota {
			fmt.Fprintf(&b, "; stopped: the data folder is at its %s-byte limit (limits.dataDirMaxBytes) with no older full output left to remove", exCount(e.quota.max))
		}
		if st.FileErr != nil {
			fmt.Fprintf(&b, "; writing failed, the file holds only what came before: %v", st.FileErr)
		}
		b.WriteString(")\n")
	}
	if st.Chars > 0 {
		b.WriteString("---\n")
		b.WriteString(text)
	}
	if st.OmittedChars > 0 {
		// The cut notice is the result's first line (BH-047), in the one
		// format of every cut result (tool.Cut).
		notice := tool.Cut{
			By: "execute", Bound: "the " + exCount(int64(e.opts.MaxOutputChars)) + "-character output cap",
			TotalChars: st.Chars, TotalLines: st.Lines,
			HeadChars: int64(out.headMax), TailChars: int64(out.tailMax),
			OmittedChars: st.OmittedChars, OmittedFirst: st.FirstOmitted, OmittedLast: st.LastOmitted,
			Next: execRecovery(callID, st, e.opts.MaxOutputFileBytes),
		}.Notice()
		s := b.String()
		b.Reset()
		b.WriteString(notice)
		b.WriteString("\n")
		b.WriteString(s)
	}

	ev := tool.Evidence{
		tool.EvidenceExitCode:    res.ExitCode,
		tool.EvidenceTimedOut:    timedOut || (abandoned && !cancelled),
		tool.EvidenceCancelled:   cancelled,
		"duration_ms":            dur.Milliseconds(),
		tool.EvidenceOutputChars: st.Chars,
		tool.EvidenceOutputLines: st.Lines,
		tool.EvidenceShownChars:  st.Shown,
		"omitted_chars":          st.OmittedChars,
		"omitted_lines":          st.OmittedLines,
		"stderr_chars":           st.StderrChars,
		"output_bytes":           st.RawBytes[outStdout] + st.RawBytes[outStderr],
		"lingering":              res.Lingering,
		"escaped":                res.Escaped,
		"timeout_ms":             timeout.Milliseconds(),
	}
	if abandoned {
		ev["sandbox_unresponsive"] = true
	}
	if len(res.Denied) > 0 {
		ev["confinement_denials"] = res.Denied
	}
	if st.FilePath != "" {
		ev[tool.EvidenceFullOutputPath] = st.FilePath
		ev["full_output_bytes"] = st.FileBytes
	}
	switch {
	case st.FileQuota:
		ev["full_output_stopped"] = "data_dir_limit"
	case st.FileFull:
		ev["full_output_stopped"] = "file_limit"
	case st.FileErr != nil:
		ev["full_output_stopped"] = "write_error"
	}
	if bin := st.BinaryBytes[0] + st.BinaryBytes[1]; bin > 0 {
		ev["binary_bytes"] = bin
	}
	if bad := st.InvalidBytes[0] + st.InvalidBytes[1]; bad > 0 {
		ev["invalid_utf8_bytes"] = bad
	}
	r := &tool.Result{
		Content:  []tool.Content{{Type: tool.TextContent, Text: b.String()}},
		Evidence: ev,
	}
	if isError {
		r.IsError, r.Stage = true, tool.Execution
	}
	return r
}

// execRecovery is the cut notice's next step for a capped output: the
// view_tool_call that reads the omitted lines from the full output file
// (when the call has an ID), and sed/grep on that file; or why they cannot
// be recovered and what to do instead.
func execRecovery(callID string, st capStats, fileMax int64) string {
	if st.FilePath == "" {
		return "they were not kept: re-run narrower (grep, head, tail -n) or redirect the output to a file and read slices of it"
	}
	first, last := st.FirstOmitted, st.LastOmitted
	var b strings.Builder
	if stopped := st.FileFull || st.FileQuota || st.FileErr != nil; stopped && last > st.FileLines {
		// The file stopped early: only the omitted lines it holds can be
		// read back; say so instead of offering the rest.
		why, raise := fmt.Sprintf("the full output file's %s-byte limit", exCount(fileMax)), "raise limits.execMaxOutputFileBytes"
		switch {
		case st.FileQuota:
			why, raise = "the data folder's limit (limits.dataDirMaxBytes)", "free space in the data folder or raise limits.dataDirMaxBytes"
		case st.FileErr != nil:
			why, raise = "where writing the full output file failed", "free disk space"
		}
		if first > st.FileLines {
			return fmt.Sprintf("they are past %s and cannot be recovered: re-run narrower, or %s", why, raise)
		}
		fmt.Fprintf(&b, "the omitted lines after line %s are past %s and cannot be recovered; ", exCount(st.FileLines), why)
		last = st.FileLines
	}
	b.WriteString("recover them with ")
	if callID != "" {
		// view_tool_call reads an execute record's full output file (part
		// "output", its default) when the file lies in its FullOutputDir;
		// lines is a 1-based inclusive range.
		var hint bytes.Buffer
		enc := json.NewEncoder(&hint)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(struct {
			ID    string `json:"id"`
			Lines string `json:"lines"`
		}{callID, fmt.Sprintf("%d-%d", first, last)})
		fmt.Fprintf(&b, "view_tool_call %s, or ", bytes.TrimSpace(hint.Bytes()))
	}
	fmt.Fprintf(&b, "execute: sed -n '%d,%dp' %s (grep -n PATTERN %s to search)",
		first, last, exShellQuote(st.FilePath), exShellQuote(st.FilePath))
	return b.String()
}

// exDuration formats d for the model: "2 min", "1.5 s", "300 ms".
func exDuration(d time.Duration) string {
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	default:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
}

// exShellQuote quotes p for sh when it holds anything but safe characters.
func exShellQuote(p string) string {
	safe := p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%", r))
	}) < 0
	if safe {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// executeAccess is the approval target of an execute call: the command
// line and its working folder (tool.Access kind "Bash").
func executeAccess(input json.RawMessage) (tool.Access, error) {
	var in struct {
		Command string `json:"command"`
		Workdir string `json:"workdir"`
	}
	if len(input) > 0 {
		if err := json.Unmarshal(input, &in); err != nil {
			return tool.Access{}, err
		}
	}
	return tool.Access{Kind: tool.AccessBash, Command: in.Command, Workdir: in.Workdir}, nil
}

// invalidOffsets says where the first invalid bytes were, in raw bytes of
// the stream: "at byte offsets 3, 4, 5" or "first at byte offsets 3, 4, 5,
// 9, 10".
func invalidOffsets(n int64, at []int64) string {
	parts := make([]string, len(at))
	for i, o := range at {
		parts[i] = exCount(o)
	}
	word := "offset"
	if len(at) > 1 {
		word = "offsets"
	}
	if int64(len(at)) < n {
		return "first at byte " + word + " " + strings.Join(parts, ", ")
	}
	return "at byte " + word + " " + strings.Join(parts, ", ")
}

// contentNotes writes the notes on output that was not shown as it was:
// binary data (NUL bytes) and bytes that were not valid UTF-8. names are
// the two streams' names in the notes; base is added to the raw offsets
// (the byte of the log a read started at); raw, when set, names where the
// raw bytes are kept.
func contentNotes(b *strings.Builder, st capStats, names [2]string, base int64, raw string) {
	for s, name := range names {
		if st.BinaryBytes[s] > 0 {
			fmt.Fprintf(b, "note: %s turned binary (NUL bytes) at byte %s; %s bytes of binary data are not shown (inspect with od -c, file or xxd | head)\n",
				name, exCount(base+st.BinaryAt[s]), exCount(st.BinaryBytes[s]))
		}
	}
	for s, name := range names {
		n := st.InvalidBytes[s]
		if n == 0 {
			continue
		}
		were, kept := "were", ""
		if n == 1 {
			were = "was"
		}
		if raw != "" {
			kept = "; the raw bytes are in " + raw
		}
		at := make([]int64, min(n, invalidAtMax))
		for i := range at {
			at[i] = base + st.InvalidAt[s][i]
		}
		fmt.Fprintf(b, "note: %s in %s %s not valid UTF-8 and shown as U+FFFD (%s)%s\n",
			exPlural(n, "byte", "bytes"), name, were, invalidOffsets(n, at), kept)
	}
}
