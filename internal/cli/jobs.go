package cli

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/mcpserver"
)

// JobOptions maps the settings' jobs block (and limits.execEnv) onto the
// job runner's options; logs go to dataDir/jobs.
func JobOptions(cfg *config.Config, dataDir string) *jobs.Options {
	j := cfg.Jobs
	return &jobs.Options{LogDir: filepath.Join(dataDir, "jobs"), MaxRunning: j.MaxRunning,
		MaxOutputBytes: j.MaxOutputBytes, MaxTotalBytes: j.MaxTotalBytes, MaxWait: j.MaxWait.D(),
		MaxLifetime: j.MaxLifetime.D(), IdleTimeout: j.IdleTimeout.D(), KeepAfterTask: j.KeepAfterSession,
		FlushInterval: j.FlushInterval.D(), FlushBytes: j.FlushBytes, KillWait: j.KillWait.D(),
		StartWait: j.StartWait.D(), Env: cfg.Limits.ExecEnv}
}

// addJobs starts the background job runner of this process when the jobs
// group is configured and the records keep jobs, and injects it as the
// jobs.Service: execute then offers "background" and the jobs group its
// tools. Jobs of this workspace left running by an aibuddy that died are
// marked lost (and what is left of their processes stopped) at once.
func (r *run) addJobs(ctx context.Context, services map[string]any) {
	if r.cfg.ToolKeys != nil && !slices.Contains(r.cfg.ToolKeys, coretools.JobsKey) {
		return
	}
	st, ok := r.store.(jobs.Store)
	if !ok {
		r.logger.Warn("background jobs are off: the call records do not keep jobs")
		return
	}
	jr, err := jobs.New(r.sandbox, st, JobOptions(r.cfg, r.dataDir))
	if err != nil {
		r.logger.Warn("background jobs are off", "err", err)
		return
	}
	if lost, err := jr.Recover(ctx); err != nil {
		r.logger.Warn("checking the background jobs of earlier runs", "err", err)
	} else if len(lost) > 0 {
		r.logger.Warn("background jobs of an earlier aibuddy were lost with it (job_output shows their last output)", "jobs", len(lost))
	}
	r.jobs = jr
	services[jobs.Service] = jr
}

// closeJobs ends every job of this process (before the records close, so
// each job's end is recorded).
func (r *run) closeJobs() {
	if r.jobs != nil {
		_ = r.jobs.Close()
	}
}

// noteTask remembers the task (session) a gateway serves, for endTask.
func (g *gateways) noteTask(gw *mcpserver.Gateway, taskID string) {
	g.tasks.Store(gw, taskID)
}

// endTask ends the background jobs of the session gw served (unless
// jobs.keepAfterSession).
func (g *gateways) endTask(gw *mcpserver.Gateway) {
	task, ok := g.tasks.LoadAndDelete(gw)
	if ok && g.r.jobs != nil {
		g.r.jobs.EndTask(task.(string))
	}
}
