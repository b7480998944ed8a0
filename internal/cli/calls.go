package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
)

func newCalls(o *Options) *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "calls",
		Short: "Inspect the durable records of tool calls",
		Long: `Every tool call (from aibuddy mcp, call and run) is recorded in the data folder
before its result is handed back: raw input and output, toolCallId, task, timing,
stage and outcome, and a recovery pointer once a large result was compacted.`,
	}
	var task string
	var limit int
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List recent tasks with failures by stage, or the calls of one task (--task)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := c.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			ctx := cmd.Context()
			w := cmd.OutOrStdout()
			if task == "" {
				tasks, err := st.Tasks(ctx, limit)
				if err != nil {
					return &exitError{code: ExitFailure, err: err}
				}
				type row struct {
					Task     string         `json:"task"`
					Calls    int            `json:"calls"`
					Failures map[string]int `json:"failuresByStage"`
					// Interrupted counts calls whose process ended while
					// they ran.
					Interrupted int       `json:"interrupted"`
					Started     time.Time `json:"startedAt"`
				}
				var rows []row
				for _, t := range tasks {
					recs, err := st.ListTask(ctx, t)
					if err != nil {
						return &exitError{code: ExitFailure, err: err}
					}
					r := row{Task: t, Calls: len(recs), Failures: map[string]int{}}
					for i, rec := range recs {
						if i == 0 {
							r.Started = rec.StartedAt
						}
						if rec.Outcome == store.OutcomeInterrupted {
							r.Interrupted++
						}
						if rec.Outcome == store.OutcomeError || rec.Outcome == store.OutcomeCancelled {
							stage := rec.Stage
							if stage == "" {
								stage = "execution"
							}
							r.Failures[stage]++
						}
					}
					rows = append(rows, r)
				}
				if asJSON {
					return writeJSON(w, rows)
				}
				tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TASK\tSTARTED\tCALLS\tFAILURES BY STAGE\tINTERRUPTED")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", r.Task, r.Started.Local().Format(time.DateTime), r.Calls, stages(r.Failures), r.Interrupted)
				}
				return tw.Flush()
			}
			recs, err := st.ListTask(ctx, task)
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			if len(recs) == 0 {
				return &exitError{code: ExitToolError, err: fmt.Errorf("no calls recorded for task %q (see `aibuddy calls list`)", task)}
			}
			var views []result.Client
			for _, rec := range recs {
				v := result.ClientOf(rec)
				v.Output = ""
				views = append(views, v)
			}
			if asJSON {
				return writeJSON(w, views)
			}
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL CALL ID\tTOOL\tSTATUS\tSTAGE\tDURATION\tCOMPACTION\tTARGET")
			for _, v := range views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ToolCallID, v.Tool, status(v), dash(v.Stage),
					v.Duration.Round(time.Millisecond), dash(v.Compaction), firstLine(v.Target, 60))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&task, "task", "", "list the calls of this task")
	list.Flags().IntVar(&limit, "limit", 20, "most tasks listed (0: all)")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.register(list)

	var projection string
	var showJSON bool
	show := &cobra.Command{
		Use:   "show TOOL_CALL_ID",
		Short: "Show one call in a projection: client (default), model or record (raw)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := c.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			rec, err := st.Get(cmd.Context(), args[0])
			if err != nil {
				return &exitError{code: ExitToolError, err: fmt.Errorf("%w (see `aibuddy calls list --task ID`)", err)}
			}
			w := cmd.OutOrStdout()
			switch projection {
			case "client":
				v := result.ClientOf(rec)
				if showJSON {
					return writeJSON(w, v)
				}
				fmt.Fprintf(w, "%s %s (%s) %s %s\n\n%s\n", v.ToolCallID, v.Tool, v.Target, status(v), v.Duration.Round(time.Millisecond), v.Output)
				if v.Status == result.StatusInterrupted {
					fmt.Fprintln(w, "The process ended while this call ran; no result was handed back and its effect may be partial: inspect before running it again.")
				}
				return nil
			case "model":
				m, err := result.ModelOf(rec)
				if err != nil {
					return &exitError{code: ExitFailure, err: err}
				}
				if showJSON {
					return writeJSON(w, m)
				}
				fmt.Fprintln(w, m.Text)
				return nil
			case "record":
				return writeJSON(w, recordJSON(rec))
			default:
				return usageErr("--projection %q: want client, model or record", projection)
			}
		},
	}
	show.Flags().StringVar(&projection, "projection", "client", "client, model or record")
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON (record is always JSON)")
	c.register(show)
	cmd.AddCommand(list, show, newCallsJobs())
	return cmd
}

// openStore opens the call records of the data folder, without the rest of
// a run.
func (c *common) openStore() (store.Store, error) {
	cfgDir := ""
	dd := c.dataDir
	settings := &config.Config{}
	if cfg, dir, err := c.loadConfig(); err != nil {
		return nil, err
	} else if cfg != nil {
		settings = cfg
		if dd == "" {
			cfgDir = dir
			dd = dataDir("", cfg.DataDir, cfgDir)
		}
	}
	if dd == "" {
		dd = dataDir("", "", "")
	}
	st, err := openRecords(context.Background(), settings, dd)
	if err != nil {
		return nil, usageErr("opening the call records: %v", err)
	}
	return st, nil
}

func recordJSON(rec *store.Record) any {
	return struct {
		ToolCallID     string          `json:"toolCallId"`
		ProviderCallID string          `json:"providerCallId,omitempty"`
		TaskID         string          `json:"taskId"`
		Seq            int64           `json:"seq"`
		Tool           string          `json:"tool"`
		Input          json.RawMessage `json:"input"`
		Output         json.RawMessage `json:"output"`
		Model          json.RawMessage `json:"model,omitempty"`
		Stage          string          `json:"stage,omitempty"`
		Outcome        store.Outcome   `json:"outcome"`
		StartedAt      time.Time       `json:"startedAt"`
		EndedAt        time.Time       `json:"endedAt"`
		Compaction     string          `json:"compaction,omitempty"`
		Pointer        string          `json:"pointer,omitempty"`
		InterruptedAt  time.Time       `json:"interruptedAt,omitzero"`
	}{rec.ToolCallID, rec.ProviderCallID, rec.TaskID, rec.Seq, rec.Tool, orNull(rec.Input), orNull(rec.Output), rec.Model, rec.Stage,
		rec.Outcome, rec.StartedAt, rec.EndedAt, string(rec.Compaction), rec.Pointer, rec.InterruptedAt}
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func stages(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// status is a call's status as the tables show it; an interrupted call
// says when it was found so ("interrupted (found 2026-05-09 07:30:00)").
func status(v result.Client) string {
	if v.Status == result.StatusInterrupted && !v.InterruptedAt.IsZero() {
		return fmt.Sprintf("%s (found %s)", v.Status, v.InterruptedAt.Local().Format(time.DateTime))
	}
	return string(v.Status)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
