package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/store"
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

// newCallsJobs is `aibuddy calls jobs`: the background jobs in the
// records, with state (a running job whose aibuddy is gone shows as lost),
// pid, age, output, task, owner and command (BH-090).
func newCallsJobs() *cobra.Command {
	var c common
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List the background jobs in the records (running ones by default; --all for every one)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := c.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			js, ok := st.(jobs.Store)
			if !ok {
				return &exitError{code: ExitFailure, err: fmt.Errorf("these call records do not keep background jobs")}
			}
			recs, err := js.ListJobs(cmd.Context(), "")
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			type row struct {
				JobID   string         `json:"jobId"`
				State   store.JobState `json:"state"`
				PID     int            `json:"pid"`
				Started time.Time      `json:"startedAt"`
				Bytes   int64          `json:"outputBytes"`
				Task    string         `json:"taskId"`
				Owner   string         `json:"owner"`
				Command string         `json:"command"`
			}
			rows := []row{}
			for _, j := range recs {
				s := jobs.StateOf(j)
				if !all && s != store.JobRunning {
					continue
				}
				rows = append(rows, row{j.JobID, s, j.PID, j.StartedAt, j.OutputBytes, j.TaskID, j.Owner, j.Command})
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, rows)
			}
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB\tSTATE\tPID\tAGE\tOUTPUT BYTES\tTASK\tOWNER\tCOMMAND")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n", r.JobID, r.State, r.PID, time.Since(r.Started).Round(time.Second),
					r.Bytes, r.Task, r.Owner, firstLine(r.Command, 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&all, "all", false, "list ended and lost jobs too")
	c.register(cmd)
	return cmd
}
