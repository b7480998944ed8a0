package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/sandbox/sandboxes"
	"github.com/aibuddy/aibuddy/skills"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitToolError = 1
	ExitUsage     = 2
	ExitFailure   = 3
	// ExitInterrupted is a command stopped by the user (Ctrl-C, SIGINT:
	// 128 + 2, the shell convention). A command stopped by another signal
	// (Stopped) exits 128 + its number: 143 for SIGTERM.
	ExitInterrupted = 130
)

// Stopped is the cause (context.Cause) of a command context cancelled
// by a signal: cmd/aibuddy cancels with it on SIGINT and SIGTERM. A
// command that fails because of it exits 128 + the signal number, and is
// not reported as a failure of the plane.
type Stopped struct{ Signal syscall.Signal }

func (s Stopped) Error() string { return "stopped by " + s.Signal.String() }

// Is makes a Stopped cause match context.Canceled.
func (Stopped) Is(target error) bool { return target == context.Canceled }

// Version is set at build time with -ldflags "-X .../internal/cli.Version=v1.2.3".
var Version = "dev"

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// Options lets tests and embedders replace parts of the CLI. The zero value
// is the real program.
type Options struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Registry builds the start-up registry from the settings, the data
	// folder and the skills catalogue; default BuiltinRegistry.
	Registry func(cfg *config.Config, dataDir string, cat *skills.Catalog) *registry.Registry
	// Services are injected into every run (capability services).
	Services map[string]any
	// Confine configures the confinement driver of execute and stdio MCP
	// servers (tests: a resolver for fixture hosts, a missing init
	// binary); nil means the defaults.
	Confine *confine.Options
	// OpenBrowser opens a URL for `aibuddy mcp login` (tests: an HTTP
	// client following the redirects); nil means the system's opener
	// (xdg-open, open), unless --no-browser.
	OpenBrowser func(url string) error
}

// Main runs the CLI with args (without the program name) and returns the
// exit code.
func Main(ctx context.Context, args []string, o Options) int {
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Registry == nil {
		o.Registry = BuiltinRegistry
	}
	root := newRoot(&o)
	root.SetArgs(args)
	root.SetIn(o.Stdin)
	root.SetOut(o.Stdout)
	root.SetErr(o.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitUsage // cobra's own errors: unknown command or flag
	var ee *exitError
	if errors.As(err, &ee) {
		code, err = ee.code, ee.err
	}
	if err != nil && err.Error() != "" {
		fmt.Fprintln(o.Stderr, "aibuddy:", err)
	}
	var st Stopped
	if errors.As(context.Cause(ctx), &st) && code != ExitUsage {
		return 128 + int(st.Signal)
	}
	return code
}

type common struct {
	workspace string
	config    string
	dataDir   string
	verbose   bool
	mcpConfig []string // --mcp-config files: only their "mcpServers" is read
	// builtinCall names the one tool aibuddy call runs; when it is a
	// built-in tool, MCP servers are not started.
	builtinCall string
	// serveEarly bounds the wait for MCP servers at start-up by
	// mcp.startupWait (aibuddy mcp); otherwise every server is waited for.
	serveEarly bool
	// sweepTemps has the local sandbox remove, in the background, the
	// temporary files of writes killed mid-way (aibuddy mcp and run: a
	// long-lived session). A one-shot command (call, tools) does not walk
	// the workspace for them.
	sweepTemps bool
	// oneShot is aibuddy call: one call in a task of its own, read by a
	// person. No later model step reads its record, so its result is not
	// precompacted unless compaction.oneShotCalls is set (building the o200k vocabulary and trimming cost more
	// than the call itself for a search); the record keeps the whole result
	// and view_tool_call reads it as always.
	oneShot bool
	// compileSchemas compiles every MCP tool's schema at intake (aibuddy
	// tools shows each one the compiler rejects as quarantined); otherwise
	// a tool compiles at its first activation or call.
	compileSchemas bool
}

// DefaultMCPStartupWait is how long `aibuddy mcp` waits for MCP servers
// before answering the host when mcp.startupWait is not set.
const DefaultMCPStartupWait = 5 * time.Second

func (c *common) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&c.workspace, "workspace", "w", "", "workspace folder the tools act in (default: the settings' sandbox.workspace, else the current folder)")
	cmd.Flags().StringVarP(&c.config, "config", "c", "", "settings file (JSON; default: $AIBUDDY_CONFIG when set)")
	cmd.Flags().StringVar(&c.dataDir, "data-dir", "", "the data folder: call records (records.db), full command output, offloaded results (default: settings' dataDir, $AIBUDDY_DATA_DIR, else the user cache folder + /aibuddy)")
	cmd.Flags().BoolVarP(&c.verbose, "verbose", "v", false, "log activity to stderr")
	cmd.Flags().StringArrayVar(&c.mcpConfig, "mcp-config", nil, "a host's settings file holding its MCP servers: JSON with \"mcpServers\" (claude_desktop_config.json, .mcp.json, .cursor/mcp.json, Gemini's settings.json) or Codex's config.toml; other keys in it are ignored; repeatable, later files and these win over the settings' servers of the same name")
}

func newRoot(o *Options) *cobra.Command {
	root := &cobra.Command{
		Use:   "aibuddy",
		Short: "The tool plane for LLM agents: which tools a model sees, and where calls take effect",
		Long: `aibuddy serves built-in tools (files, shell) over a workspace folder to any MCP host,
runs single tool calls, and explains the effective tool set of a run.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.AddCommand(newMCP(o), newCall(o), newTools(o), newCalls(o))
	root.AddCommand(newRun(o))
	root.AddCommand(newUI(o)) // ui.go: the web view over the call records
	return root
}

// run is everything one run needs, resolved from flags and settings.
type run struct {
	cfg       *config.Config
	workspace string
	dataDir   string
	sandbox   sandbox.Sandbox
	registry  *registry.Registry
	mcp       *mcpclient.Manager // nil without MCP servers
	skills    *skills.Catalog
	store     store.Store        // the call records (dataDir/records.db)
	compactor *compact.Compactor // background precompaction of large results
	// life is the command's context: background compaction runs under
	// it, so it outlives each call's reply and stops with the command.
	life context.Context
	// precompact says whether finished records go to the compactor
	// (false for aibuddy call unless compaction.oneShotCalls).
	precompact bool
	set        *capability.Set
	exclusions []capability.Exclusion
	logger     *slog.Logger
	spec       capability.RunSpec
	discovery  *discovery.Options
	servers    []mcpclient.ServerConfig // as configured, for reports
	// policy is the run's approval policy (nil when approval.off): the
	// permission engine over the sandbox's workspace.
	policy *approval.Policy
	jobs   *jobs.Runner // background jobs (jobs.go); nil when off
	// settingsFile is the settings file read ("" for none), for messages.
	settingsFile string
	// ui is the web view of aibuddy mcp --http (ui.go); nil otherwise.
	ui *uiLive
}

func (r *run) close() {
	r.closeJobs()
	if r.compactor != nil {
		r.compactor.Wait() // let started compactions finish: records stay whole either way
		_ = r.compactor.Close()
	}
	if r.store != nil {
		_ = r.store.Close()
	}
	if r.mcp != nil {
		_ = r.mcp.Close()
	}
	if r.sandbox != nil {
		_ = r.sandbox.Close()
	}
}

// pipeline is the one chain of stages every call of this command goes
// through (package pipeline; the same for aibuddy mcp, run and call),
// built from the settings: the call records in records.db, background
// compaction of large results (not for aibuddy call unless
// compaction.oneShotCalls), the model's bound limits.resultMaxChars, and
// the approval settings' policy (Policy; none when approval.off). confirm
// asks a person the way this command can; nil refuses every action the
// policy puts to a person, at the Authorization stage.
func (r *run) pipeline(confirm approval.Confirmer) *pipeline.Pipeline {
	o := &pipeline.Options{Store: r.store, Background: r.life, MaxModelChars: r.cfg.Limits.ResultMaxChars,
		Policy: r.policy, Confirmer: confirm, Logger: r.logger, Workspace: r.workspace, Hooks: r.hooks()}
	o.Observer = r.ui.observer() // ui.go: the web view's live page; nil without one
	if r.precompact && r.compactor != nil {
		o.Compactor = r.compactor
	}
	return pipeline.New(o)
}

// resolve sets up a run: settings, workspace, sandbox, skills, registry
// check, MCP connections and the effective tool set. Errors are exitErrors
// with ExitUsage.
func (c *common) resolve(ctx context.Context, o *Options) (*run, error) {
	r := &run{cfg: &config.Config{}}
	logLevel := slog.LevelWarn
	if c.verbose {
		logLevel = slog.LevelDebug
	}
	r.logger = slog.New(slog.NewTextHandler(o.Stderr, &slog.HandlerOptions{Level: logLevel}))

	cfg, cfgDir, err := c.loadConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		r.cfg, r.settingsFile = cfg, c.settingsPath()
	}
	for name, raw := range r.cfg.MCPServers {
		r.cfg.MCPServers[name] = anchorEnvFile(raw, cfgDir)
	}
	if err := c.mergeMCPConfig(r.cfg, r.logger); err != nil {
		return nil, err
	}
	ws := c.workspace
	if ws == "" && r.cfg.Sandbox.Workspace != "" && r.cfg.Sandbox.Kind != "e2b" { // e2b: a path inside the sandbox
		ws = relativeTo(cfgDir, r.cfg.Sandbox.Workspace)
	}
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, usageErr("cannot find the current folder: %v", err)
		}
		ws = wd
	}
	r.workspace = ws
	if sh := r.cfg.Sandbox.Shell; sh != "" {
		if _, err := exec.LookPath(sh); err != nil {
			return nil, usageErr("settings: sandbox.shell %q cannot be run (%v); name an installed shell such as /bin/sh or bash", sh, err)
		}
	}
	driver := confine.NewDriver(o.Confine)
	sbOpts := sandboxes.Options{
		Workspace: ws, Local: &localsandbox.Options{Shell: r.cfg.Sandbox.Shell,
			KillDelay: r.cfg.Sandbox.KillDelay.D(), DrainGrace: r.cfg.Sandbox.DrainGrace.D(),
			MaxPathDepth: r.cfg.Sandbox.MaxPathDepth, MaxPathBytes: r.cfg.Sandbox.MaxPathBytes,
			MaxReadBytes: r.cfg.Sandbox.MaxReadBytes,
			NoTempSweep:  !c.sweepTemps, Confinement: ConfineSettings(r.cfg), Driver: driver}}
	e2bSandboxOptions(r.cfg, &sbOpts) // kind "e2b": the workspace is inside the remote sandbox
	sb, err := sandboxes.New(sandbox.Kind(r.cfg.Sandbox.Kind), sbOpts)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	r.sandbox = sb
	r.dataDir = dataDir(c.dataDir, r.cfg.DataDir, cfgDir)
	if r.cfg.Dir == "" {
		r.cfg.Dir = cfgDir
	}
	r.policy = PolicyFor(r.cfg, sb.Workspace())
	if r.policy != nil {
		eng, err := r.policy.Engine()
		if err != nil {
			r.close()
			return nil, usageErr("refusing to start: settings: %v (security fails closed: fix or remove the rule)", err)
		}
		for _, n := range eng.Notes() {
			fmt.Fprintf(o.Stderr, "aibuddy: permissions: %s\n", n)
		}
	}

	var dirs []string
	for _, d := range r.cfg.Skills {
		dirs = append(dirs, relativeTo(cfgDir, d))
	}
	for i, d := range dirs {
		// A folder named in the settings that is not there is a typo, not
		// an empty catalogue.
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, usageErr("settings: skills[%d]: %s is not a folder (%v); fix the path or remove it", i, d, statReason(fi, err))
		}
	}
	cat, problems := skills.Load(dirs)
	for _, p := range problems {
		fmt.Fprintf(o.Stderr, "aibuddy: skill not loaded: %s\n", p)
	}
	r.skills = cat

	r.registry = o.Registry(r.cfg, r.dataDir, cat)
	if err := r.registry.AssertConsistent(); err != nil {
		r.close()
		return nil, usageErr("refusing to start: %v", err)
	}
	st, err := openRecords(ctx, r.cfg, r.dataDir)
	if err != nil {
		r.close()
		return nil, usageErr("opening the call records: %v (set --data-dir to a writable folder, or check store.url)", err)
	}
	r.store = st
	pruneData(ctx, st, r.dataDir, r.cfg.DataRetention.D(), r.logger)
	cc := r.cfg.Compaction
	copts := &compact.Options{DataDir: r.dataDir, GroupOf: r.registry.GroupOf, Logger: r.logger,
		Threshold: cc.ThresholdTokens, Target: cc.TargetTokens, Workers: cc.Workers, FullOutputDir: outputsDir(r.dataDir),
		Strategies: map[string]compact.Strategy{}, GroupStrategies: map[string]compact.Strategy{}}
	for k, v := range cc.Strategies {
		copts.Strategies[k] = compact.Strategy(v)
	}
	for k, v := range cc.GroupStrategies {
		copts.GroupStrategies[k] = compact.Strategy(v)
	}
	summaryOptions(r.cfg, copts) // the summarizer itself is the command's: run.go, mcp.go
	r.compactor, err = compact.New(st, copts)
	if err != nil {
		r.close()
		return nil, &exitError{code: ExitFailure, err: err}
	}
	r.life = ctx
	r.precompact = !c.oneShot || cc.OneShotCalls
	d := r.cfg.Discovery
	r.discovery = &discovery.Options{Gates: discovery.Gates{PerServer: d.PerServer, Total: d.Total},
		DefaultResults: d.SearchResults, MaxResults: d.SearchMax}
	services := map[string]any{compact.ServiceRecords: st}
	storeServices(services, st)
	r.addJobs(ctx, services)
	for k, v := range o.Services {
		services[k] = v
	}
	r.spec = capability.RunSpec{ToolKeys: r.cfg.ToolKeys, Services: services, Sandbox: sb}
	if r.policy != nil {
		// The capability plane: a tool a bare deny rule names, and in
		// plan mode every tool that is not read-only, is not offered.
		eng, _ := r.policy.Engine()
		r.spec.Offered = eng.Offered
	}
	if cat.Len() > 0 {
		r.spec.Prerequisites = append(r.spec.Prerequisites, skills.Prerequisite)
	}

	servers, err := mcpclient.ParseServersWith(r.cfg.MCPServers, hostVars(r.workspace))
	if err != nil {
		r.close()
		return nil, usageErr("settings: %v", err)
	}
	for _, sc := range servers {
		if sc.Sandbox != nil {
			ss := config.ServerSandbox{Confinement: sc.Sandbox.Confinement, Network: sc.Sandbox.Network, AllowedDomains: sc.Sandbox.AllowedDomains}
			if err := ss.Check("mcpServers." + sc.Name + ".sandbox"); err != nil {
				r.close()
				return nil, usageErr("settings: %v", err)
			}
		}
	}
	if servers, err = nestServers(servers, r.logger); err != nil {
		r.close()
		return nil, usageErr("%v", err)
	}
	r.servers = servers
	if _, builtin := r.registry.GroupOf(c.builtinCall); builtin && c.builtinCall != "" {
		// One call of a built-in tool needs no MCP server: none is started
		// (a hanging one would only delay it).
		servers = nil
	}
	if len(servers) > 0 {
		r.mcp = mcpclient.Start(ctx, servers, &mcpclient.Options{
			InitTimeout: r.cfg.MCP.InitTimeout.D(), CallTimeout: r.cfg.MCP.CallTimeout.D(),
			RestartBackoff: r.cfg.MCP.RestartBackoff.D(), RestartBackoffMax: r.cfg.MCP.RestartBackoffMax.D(),
			MaxRestarts: r.cfg.MCP.MaxRestarts, RestartWindow: r.cfg.MCP.RestartWindow.D(),
			MaxFrameBytes: r.cfg.MCP.UpstreamMaxFrameBytes,
			InheritEnv:    append(append([]string(nil), mcpclient.DefaultInheritEnv...), r.cfg.MCP.InheritEnv...),
			Logger:        r.logger, ClientName: "aibuddy", ClientVersion: Version,
			CompileSchemas: c.compileSchemas, MaxSchemaDepth: r.cfg.MCP.MaxSchemaDepth,
			NotificationsPerSecond: r.cfg.MCP.NotificationsPerSecond, NotificationLogInterval: r.cfg.MCP.NotificationLogInterval.D(),
			Confine: ServerConfinement(r.cfg, r.workspace), ConfineDriver: driver,
			Elicit: elicitorFor(services[approval.ServiceUserInput]), MaxInputRounds: r.cfg.MCP.MaxInputRounds, ProtocolVersion: r.cfg.MCP.ProtocolVersion,
			OAuth: &mcpclient.OAuthOptions{Store: oauthStore(r.dataDir), RefreshBefore: r.cfg.MCP.OAuthRefreshBefore.D()}})
		wait := ctx
		d := r.cfg.MCP.StartupWait.D()
		if d == 0 {
			d = DefaultMCPStartupWait
		}
		if c.serveEarly {
			// An MCP host waits for our initialize answer: a slow or hung
			// server must not hold it. Late servers join through refresh.
			var cancel context.CancelFunc
			wait, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		if err := r.mcp.Wait(wait); err != nil && ctx.Err() == nil {
			var pending []string
			for _, st := range r.mcp.Servers() {
				if st.State == mcpclient.StateConnecting {
					pending = append(pending, st.Name)
				}
			}
			r.logger.Warn("serving without the MCP servers still connecting; their tools are added when they connect (notifications/tools/list_changed)",
				"waited", d, "servers", strings.Join(pending, ","))
		}
	}
	if err := r.resolveSet(); err != nil {
		r.close()
		return nil, &exitError{code: ExitFailure, err: err}
	}
	var unknown []string
	for _, e := range r.exclusions {
		if e.Reason == capability.UnknownKey {
			unknown = append(unknown, e.Detail)
		}
	}
	if len(unknown) > 0 {
		r.close()
		return nil, usageErr("settings: %s", strings.Join(unknown, "; "))
	}
	return r, nil
}

// mergeMCPConfig adds the MCP servers of every --mcp-config file to cfg:
// the file a user already keeps for Claude Desktop, Claude Code, Cursor,
// Gemini CLI (settings.json) or Codex (config.toml), whatever else it
// holds (mcpclient.ReadHostFile). Keys without effect here are warnings,
// not errors. A server named twice takes the later definition (a warning
// says so).
func (c *common) mergeMCPConfig(cfg *config.Config, logger *slog.Logger) error {
	for _, path := range c.mcpConfig {
		hf, err := mcpclient.ReadHostFile(path)
		if err != nil {
			return usageErr("--mcp-config: %v", err)
		}
		for _, n := range hf.Notes {
			logger.Warn("--mcp-config: "+n, "file", path)
		}
		if cfg.MCPServers == nil {
			cfg.MCPServers = map[string]json.RawMessage{}
		}
		names := make([]string, 0, len(hf.Servers))
		for name := range hf.Servers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if _, dup := cfg.MCPServers[name]; dup {
				logger.Warn("MCP server defined twice; the later definition is used", "server", name, "file", path)
			}
			cfg.MCPServers[name] = anchorEnvFile(hf.Servers[name], filepath.Dir(path))
		}
	}
	return nil
}

// statReason says why a path is not a folder.
func statReason(fi os.FileInfo, err error) string {
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "it does not exist"
		}
		return err.Error()
	}
	return "it is a file, not a folder"
}

// hostVars is the ${VAR} lookup for mcpServers entries: the environment,
// plus VS Code/Cursor's ${workspaceFolder} (the workspace) and ${userHome}
// when the environment does not define them.
func hostVars(workspace string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v, ok := os.LookupEnv(name); ok {
			return v, true
		}
		switch name {
		case "workspaceFolder":
			return workspace, workspace != ""
		case "userHome":
			h, err := os.UserHomeDir()
			return h, err == nil
		}
		return "", false
	}
}

// anchorEnvFile makes a relative "envFile" of one mcpServers entry relative
// to dir (the folder of the file that holds the entry), as every other
// relative path in a settings file is; an entry it cannot read is returned
// unchanged (ParseServers reports it).
func anchorEnvFile(raw json.RawMessage, dir string) json.RawMessage {
	var fields map[string]json.RawMessage
	if dir == "" || json.Unmarshal(raw, &fields) != nil {
		return raw
	}
	var f string
	if json.Unmarshal(fields["envFile"], &f) != nil || f == "" || filepath.IsAbs(f) || strings.HasPrefix(f, "$") {
		return raw
	}
	fields["envFile"], _ = json.Marshal(filepath.Join(dir, f))
	out, err := json.Marshal(fields)
	if err != nil {
		return raw
	}
	return out
}

// loadConfig reads the settings file named by --config or
// $AIBUDDY_CONFIG; nil when there is none. dir is the file's folder.
func (c *common) loadConfig() (cfg *config.Config, dir string, err error) {
	path := c.config
	if path == "" {
		path = os.Getenv("AIBUDDY_CONFIG")
	}
	if path == "" {
		return nil, "", nil
	}
	cfg, err = config.Load(path)
	if err != nil {
		return nil, "", usageErr("%v", err)
	}
	return cfg, filepath.Dir(path), nil
}

// resolveSet computes a fresh effective tool set (fresh per-run state)
// from the registry and the MCP servers as they are now.
func (r *run) resolveSet() error { return r.resolveSetReusing(nil) }

// resolveSetReusing is resolveSet keeping the built-in tools of prev.
func (r *run) resolveSetReusing(prev *capability.Set) error {
	spec := r.spec
	spec.Reuse = prev
	if r.mcp != nil {
		tools := r.mcp.Tools()
		for _, st := range r.mcp.Servers() {
			m := capability.MCPServer{Name: st.Name, Connected: st.State.Usable(), // reconnecting keeps its tools
				Tools: tools[st.Name]}
			if !m.Connected {
				m.Error = string(st.State)
				if st.Error != "" {
					m.Error += ": " + st.Error
				}
			}
			for _, q := range st.Quarantined {
				m.Quarantined = append(m.Quarantined, capability.Quarantined{Tool: q.Tool, Reason: q.Reason})
			}
			spec.MCP = append(spec.MCP, m)
		}
	}
	set, ex, err := capability.Resolve(r.registry, spec)
	if err != nil {
		return err
	}
	r.set, r.exclusions = set, ex
	return nil
}

// dataDir picks the data folder: the flag, the settings, $AIBUDDY_DATA_DIR,
// else the user cache folder.
func dataDir(flag, setting, cfgDir string) string {
	switch {
	case flag != "":
		return flag
	case setting != "":
		return relativeTo(cfgDir, setting)
	case os.Getenv("AIBUDDY_DATA_DIR") != "":
		return os.Getenv("AIBUDDY_DATA_DIR")
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "aibuddy")
	}
	return filepath.Join(os.TempDir(), "aibuddy")
}

func relativeTo(base, p string) string {
	if p == "" || filepath.IsAbs(p) || base == "" {
		return p
	}
	return filepath.Join(base, p)
}

// BuiltinRegistry is the start-up registry of the aibuddy program: the
// filesystem and execute groups bounded by cfg's limits (execute keeps full
// output under dataDir/outputs, within limits.dataDirMaxBytes for the
// whole data folder), the interaction group (ask_user_question,
// present only where a user_input service is injected), the skills group
// (view_skill, present only when cat holds a skill) and the records group
// (view_tool_call over the call records).
func BuiltinRegistry(cfg *config.Config, dataDir string, cat *skills.Catalog) *registry.Registry {
	outputs := outputsDir(dataDir)
	fs, ex := ToolOptions(cfg, outputs)
	if dataDir != "" {
		// The whole data folder counts; full outputs and offloaded
		// compactions (copies of what the records hold) may be evicted.
		ex.Quota = &coretools.DataQuota{Root: dataDir, MaxBytes: cfg.Limits.DataDirMaxBytes,
			Evict: []string{outputs, filepath.Join(dataDir, compact.OffloadDir)}}
	}
	cc := cfg.Compaction
	groups := append(coretools.Groups(fs, ex), approval.Group(), skills.Group(cat),
		compact.Group(dataDir, &compact.ViewOptions{FullOutputDir: outputs, MaxChars: cc.ViewMaxChars,
			MaxTokens: cc.ViewMaxTokens, MaxJSONBytes: cc.ViewMaxJSONBytes}))
	metas := append(append([]registry.Meta(nil), coretools.Metas...), approval.Meta, skills.Meta, compact.Meta)
	return registry.New(groups, metas, nil)
}

// StoreOptions are the call records' options from the settings (records.*):
// sync "normal" by default (a call's record survives the process being
// killed before its result is handed back; "full" also survives power
// loss, at one fsync per commit).
func StoreOptions(cfg *config.Config) *sqlitestore.Options {
	o := &sqlitestore.Options{Sync: sqlitestore.SyncNormal, MaxBatch: cfg.Records.MaxBatch, RunningDelay: cfg.Records.RunningDelay.D()}
	if cfg.Records.Sync == "full" {
		o.Sync = sqlitestore.SyncFull
	}
	return o
}

// outputsDir is where execute keeps full output under dataDir ("" when
// there is no data folder).
func outputsDir(dataDir string) string {
	if dataDir == "" {
		return ""
	}
	return filepath.Join(dataDir, "outputs")
}

// newTaskID mints the id of one run (task) for the call records.
func newTaskID(prefix string) string {
	return prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}
