package jobs

import (
	"log/slog"
	"time"
)

// Service is the name under which a host injects a *Runner into a run's
// services (registry.Env.Services): the execute tool offers "background"
// and the jobs group (job_output, job_kill, jobs) is built only with it.
const Service = "jobs"

// Options configures a Runner. A nil *Options means the defaults; a zero
// or negative field means that field's default. config.Jobs maps the
// settings (jobs.*) onto it.
type Options struct {
	// LogDir is the local folder of the jobs' full logs:
	// <LogDir>/<taskId>/<jobId>.log (ids made safe as file names). It is
	// created when missing. Required.
	LogDir string
	// Workspace names the sandbox's workspace in each job's record, so
	// [Runner.List] shows the jobs of this workspace only. Default: the
	// sandbox's Workspace().
	Workspace string
	// MaxRunning bounds the jobs running at once in one task (an MCP
	// session or a run); a start past it is refused at the Authorization
	// stage. Count; default 8.
	MaxRunning int
	// MaxOutputBytes bounds the output kept of one job, in bytes (the
	// log file and its copy in the store); past it the job's output is
	// counted, not kept. Default 64 MiB.
	MaxOutputBytes int64
	// MaxTotalBytes bounds the output kept of every job of this Runner
	// together, in bytes; past it output is counted, not kept. Default
	// 1 GiB.
	MaxTotalBytes int64
	// MaxWait is the longest wait_ms honoured by [Runner.Read]; longer
	// waits are clamped and the output says so. Default 30 s.
	MaxWait time.Duration
	// MaxLifetime ends a job that runs longer (BH-090), as a kill with
	// the reason "lifetime". Default 2 h.
	MaxLifetime time.Duration
	// IdleTimeout ends a job that printed nothing for this long, as a
	// kill with the reason "idle". Default 0: off (a quiet dev server is
	// normal).
	IdleTimeout time.Duration
	// KeepAfterTask keeps a task's jobs running after the task ends
	// ([Runner.EndTask] then leaves them alone); they still end with the
	// Runner ([Runner.Close]), as their processes are the Runner's
	// children. Default false: every job ends with its task.
	KeepAfterTask bool
	// FlushInterval is how often new output is copied from the log file
	// to the store (and the record's counters updated), so another
	// process or a restarted one reads the last output. Default 250 ms.
	FlushInterval time.Duration
	// FlushBytes bounds one append to the store, in bytes; a flush sends
	// as many as it needs. Default 256 KiB.
	FlushBytes int
	// StartWait bounds how long [Runner.Start] waits for the sandbox to
	// report the started process (its pid); a sandbox that never does
	// gives a running job with pid 0 after it. Default 10 s.
	StartWait time.Duration
	// KillWait bounds how long [Runner.Kill], EndTask and Close wait for
	// a job's processes to be gone after the sandbox was told to stop
	// them (SIGTERM, then SIGKILL after the sandbox's kill delay).
	// Default 15 s.
	KillWait time.Duration
	// Env changes the sandbox's default command environment, as
	// coretools.ExecuteOptions.Env does (limits.execEnv); used when the
	// sandbox offers ExecEnv. Default none.
	Env []string
	// Now and NewID are injected for tests; defaults time.Now and
	// "j" + 8 random hex digits.
	Now   func() time.Time
	NewID func() string
	// Logger receives warnings (a store append that failed); default
	// discards.
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxRunning     = 8
	DefaultMaxOutputBytes = 64 << 20 // bytes
	DefaultMaxTotalBytes  = 1 << 30  // bytes
	DefaultMaxWait        = 30 * time.Second
	DefaultMaxLifetime    = 2 * time.Hour
	DefaultFlushInterval  = 250 * time.Millisecond
	DefaultFlushBytes     = 256 << 10 // bytes
	DefaultStartWait      = 10 * time.Second
	DefaultKillWait       = 15 * time.Second
)

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
		r.Env = append([]string(nil), o.Env...)
	}
	if r.MaxRunning <= 0 {
		r.MaxRunning = DefaultMaxRunning
	}
	if r.MaxOutputBytes <= 0 {
		r.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if r.MaxTotalBytes <= 0 {
		r.MaxTotalBytes = DefaultMaxTotalBytes
	}
	dur := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	dur(&r.MaxWait, DefaultMaxWait)
	dur(&r.MaxLifetime, DefaultMaxLifetime)
	dur(&r.FlushInterval, DefaultFlushInterval)
	dur(&r.StartWait, DefaultStartWait)
	dur(&r.KillWait, DefaultKillWait)
	if r.IdleTimeout < 0 {
		r.IdleTimeout = 0
	}
	if r.FlushBytes <= 0 {
		r.FlushBytes = DefaultFlushBytes
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.NewID == nil {
		r.NewID = newID
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return r
}
