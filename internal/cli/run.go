package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
	"github.com/aibuddy/aibuddy/provider/chatmodel"
	"github.com/aibuddy/aibuddy/provider/openaimodel"
	"github.com/aibuddy/aibuddy/tool"
)

// modelSpec is what `aibuddy run` knows about the model route.
type modelSpec struct {
	route  provider.Route
	apiKey string
	// Schema dialect settings (provider.openaiStrict, schemaDialect,
	// schemaRefDepth).
	strict   provider.StrictMode
	dialect  provider.SchemaDialect
	refDepth int
}

// keyEnv is the environment variable holding each provider's key.
var keyEnv = map[string]string{
	"anthropic":   "ANTHROPIC_API_KEY",
	"openai":      "OPENAI_API_KEY",
	"openai-chat": "OPENAI_API_KEY",
}

// newModel is the one place `aibuddy run` builds a provider adapter with
// its package's New(Options). Each adapter picks its deferral strategy
// from the route (provider.ChooseStrategy, which also resolves the base URL
// from the environment); with provider.nativeToolSearch "on" or "off" the
// strategy is chosen here from that override. The OpenAI routes need a
// model name.
func newModel(s modelSpec, logger *slog.Logger) (provider.Model, error) {
	var strategy provider.Strategy // "": the adapter's own choice
	if m := s.route.NativeToolSearch; m == provider.NativeOn || m == provider.NativeOff {
		strategy = provider.ChooseStrategy(s.route)
	}
	switch s.route.Provider {
	case "anthropic":
		return anthropicmodel.New(anthropicmodel.Options{APIKey: s.apiKey, BaseURL: s.route.BaseURL,
			Model: s.route.Model, Logger: logger, Strategy: strategy}), nil
	case "openai":
		if s.route.Model == "" {
			return nil, errors.New("--model is required with --provider openai (e.g. gpt-5.4)")
		}
		return openaimodel.New(openaimodel.Options{APIKey: s.apiKey, BaseURL: s.route.BaseURL, Model: s.route.Model,
			Logger: logger, Strategy: strategy, Strict: s.strict}), nil
	case "openai-chat":
		if s.route.Model == "" {
			return nil, errors.New("--model is required with --provider openai-chat (the name the endpoint serves)")
		}
		return chatmodel.New(chatmodel.Options{APIKey: s.apiKey, BaseURL: s.route.BaseURL, Model: s.route.Model, Logger: logger,
			Dialect: s.dialect, RefDepth: s.refDepth}), nil
	}
	return nil, fmt.Errorf("unknown provider %q (want anthropic, openai or openai-chat)", s.route.Provider)
}

func newRun(o *Options) *cobra.Command {
	c := common{sweepTemps: true}
	var providerName, modelName, baseURL, nativeToolSearch string
	var maxSteps int
	cmd := &cobra.Command{
		Use:   "run TASK",
		Short: "Run an agent on a task: a model drives the tools over the workspace",
		Long: `Run an agent on TASK with a model and the run's effective tool set (the same
settings file as "aibuddy mcp": tool keys, sandbox, limits, MCP servers, skills).

The model's text goes to stdout; each tool call, its live output and its result
go to stderr. High-impact actions (destructive MCP tools, recursive deletes,
force pushes, commands naming credential files such as .env) are put to you on
the terminal before they run; approve with "y", anything else rejects.
ask_user_question prompts on the terminal too. Ctrl-C stops the run cleanly:
running commands are stopped and every call keeps its record.

Keys come from the environment: ANTHROPIC_API_KEY (anthropic) or
OPENAI_API_KEY (openai: Responses API; openai-chat: chat completions
compatible endpoints, e.g. a local model server with --base-url).

Deferred tools use the provider's own tool search on the official Anthropic
endpoint (Claude Sonnet/Opus 4.5 and later, not Haiku) and on the official
OpenAI Responses API (gpt-5.4 and later); every other route uses aibuddy's
tool_search. --native-tool-search (or provider.nativeToolSearch in the
settings) "on" opens the native path to any anthropic or openai model and
endpoint, "off" closes it.`,
		Example: `  aibuddy run "add a test for the parser" --workspace ~/src/project
  aibuddy run --provider openai --model gpt-5.4 "fix the failing build"
  aibuddy run --provider openai-chat --base-url http://localhost:11434/v1 --model llama3 "list the TODOs"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			task := strings.TrimSpace(strings.Join(args, " "))
			if task == "" {
				return usageErr("the task is empty")
			}
			envName, ok := keyEnv[providerName]
			if !ok {
				return usageErr("unknown --provider %q (want anthropic, openai or openai-chat)", providerName)
			}
			spec := modelSpec{
				route:  provider.Route{Provider: providerName, Model: modelName, BaseURL: baseURL, BYOK: true},
				apiKey: os.Getenv(envName),
			}
			if spec.apiKey == "" && baseURL == "" {
				return usageErr("%s is not set (the %s provider needs a key)", envName, providerName)
			}
			if nativeToolSearch != "" {
				if _, err := provider.ParseNativeToolSearch(nativeToolSearch); err != nil {
					return usageErr("--native-tool-search: %v", err)
				}
			}
			ctx := cmd.Context()
			errw := cmd.ErrOrStderr()
			term := approval.NewTerminal(cmd.InOrStdin(), errw)
			ro := *o
			ro.Services = maps.Clone(o.Services)
			if ro.Services == nil {
				ro.Services = map[string]any{}
			}
			if _, set := ro.Services[approval.ServiceUserInput]; !set {
				ro.Services[approval.ServiceUserInput] = approval.Asker(term)
			}
			r, err := c.resolve(ctx, &ro)
			if err != nil {
				return err
			}
			defer r.close()
			mode := nativeToolSearch
			if mode == "" {
				mode = r.cfg.Provider.NativeToolSearch
			}
			if spec.route.NativeToolSearch, err = provider.ParseNativeToolSearch(mode); err != nil {
				return usageErr("provider.nativeToolSearch: %v", err)
			}
			if spec.strict, err = provider.ParseStrictMode(r.cfg.Provider.OpenAIStrict); err != nil {
				return usageErr("provider.openaiStrict: %v", err)
			}
			if spec.dialect, err = provider.ParseSchemaDialect(r.cfg.Provider.SchemaDialect); err != nil {
				return usageErr("provider.schemaDialect: %v", err)
			}
			spec.refDepth = r.cfg.Provider.SchemaRefDepth
			model, err := newModel(spec, r.logger)
			if err != nil {
				return usageErr("%v", err)
			}
			// Summaries of large results through the same route (summarize.go).
			r.compactor.SetSummarizer(runSummarizer(r.cfg, spec.route, model, modelName))
			ao := agent.Options{
				Model:     model,
				ModelName: modelName,
				Set:       r.set,
				Discovery: r.discovery,
				MaxSteps:  maxSteps,
				// The pipeline aibuddy mcp and call use too: records in
				// the data folder (a stopped run keeps them), large
				// results compacted in the background (view_tool_call
				// recovers them), confirmations on the terminal.
				Pipeline:         r.pipeline(term),
				Store:            r.store,
				Logger:           r.logger,
				ContextBudget:    r.cfg.Agent.ContextBudgetTokens,
				ContextNoteCalls: r.cfg.Agent.ContextNoteCalls,
				MaxParallelCalls: r.cfg.Agent.MaxParallelCalls,
				ParallelTools:    r.cfg.Agent.ParallelTools,
				SerialTools:      r.cfg.Agent.SerialTools,
				Workspace:        r.workspace,
			}
			if r.mcp != nil {
				current, cancel := liveSet(r)
				defer cancel()
				ao.CurrentSet = current
			}
			ag := agent.New(ao)
			sum, err := streamRun(ctx, ag.Run(ctx, task), cmd.OutOrStdout(), errw)
			if sum != nil {
				printSummary(errw, sum)
			}
			switch {
			case err == nil:
				return nil
			case errors.Is(err, context.Canceled):
				// A user's stop, not a failure of the plane.
				msg := "stopped: the run was cancelled"
				if sum != nil && sum.Calls > 0 {
					msg += "; its calls so far are recorded (aibuddy calls list --task " + sum.TaskID + ")"
				}
				return &exitError{code: ExitInterrupted, err: errors.New(msg)}
			default:
				return &exitError{code: ExitFailure, err: err}
			}
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&providerName, "provider", "anthropic", "model provider: anthropic, openai (Responses API) or openai-chat (chat completions compatible)")
	cmd.Flags().StringVar(&modelName, "model", "", "model name (anthropic default: the adapter's; required for openai and openai-chat)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "API base URL (default: the provider's official endpoint)")
	cmd.Flags().StringVar(&nativeToolSearch, "native-tool-search", "", `the provider's own tool search: auto (documented models on the official endpoint), on or off (default: the settings' provider.nativeToolSearch, else auto)`)
	cmd.Flags().IntVar(&maxSteps, "max-steps", agent.DefaultMaxSteps, "most model calls in one run")
	return cmd
}

// liveSet follows the MCP servers' tool changes (list_changed refreshes,
// late connects, disconnects) for a running agent, the way `aibuddy mcp`'s
// gateways do: each change re-resolves the set, keeping the built-in tools
// of the previous one (their per-run state), and current returns the
// latest set for the agent to pick up between steps. cancel stops
// following.
func liveSet(r *run) (current func() *capability.Set, cancel func()) {
	var mu sync.Mutex
	latest := r.set
	cancel = r.mcp.Subscribe(func() {
		mu.Lock()
		defer mu.Unlock()
		if err := r.resolveSetReusing(latest); err != nil {
			r.logger.Error("resolving the tool set after an MCP server changed; keeping the previous tools", "err", err)
			return
		}
		latest = r.set
	})
	return func() *capability.Set {
		mu.Lock()
		defer mu.Unlock()
		return latest
	}, cancel
}

// streamRun prints a run's events: model text to out, tool calls, live
// output, decisions and results to errw. It returns the summary and the
// run's error.
func streamRun(ctx context.Context, events func(func(agent.Event, error) bool), out, errw io.Writer) (*agent.Summary, error) {
	var sum *agent.Summary
	var runErr error
	midLine := false
	for ev, err := range events {
		if ev.Kind != agent.EventText && midLine {
			fmt.Fprintln(out)
			midLine = false
		}
		switch ev.Kind {
		case agent.EventText:
			fmt.Fprint(out, ev.Text)
			midLine = !strings.HasSuffix(ev.Text, "\n")
		case agent.EventToolCall:
			fmt.Fprintf(errw, "▶ %s %s\n", ev.Tool, oneLine(string(ev.Input), 200))
		case agent.EventOutput:
			_, _ = errw.Write(ev.Output.Data)
		case agent.EventProgress:
			if ev.Output.Message != "" {
				fmt.Fprintf(errw, "  … %s\n", ev.Output.Message)
			}
		case agent.EventDecision:
			fmt.Fprintf(errw, "  %s\n", oneLine(ev.Exchange.Text(), 300))
		case agent.EventToolResult:
			res := ev.Result
			if res.IsError {
				fmt.Fprintf(errw, "✗ %s [%s] %s\n", ev.Tool, res.Stage, oneLine(res.AllText(), 300))
			} else {
				fmt.Fprintf(errw, "✓ %s %s\n", ev.Tool, oneLine(res.AllText(), 120))
			}
		case agent.EventDone:
			sum, runErr = ev.Summary, err
		}
	}
	if midLine {
		fmt.Fprintln(out)
	}
	return sum, runErr
}

// printSummary writes the run summary: steps, calls, failures by stage.
func printSummary(w io.Writer, s *agent.Summary) {
	fmt.Fprintf(w, "── run %s: %s after %d step(s), %d tool call(s)", s.TaskID, s.Stop, s.Steps, s.Calls)
	if s.Usage.InputTokens+s.Usage.OutputTokens > 0 {
		fmt.Fprintf(w, ", %d input / %d output tokens", s.Usage.InputTokens, s.Usage.OutputTokens)
	}
	fmt.Fprintln(w)
	var parts []string
	for _, st := range tool.Stages {
		if n := s.Failures[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st.Title(), n))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "   failures by stage: %s\n", strings.Join(parts, ", "))
	}
	if s.RecordErrors > 0 {
		fmt.Fprintf(w, "   %d record(s) could not be written\n", s.RecordErrors)
	}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}
