package config

import (
	"fmt"
	"sort"
	"strings"
)

// Jobs configures background jobs (execute with "background": true; the
// jobs group: job_output, job_kill, jobs). Zero means the default given;
// package jobs holds the defaults (jobs.Default*), repeated here for the
// documentation.
type Jobs struct {
	// MaxRunning bounds the jobs running at once in one session (an MCP
	// session, an `aibuddy run`); a start past it is refused at the
	// Authorization stage. Count; default 8.
	MaxRunning int `json:"maxRunning,omitempty"`
	// MaxOutputBytes bounds the output kept of one job (its log file and
	// the records' copy), in bytes; past it output is counted, not kept.
	// Default 64 MiB.
	MaxOutputBytes int64 `json:"maxOutputBytes,omitempty"`
	// MaxTotalBytes bounds the output kept of every job of one aibuddy
	// process together, in bytes. Default 1 GiB.
	MaxTotalBytes int64 `json:"maxTotalBytes,omitempty"`
	// MaxWait is the longest job_output wait_ms honoured (longer ones are
	// clamped and the result says so). Default 30 s.
	MaxWait Duration `json:"maxWait,omitempty"`
	// MaxLifetime ends a job that runs longer. Default 2 h.
	MaxLifetime Duration `json:"maxLifetime,omitempty"`
	// IdleTimeout ends a job that printed nothing for this long. Default
	// 0: off.
	IdleTimeout Duration `json:"idleTimeout,omitempty"`
	// KeepAfterSession keeps a session's jobs running after the session
	// ends (until aibuddy itself ends: the jobs are its children).
	// Default false: every job ends with its session or run.
	KeepAfterSession bool `json:"keepAfterSession,omitempty"`
	// FlushInterval is how often new output is copied to the records (so
	// a restarted aibuddy, or another process, finds the last output).
	// Default 250 ms.
	FlushInterval Duration `json:"flushInterval,omitempty"`
	// FlushBytes bounds one copy to the records, in bytes. Default 256 KiB.
	FlushBytes int `json:"flushBytes,omitempty"`
	// KillWait bounds how long job_kill and the end of a session wait for
	// a job's processes to be gone. Default 15 s.
	KillWait Duration `json:"killWait,omitempty"`
	// StartWait bounds how long execute waits for the sandbox to report
	// a background command started. Default 10 s.
	StartWait Duration `json:"startWait,omitempty"`
}

// check refuses negative values, naming the keys.
func (j Jobs) check() error {
	vals := map[string]int64{
		"jobs.maxRunning": int64(j.MaxRunning), "jobs.maxOutputBytes": j.MaxOutputBytes, "jobs.maxTotalBytes": j.MaxTotalBytes,
		"jobs.maxWait": int64(j.MaxWait), "jobs.maxLifetime": int64(j.MaxLifetime), "jobs.idleTimeout": int64(j.IdleTimeout),
		"jobs.flushInterval": int64(j.FlushInterval), "jobs.flushBytes": int64(j.FlushBytes), "jobs.killWait": int64(j.KillWait),
		"jobs.startWait": int64(j.StartWait),
	}
	var bad []string
	for k, v := range vals {
		if v < 0 {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("negative values for %s (omit a key or use 0 for its default)", strings.Join(bad, ", "))
	}
	return nil
}
