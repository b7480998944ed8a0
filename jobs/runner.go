package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// Store is what a Runner keeps jobs in: their records and their logs
// (payload "jobs/<jobId>.log" of the job's task).
type Store interface {
	store.Jobs
	store.Payloads
}

// MarkerKey is the environment variable every process of a job inherits,
// with the job's id as value ([Marker]): it finds the processes of a job
// whose aibuddy died (and tests check /proc with it).
const MarkerKey = "AIBUDDY_JOB_ID"

// Marker is the "KEY=VALUE" environment entry of job id.
func Marker(id string) string { return MarkerKey + "=" + id }

// Reasons a job was ended by aibuddy rather than on its own (Info.Reason).
const (
	ReasonKilled   = "job_kill"      // a job_kill call
	ReasonTaskEnd  = "task ended"    // its session or run ended (Options.KeepAfterTask false)
	ReasonShutdown = "aibuddy ended" // the Runner was closed
	ReasonLifetime = "lifetime"      // it ran longer than Options.MaxLifetime
	ReasonIdle     = "idle"          // it printed nothing for Options.IdleTimeout
)

// markKiller is offered by sandboxes that can find a command's processes
// by an environment entry (localsandbox.Sandbox.KillMarked).
type markKiller interface {
	KillMarked(marker string) int
}

// execEnver is offered by sandboxes that build their default command
// environment with overrides (localsandbox.Sandbox.ExecEnv).
type execEnver interface {
	ExecEnv(overrides []string) []string
}

// Runner starts background jobs in one sandbox, keeps their output (a
// local log file and its copy in the store) and their records in the
// store, and ends them with their task. It is safe for concurrent use.
type Runner struct {
	sb    sandbox.Sandbox
	st    Store
	opts  Options
	owner string

	life context.Context // every job's context derives from it
	stop context.CancelFunc

	stored atomic.Int64 // bytes kept of every job, against MaxTotalBytes

	mu     sync.Mutex
	jobs   map[string]*job // the jobs this Runner started
	closed bool
}

// New returns a Runner over sb that keeps its jobs in st. opts may be nil
// except for LogDir, which is required. The error names the setting at
// fault (a LogDir that cannot be created).
func New(sb sandbox.Sandbox, st Store, opts *Options) (*Runner, error) {
	o := opts.withDefaults()
	if o.LogDir == "" {
		return nil, errors.New("jobs: Options.LogDir is required (the folder of the jobs' logs)")
	}
	dir, err := filepath.Abs(o.LogDir)
	if err != nil {
		return nil, fmt.Errorf("jobs: log folder: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("jobs: log folder: %w (set the data folder to a writable one)", err)
	}
	o.LogDir = dir
	if o.Workspace == "" {
		o.Workspace = sb.Workspace()
	}
	life, stop := context.WithCancel(context.Background())
	return &Runner{sb: sb, st: st, opts: o, owner: ownerOf(os.Getpid()), life: life, stop: stop, jobs: map[string]*job{}}, nil
}

// Options returns the Runner's options with every default filled in.
func (r *Runner) Options() Options { return r.opts }

// detail is what a Runner keeps in store.Job.Detail.
type detail struct {
	Workspace   string   `json:"workspace,omitempty"`
	LogPath     string   `json:"log_path,omitempty"`
	StoredBytes int64    `json:"stored_bytes"`
	Reason      string   `json:"reason,omitempty"`
	Keep        bool     `json:"keep,omitempty"`
	Escaped     int      `json:"escaped,omitempty"`
	Lingering   bool     `json:"lingering,omitempty"`
	Denied      []string `json:"denied,omitempty"`
	LogError    string   `json:"log_error,omitempty"`
	Stopped     []int    `json:"stopped,omitempty"`
}

// Info is one job as the tools show it.
type Info struct {
	ID, TaskID, ToolCallID string
	Command, Dir           string
	State                  store.JobState
	ExitCode               int // when ended; -1 for a signal or unknown
	PID                    int // 0 when unknown
	StartedAt, EndedAt     time.Time
	// OutputBytes counts every byte the job produced; StoredBytes those
	// kept (at most Options.MaxOutputBytes); ReadOffset those job_output
	// returned so far.
	OutputBytes, StoredBytes, ReadOffset int64
	LogPath                              string // the local log file
	LogPayload                           string // its copy in the store, of TaskID
	// Reason says why aibuddy ended a killed or lost job (Reason*
	// constants, or for a lost job what happened to its owner).
	Reason    string
	Keep      bool     // kept after its task (Options.KeepAfterTask)
	Local     bool     // run by this Runner (else another or an ended process)
	Owner     string   // the owner process, "aibuddy:HOST:PID:START"
	Escaped   int      // descendants that had left the process group and were stopped
	Lingering bool     // output holders outlived the shell and were stopped
	Denied    []string // what the OS confinement refused
	LogError  string   // why the log stopped early, when it did
	// Stopped are the pids of the job's processes found and stopped when
	// it was killed or found lost (Linux), when known.
	Stopped []int
}

// Dropped is how many output bytes were counted but not kept.
func (i *Info) Dropped() int64 { return max(0, i.OutputBytes-i.StoredBytes) }

// Running reports whether the job has not ended.
func (i *Info) Running() bool { return i.State == store.JobRunning }

func infoOf(j *store.Job) *Info {
	var d detail
	if len(j.Detail) > 0 {
		_ = json.Unmarshal(j.Detail, &d)
	}
	return &Info{ID: j.JobID, TaskID: j.TaskID, ToolCallID: j.ToolCallID, Command: j.Command, Dir: j.Dir,
		State: j.State, ExitCode: j.ExitCode, PID: j.PID, StartedAt: j.StartedAt, EndedAt: j.EndedAt,
		OutputBytes: j.OutputBytes, StoredBytes: d.StoredBytes, ReadOffset: j.ReadOffset,
		LogPath: d.LogPath, LogPayload: j.Log, Reason: d.Reason, Keep: d.Keep, Owner: j.Owner,
		Escaped: d.Escaped, Lingering: d.Lingering, Denied: d.Denied, LogError: d.LogError, Stopped: d.Stopped}
}

func recordOf(i *Info, workspace string) *store.Job {
	d, _ := json.Marshal(detail{Workspace: workspace, LogPath: i.LogPath, StoredBytes: i.StoredBytes, Reason: i.Reason,
		Keep: i.Keep, Escaped: i.Escaped, Lingering: i.Lingering, Denied: i.Denied, LogError: i.LogError, Stopped: i.Stopped})
	return &store.Job{JobID: i.ID, TaskID: i.TaskID, ToolCallID: i.ToolCallID, Command: i.Command, Dir: i.Dir,
		State: i.State, ExitCode: i.ExitCode, PID: i.PID, Owner: i.Owner, StartedAt: i.StartedAt, EndedAt: i.EndedAt,
		OutputBytes: i.OutputBytes, ReadOffset: i.ReadOffset, Log: i.LogPayload, Detail: d}
}

// job is a job this Runner runs.
type job struct {
	r      *Runner
	cancel context.CancelFunc
	done   chan struct{} // closed when the job ended and its last output was stored

	mu      sync.Mutex
	info    Info
	file    *os.File // the log, open while the job runs
	written int64    // bytes in the log file
	lastOut time.Time
	changed chan struct{} // closed and replaced on new output and at the end
	kick    chan struct{} // wakes the flusher early (capacity 1)
	reason  string        // why aibuddy stopped it, once asked
	copied  int64         // bytes of the log copied to the store
	// putOutput and putStored are the counters of the last stored record.
	putOutput, putStored int64

	flushMu sync.Mutex // one flush at a time
	putMu   sync.Mutex // one record put at a time
}

// StartRequest is one background command.
type StartRequest struct {
	TaskID     string // the task (session or run) it belongs to; ends with it
	ToolCallID string // the execute call that starts it
	Command    string // sh -c COMMAND, as execute runs it
	Dir        string // working directory, workspace-relative
}

// Start starts req's command in the sandbox under its own context (so
// cancelling it kills the command's whole process tree, as execute's
// timeout does) and returns at once, once the sandbox reported the
// process (at most Options.StartWait). The job's record is in the store
// before the command starts. Errors are *tool.Error: Authorization for
// the running-jobs limit (Options.MaxRunning) or a Runner that is closed;
// the sandbox's own refusals (a workdir outside the workspace, a
// confinement that cannot be enforced) keep its stage; Execution for a
// store or log file that cannot be written.
func (r *Runner) Start(ctx context.Context, req StartRequest) (*Info, error) {
	if !r.sb.Supports(sandbox.OpExec) {
		return nil, tool.Errorf(tool.Execution, "this sandbox (%s) does not run commands: %w", r.sb.Kind(), sandbox.ErrUnsupported).
			WithHint("use the filesystem tools")
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, tool.Errorf(tool.Authorization, "background jobs are closed: aibuddy is stopping").WithHint("start the command after aibuddy restarts")
	}
	n := 0
	for _, j := range r.jobs {
		if j.info.TaskID == req.TaskID && j.running() {
			n++
		}
	}
	if n >= r.opts.MaxRunning {
		r.mu.Unlock()
		return nil, tool.Errorf(tool.Authorization, "this session already runs %d background jobs, the limit (jobs.maxRunning)", n).
			WithHint("stop one with job_kill (list them with jobs), or raise jobs.maxRunning in the settings")
	}
	id := r.opts.NewID()
	for r.jobs[id] != nil {
		id = r.opts.NewID()
	}
	j := &job{r: r, done: make(chan struct{}), changed: make(chan struct{}), kick: make(chan struct{}, 1)}
	r.jobs[id] = j
	r.mu.Unlock()

	now := r.opts.Now()
	j.info = Info{ID: id, TaskID: req.TaskID, ToolCallID: req.ToolCallID, Command: req.Command, Dir: req.Dir,
		State: store.JobRunning, ExitCode: -1, StartedAt: now, LogPayload: "jobs/" + id + ".log",
		Keep: r.opts.KeepAfterTask, Local: true, Owner: r.owner}
	j.lastOut = now
	fail := func(err error) (*Info, error) {
		r.mu.Lock()
		delete(r.jobs, id)
		r.mu.Unlock()
		if j.file != nil {
			j.file.Close()
		}
		return nil, err
	}
	f, path, err := r.createLog(req.TaskID, id)
	if err != nil {
		return fail(tool.Errorf(tool.Execution, "the job's log file cannot be created: %w", err).WithHint("check that the data folder is writable"))
	}
	j.file, j.info.LogPath = f, path
	if err := r.st.PutJob(ctx, recordOf(&j.info, r.opts.Workspace)); err != nil {
		os.Remove(path)
		return fail(tool.Errorf(tool.Execution, "the job's record cannot be stored, so it was not started: %w", err).WithHint("check the data folder (records.db)"))
	}

	jctx, cancel := context.WithCancel(r.life)
	j.cancel = cancel
	started := make(chan int, 1)
	exreq := sandbox.ExecRequest{Command: req.Command, Dir: req.Dir, Timeout: r.opts.MaxLifetime,
		Stdout: j, Stderr: j, Started: func(pid int) { started <- pid }}
	if en, ok := r.sb.(execEnver); ok {
		exreq.Env = append(en.ExecEnv(r.opts.Env), Marker(id))
	}
	ended := make(chan struct{})
	var res *sandbox.ExecResult
	var execErr error
	go func() {
		res, execErr = r.sb.Exec(jctx, exreq)
		close(ended)
	}()
	go j.flusher(ended)
	go func() {
		<-ended
		j.finish(res, execErr)
	}()

	wait := time.NewTimer(r.opts.StartWait)
	defer wait.Stop()
	select {
	case pid := <-started:
		j.mu.Lock()
		j.info.PID = pid
		j.mu.Unlock()
		j.putRecord(ctx)
	case <-ended:
		<-j.done
		select {
		case pid := <-started: // it ran and ended before we looked
			j.mu.Lock()
			j.info.PID = pid
			j.mu.Unlock()
			j.putRecord(ctx)
		default:
		}
		if res == nil && execErr != nil {
			// Nothing ran: the sandbox refused (its stage is kept).
			var te *tool.Error
			if errors.As(execErr, &te) {
				return nil, te
			}
			return nil, startError(execErr, req.Dir)
		}
	case <-wait.C:
	case <-ctx.Done():
	}
	return j.snapshot(), nil
}

// startError maps a sandbox error that prevented the start to a stage, as
// execute does.
func startError(err error, dir string) *tool.Error {
	e := &tool.Error{Stage: tool.Execution, Msg: "the background command could not be started: " + err.Error(), Err: err,
		Hint: "check the sandbox's shell and workspace"}
	switch {
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		e.Stage, e.Msg = tool.Authorization, fmt.Sprintf("workdir %q is outside the workspace: %v", dir, err)
		e.Hint = "use a workdir inside the workspace (relative to its root), or omit it"
	case errors.Is(err, sandbox.ErrNotFound), errors.Is(err, sandbox.ErrNotDir):
		e.Stage, e.Msg = tool.Parameters, fmt.Sprintf("workdir %q is not a directory in the workspace: %v", dir, err)
		e.Hint = "check the directory with ls, or omit workdir to run in the root"
	case errors.Is(err, sandbox.ErrConfinement):
		e.Stage, e.Msg = tool.Authorization, "the command was not run: "+err.Error()
		e.Hint = "commands run only under the configured confinement (sandbox.confinement); retrying will not help: a person must fix the machine or change the setting"
	}
	return e
}

// createLog creates <LogDir>/<task>/<id>.log.
func (r *Runner) createLog(taskID, id string) (*os.File, string, error) {
	dir := r.opts.LogDir
	if taskID != "" {
		dir = filepath.Join(dir, tool.SafeFileName(taskID))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	p := filepath.Join(dir, tool.SafeFileName(id)+".log")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	return f, p, err
}

func (j *job) running() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.info.State == store.JobRunning
}

func (j *job) snapshot() *Info {
	j.mu.Lock()
	defer j.mu.Unlock()
	i := j.info
	i.Denied = slices.Clone(i.Denied)
	i.Stopped = slices.Clone(i.Stopped)
	return &i
}

// broadcast wakes every reader waiting for news; j.mu held.
func (j *job) broadcast() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// Write takes one chunk of the job's output (both streams): it is counted,
// and kept in the log file within the bounds. It never fails and never
// blocks on the store, so the sandbox always drains the pipes.
func (j *job) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.info.OutputBytes += int64(len(p))
	j.lastOut = j.r.opts.Now()
	if j.file != nil {
		room := min(int64(len(p)), j.r.opts.MaxOutputBytes-j.written)
		if room > 0 {
			room = j.r.reserve(room)
		}
		if room > 0 {
			n, err := j.file.WriteAt(p[:room], j.written)
			j.written += int64(n)
			j.info.StoredBytes = j.written
			if int64(n) < room {
				j.r.stored.Add(int64(n) - room) // give back what was not written
			}
			if err != nil {
				j.info.LogError = "writing the log failed: " + err.Error()
			}
		}
		if j.written-j.copied >= int64(j.r.opts.FlushBytes) {
			select {
			case j.kick <- struct{}{}:
			default:
			}
		}
	}
	j.broadcast()
	return len(p), nil
}

// reserve takes up to n bytes of the Runner's MaxTotalBytes.
func (r *Runner) reserve(n int64) int64 {
	for {
		cur := r.stored.Load()
		room := min(n, r.opts.MaxTotalBytes-cur)
		if room <= 0 {
			return 0
		}
		if r.stored.CompareAndSwap(cur, cur+room) {
			return room
		}
	}
}

// flusher copies the log to the store every FlushInterval (or sooner
// when FlushBytes wait), updates the record's counters, and ends an idle
// job; it returns when ended is closed.
func (j *job) flusher(ended <-chan struct{}) {
	t := time.NewTicker(j.r.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ended:
			return
		case <-t.C:
		case <-j.kick:
		}
		j.flush(j.r.life)
		if idle := j.r.opts.IdleTimeout; idle > 0 {
			j.mu.Lock()
			quiet := j.r.opts.Now().Sub(j.lastOut)
			j.mu.Unlock()
			if quiet >= idle {
				j.stop(ReasonIdle)
			}
		}
	}
}

// flush appends the log's bytes the store does not have yet, in pieces of
// at most FlushBytes, and stores the record when anything changed.
func (j *job) flush(ctx context.Context) {
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	j.mu.Lock()
	f, from, to := j.file, j.copied, j.written
	j.mu.Unlock()
	buf := make([]byte, min(int64(j.r.opts.FlushBytes), max(to-from, 1)))
	for f != nil && from < to {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-from)], from)
		if n > 0 {
			if _, aerr := j.r.st.AppendPayload(ctx, j.info.TaskID, j.info.LogPayload, buf[:n]); aerr != nil {
				j.r.opts.Logger.Warn("jobs: copying output to the store failed; retrying at the next flush", "job", j.info.ID, "err", aerr)
				break
			}
			from += int64(n)
			j.mu.Lock()
			j.copied = from
			j.mu.Unlock()
		}
		if err != nil && err != io.EOF || n == 0 {
			break
		}
	}
	j.mu.Lock()
	changed := j.info.OutputBytes != j.putOutput || j.info.StoredBytes != j.putStored
	j.mu.Unlock()
	if changed {
		j.putRecord(ctx)
	}
}

// putRecord stores the job's record as it is now.
func (j *job) putRecord(ctx context.Context) {
	// One put at a time, each of the state as it is then: a stale
	// snapshot never lands after a newer one.
	j.putMu.Lock()
	defer j.putMu.Unlock()
	info := j.snapshot()
	j.mu.Lock()
	j.putOutput, j.putStored = info.OutputBytes, info.StoredBytes
	j.mu.Unlock()
	rec := recordOf(info, j.r.opts.Workspace)
	if err := j.r.st.PutJob(context.WithoutCancel(ctx), rec); err != nil {
		j.r.opts.Logger.Warn("jobs: storing the job's record failed", "job", rec.JobID, "err", err)
	}
}

// stop asks the sandbox to stop the job's process tree, with reason (the
// first reason given wins).
func (j *job) stop(reason string) {
	j.mu.Lock()
	if j.reason == "" && j.info.State == store.JobRunning {
		j.reason = reason
	}
	j.mu.Unlock()
	j.cancel()
}

// finish records how the job ended, after its last output was stored.
func (j *job) finish(res *sandbox.ExecResult, err error) {
	j.flush(j.r.life)
	j.mu.Lock()
	now := j.r.opts.Now()
	j.info.EndedAt = now
	switch {
	case res == nil:
		j.info.State, j.info.ExitCode = store.JobExited, -1
		if err != nil {
			j.info.Reason = "not started: " + err.Error()
		}
	case j.reason != "":
		j.info.State, j.info.ExitCode, j.info.Reason = store.JobKilled, res.ExitCode, j.reason
	case res.TimedOut:
		j.info.State, j.info.ExitCode, j.info.Reason = store.JobKilled, res.ExitCode, ReasonLifetime
	case res.Cancelled:
		j.info.State, j.info.ExitCode, j.info.Reason = store.JobKilled, res.ExitCode, ReasonShutdown
	default:
		j.info.State, j.info.ExitCode = store.JobExited, res.ExitCode
	}
	if res != nil {
		j.info.Escaped, j.info.Lingering, j.info.Denied = res.Escaped, res.Lingering, res.Denied
	}
	if j.file != nil {
		_ = j.file.Close() // Read opens the log by its path
		j.file = nil
	}
	j.broadcast()
	j.mu.Unlock()
	j.putRecord(j.r.life)
	close(j.done)
}

// lookup finds a job: this Runner's, else the store's (a job of another
// process, or of one that ended: then it is marked lost and whatever is
// left of its processes is stopped).
func (r *Runner) lookup(ctx context.Context, id string) (*job, *Info, error) {
	r.mu.Lock()
	j := r.jobs[id]
	r.mu.Unlock()
	if j != nil {
		return j, j.snapshot(), nil
	}
	rec, err := r.st.GetJob(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNoJob) {
			return nil, nil, tool.Errorf(tool.Parameters, "no background job has the id %q: %w", id, err).
				WithHint("list the jobs with the jobs tool; job ids come from execute with \"background\": true")
		}
		return nil, nil, tool.Errorf(tool.Execution, "reading the job's record: %w", err).WithHint("check the data folder (records.db)")
	}
	info := infoOf(rec)
	r.checkLost(ctx, info)
	return nil, info, nil
}

// checkLost marks a running job whose owner process is gone as lost, in
// the store, and stops what is left of its processes.
func (r *Runner) checkLost(ctx context.Context, info *Info) {
	if info.State != store.JobRunning || info.Owner == r.owner {
		return
	}
	if alive, known := ownerState(info.Owner); alive || !known {
		return
	}
	info.State, info.EndedAt, info.ExitCode = store.JobLost, r.opts.Now(), -1
	info.Reason = fmt.Sprintf("the aibuddy process that ran it (pid %d) ended while it ran", ownerPID(info.Owner))
	if n := r.readableSize(ctx, info); n > info.StoredBytes {
		info.StoredBytes = n
	}
	info.Stopped = r.sweep(info.ID)
	if err := r.st.PutJob(context.WithoutCancel(ctx), recordOf(info, r.opts.Workspace)); err != nil {
		r.opts.Logger.Warn("jobs: marking a lost job failed", "job", info.ID, "err", err)
	}
}

// sweep stops every process left with the job's marker and returns their
// pids (where the sandbox can find them).
func (r *Runner) sweep(id string) []int {
	pids := MarkedPIDs(Marker(id))
	if mk, ok := r.sb.(markKiller); ok {
		mk.KillMarked(Marker(id))
	}
	return pids
}

// Recover marks every running job of this workspace whose owner process
// is gone as lost and stops what is left of its processes. Hosts call it
// at start; [Runner.List] and the lookups do the same for each job they
// meet.
func (r *Runner) Recover(ctx context.Context) ([]*Info, error) {
	recs, err := r.st.ListJobs(ctx, "")
	if err != nil {
		return nil, err
	}
	var lost []*Info
	for _, rec := range recs {
		info := infoOf(rec)
		if !r.ours(rec) || info.State != store.JobRunning {
			continue
		}
		r.checkLost(ctx, info)
		if info.State == store.JobLost {
			lost = append(lost, info)
		}
	}
	return lost, nil
}

// ours reports whether a stored job belongs to this Runner's workspace.
func (r *Runner) ours(rec *store.Job) bool {
	var d detail
	_ = json.Unmarshal(rec.Detail, &d)
	return d.Workspace == r.opts.Workspace
}

// Get returns a job by id (see Read for where it is looked for).
func (r *Runner) Get(ctx context.Context, id string) (*Info, error) {
	_, info, err := r.lookup(ctx, id)
	return info, err
}

// List returns the jobs of this workspace, oldest first: this Runner's as
// they are now, the others as stored (a running one whose owner is gone is
// reported lost). taskID "" lists every task's.
func (r *Runner) List(ctx context.Context, taskID string) ([]*Info, error) {
	recs, err := r.st.ListJobs(ctx, taskID)
	if err != nil {
		return nil, tool.Errorf(tool.Execution, "listing the jobs: %w", err).WithHint("check the data folder (records.db)")
	}
	var out []*Info
	for _, rec := range recs {
		if !r.ours(rec) {
			continue
		}
		r.mu.Lock()
		j := r.jobs[rec.JobID]
		r.mu.Unlock()
		if j != nil {
			out = append(out, j.snapshot())
			continue
		}
		info := infoOf(rec)
		r.checkLost(ctx, info)
		out = append(out, info)
	}
	return out, nil
}

// ReadRequest asks for a job's output.
type ReadRequest struct {
	JobID string
	// Offset is the byte of the job's output to start at; nil means
	// where the previous read stopped (the record's ReadOffset).
	Offset *int64
	// Wait, when the job runs and has nothing new, waits until it prints
	// or ends, at most this long (clamped to Options.MaxWait).
	Wait time.Duration
}

// Output is what Read returned: the job as it is now and the byte range of
// its output that was handed to the callback.
type Output struct {
	Info
	From, To    int64         // the bytes [From, To) of the output were read
	Waited      time.Duration // how long Read waited for news
	WaitClamped bool          // the asked wait exceeded Options.MaxWait
	// Source says where the bytes came from: "log" (the local log file)
	// or "store" (the store's copy: a job of another process).
	Source string
}

// Read hands the job's kept output from the offset to its current end to
// emit, in chunks of at most 64 KiB (emit must not keep the slice), and
// records the end as the job's ReadOffset. It finds the job in this Runner,
// else in the store (a job of an earlier or another aibuddy process,
// which it reads from the store's copy or the log file the record names;
// a running job whose owner is gone is reported lost, with its last
// output). Errors are *tool.Error: Parameters for an unknown id, Execution
// for a store or log that cannot be read.
func (r *Runner) Read(ctx context.Context, req ReadRequest, emit func([]byte)) (*Output, error) {
	j, info, err := r.lookup(ctx, req.JobID)
	if err != nil {
		return nil, err
	}
	out := &Output{}
	wait := req.Wait
	if wait > r.opts.MaxWait {
		wait, out.WaitClamped = r.opts.MaxWait, true
	}
	from := info.ReadOffset
	if req.Offset != nil {
		from = max(0, *req.Offset)
	}
	if wait > 0 && info.Running() {
		began := time.Now()
		if j != nil {
			j.waitNews(ctx, from, wait)
		} else {
			r.pollNews(ctx, info, from, wait)
		}
		out.Waited = time.Since(began)
		if j != nil {
			info = j.snapshot()
		} else if info, err = r.Get(ctx, req.JobID); err != nil {
			return nil, err
		}
	}
	var to int64
	if j != nil {
		j.mu.Lock()
		to = j.written
		j.mu.Unlock()
		out.Source = "log"
		if from < to {
			if err := readFile(info.LogPath, from, to, emit); err != nil {
				return nil, tool.Errorf(tool.Execution, "reading the job's log %s: %w", info.LogPath, err).WithHint("check the data folder")
			}
		}
	} else {
		to, out.Source, err = r.readStored(ctx, info, from, emit)
		if err != nil {
			return nil, err
		}
	}
	from = min(from, max(to, 0))
	out.From, out.To = from, max(to, from)
	if j != nil {
		j.mu.Lock()
		if out.To > j.info.ReadOffset || req.Offset != nil {
			j.info.ReadOffset = out.To
		}
		j.mu.Unlock()
		j.putRecord(ctx)
		info = j.snapshot()
	} else {
		if out.To > info.ReadOffset || req.Offset != nil {
			info.ReadOffset = out.To
			rec := recordOf(info, r.opts.Workspace)
			if cur, err := r.st.GetJob(ctx, info.ID); err == nil && cur.State == store.JobRunning && info.State == store.JobRunning {
				// Another process runs it: keep its fields, move the offset only.
				cur.ReadOffset = out.To
				rec = cur
			}
			if err := r.st.PutJob(context.WithoutCancel(ctx), rec); err != nil {
				r.opts.Logger.Warn("jobs: storing the read offset failed", "job", info.ID, "err", err)
			}
		}
		if n := out.To; n > info.StoredBytes {
			info.StoredBytes = n
		}
	}
	out.Info = *info
	return out, nil
}

// waitNews waits until the job wrote past from or ended, ctx is done or
// d passed.
func (j *job) waitNews(ctx context.Context, from int64, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		j.mu.Lock()
		news := j.written > from || j.info.State != store.JobRunning
		ch := j.changed
		j.mu.Unlock()
		if news {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-t.C:
			return
		}
	}
}

// pollNews waits, polling the store every FlushInterval, until a job of
// another process has output past from or ended, ctx is done or d passed.
func (r *Runner) pollNews(ctx context.Context, info *Info, from int64, d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(r.opts.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
		rec, err := r.st.GetJob(ctx, info.ID)
		if err != nil {
			return
		}
		cur := infoOf(rec)
		r.checkLost(ctx, cur)
		if cur.State != store.JobRunning || cur.StoredBytes > from {
			return
		}
	}
}

// readStored reads a stored job's output from from to its end: from the
// log file the record names when it is on this machine and holds at least
// the store's copy, else from the store.
func (r *Runner) readStored(ctx context.Context, info *Info, from int64, emit func([]byte)) (int64, string, error) {
	_, size, err := r.st.ReadPayload(ctx, info.TaskID, info.LogPayload, 0, 1)
	if err != nil && !errors.Is(err, store.ErrNoPayload) {
		return 0, "", tool.Errorf(tool.Execution, "reading the job's output from the store: %w", err).WithHint("check the data folder (records.db)")
	}
	if info.LogPath != "" {
		if f, ferr := os.Open(info.LogPath); ferr == nil {
			defer f.Close()
			if fi, serr := f.Stat(); serr == nil && fi.Size() >= size {
				if from < fi.Size() {
					if err := copyRange(f, from, fi.Size(), emit); err != nil {
						return 0, "", tool.Errorf(tool.Execution, "reading the job's log %s: %w", info.LogPath, err)
					}
				}
				return fi.Size(), "log", nil
			}
		}
	}
	for off := from; off < size; {
		data, _, err := r.st.ReadPayload(ctx, info.TaskID, info.LogPayload, off, 64<<10)
		if err != nil {
			return 0, "", tool.Errorf(tool.Execution, "reading the job's output from the store: %w", err).WithHint("check the data folder (records.db)")
		}
		if len(data) == 0 {
			size = off
			break
		}
		emit(data)
		off += int64(len(data))
	}
	return size, "store", nil
}

// readableSize is how many output bytes of a stored job can be read.
func (r *Runner) readableSize(ctx context.Context, info *Info) int64 {
	_, size, _ := r.st.ReadPayload(ctx, info.TaskID, info.LogPayload, 0, 1)
	if info.LogPath != "" {
		if fi, err := os.Stat(info.LogPath); err == nil && fi.Size() > size {
			size = fi.Size()
		}
	}
	return size
}

// readFile emits the bytes [from, to) of the file at path.
func readFile(path string, from, to int64, emit func([]byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return copyRange(f, from, to, emit)
}

// copyRange emits f's bytes [from, to) in chunks of 64 KiB.
func copyRange(f *os.File, from, to int64, emit func([]byte)) error {
	buf := make([]byte, min(64<<10, to-from))
	for from < to {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-from)], from)
		if n > 0 {
			emit(buf[:n])
			from += int64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// KillResult is what Kill did.
type KillResult struct {
	Info
	// AlreadyEnded: the job had ended before (nothing was stopped).
	AlreadyEnded bool
	// Found are the pids of the job's processes found just before the
	// stop (Linux, local sandbox); Left those still there after it.
	Found, Left []int
	// Waited is how long the stop took.
	Waited time.Duration
}

// Kill stops the job's whole process tree: the sandbox's stop of a
// cancelled command (for the local sandbox SIGTERM to the process group,
// SIGKILL after sandbox.killDelay, then every descendant that left the
// group; under the confinement the namespace's init) and waits for it, at
// most Options.KillWait. A job found lost has what is left of its
// processes stopped. Errors are *tool.Error: Parameters for an unknown
// id; Authorization for a job run by another live aibuddy process (only
// it can stop it).
func (r *Runner) Kill(ctx context.Context, id string) (*KillResult, error) {
	j, info, err := r.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if j == nil {
		if info.State == store.JobRunning {
			return nil, tool.Errorf(tool.Authorization, "job %s is run by another aibuddy process (%s), which alone can stop it", id, info.Owner).
				WithHint("stop it from the session that started it, or end that aibuddy process (its jobs end with it)")
		}
		return &KillResult{Info: *info, AlreadyEnded: true, Found: info.Stopped}, nil
	}
	if !j.running() {
		return &KillResult{Info: *j.snapshot(), AlreadyEnded: true}, nil
	}
	found := MarkedPIDs(Marker(id))
	j.stop(ReasonKilled)
	t := time.NewTimer(r.opts.KillWait)
	defer t.Stop()
	select {
	case <-j.done:
	case <-t.C:
	case <-ctx.Done():
	}
	left := MarkedPIDs(Marker(id))
	j.mu.Lock()
	j.info.Stopped = found
	j.mu.Unlock()
	j.putRecord(ctx)
	return &KillResult{Info: *j.snapshot(), Found: found, Left: left, Waited: time.Since(began)}, nil
}

// EndTask ends the jobs of a task (its session or run ended), unless
// Options.KeepAfterTask, and waits for them, at most Options.KillWait in
// all. It returns the jobs it stopped.
func (r *Runner) EndTask(taskID string) []*Info {
	if r.opts.KeepAfterTask {
		return nil
	}
	return r.stopAll(func(j *job) bool { return j.info.TaskID == taskID }, ReasonTaskEnd)
}

func (r *Runner) stopAll(match func(*job) bool, reason string) []*Info {
	r.mu.Lock()
	var stopping []*job
	for _, j := range r.jobs {
		j.mu.Lock()
		ok := j.info.State == store.JobRunning && match(j)
		j.mu.Unlock()
		if ok {
			stopping = append(stopping, j)
		}
	}
	r.mu.Unlock()
	for _, j := range stopping {
		j.stop(reason)
	}
	t := time.NewTimer(r.opts.KillWait)
	defer t.Stop()
	var out []*Info
	for _, j := range stopping {
		select {
		case <-j.done:
		case <-t.C:
		}
		out = append(out, j.snapshot())
	}
	return out
}

// Close ends every job of this Runner (kept ones too: their processes are
// its children) and waits for them, at most Options.KillWait; later
// Starts are refused. The store is not closed.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.stopAll(func(*job) bool { return true }, ReasonShutdown)
	r.stop()
	return nil
}
