// Package jobs runs background jobs: commands that execute starts with
// "background": true and that outlive the call (a dev server, a watcher,
// a long build), read later with job_output, stopped with job_kill and
// listed with jobs (issue 14; cases BH-089, BH-090, BH-091). The tools
// themselves are in package coretools; this package is the runner.
//
// A job is one [sandbox.Sandbox] Exec under its own context, derived from
// the [Runner]'s and not from the call's: the call returns at once, and
// cancelling the job's context is the sandbox's own stop of a command
// (for the local sandbox SIGTERM to the process group, SIGKILL after
// sandbox.killDelay, then every descendant that left the group; under the
// OS confinement the namespace's init), so a job is confined and stopped
// exactly as execute's commands are, and a remote sandbox gets jobs for
// free. Every process of a job also carries AIBUDDY_JOB_ID=<id> ([Marker])
// in its environment where the sandbox builds environments (ExecEnv).
//
// Output: every chunk the sandbox hands over is counted and written to a
// local log file (<LogDir>/<taskId>/<jobId>.log) within
// Options.MaxOutputBytes per job and Options.MaxTotalBytes for the Runner;
// past them it is counted, not kept. The writer never blocks on anything
// but that file, so the pipes are always drained (BH-089). A flusher
// copies the log to the store (payload "jobs/<jobId>.log" of the task)
// every Options.FlushInterval, in pieces of at most Options.FlushBytes,
// and stores the job's record ([store.Job]) with its counters, so another
// process, or the next aibuddy after this one died, reads the last output.
// Memory per job is a few fixed buffers, whatever the job prints.
//
// Lifetime: a job ends on its own (exited, with its exit code), by
// [Runner.Kill], with its task ([Runner.EndTask], unless
// Options.KeepAfterTask), with the Runner ([Runner.Close]), after
// Options.MaxLifetime, or after Options.IdleTimeout of silence (killed,
// with the reason). A job whose owner process (Info.Owner) died while it
// ran is marked lost by the next Runner that meets it ([Runner.Recover],
// [Runner.List], [Runner.Read]), which also stops what is left of its
// processes (found by the marker; without the confinement a job's process
// group outlives a SIGKILLed aibuddy, under it the init dies with it).
//
// Reads ([Runner.Read]) return the kept bytes after the previous read (or
// an offset), optionally waiting for news up to Options.MaxWait; the
// caller bounds what reaches the model (coretools projects them like
// execute's output: head and tail of 30,000 characters).
package jobs
