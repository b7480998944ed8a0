package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/tool"
)

func newMCP(o *Options) *cobra.Command {
	c := common{serveEarly: true, sweepTemps: true}
	var httpAddr string
	var printToken bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the effective tool set as an MCP server (stdio by default)",
		Long: `Serve the run's effective tool set to an MCP host.

The built-in tools are listed directly. MCP servers from the settings'
"mcpServers" are connected and their tools listed directly or deferred by the
count gates; deferred tools are found with tool_search, which activates them
(the host is told with notifications/tools/list_changed; call_tool reaches an
activated tool for hosts that never refresh their list). The gates count the
servers still connecting too (each with its tool count from the last start,
kept in the data folder, else mcp.expectedToolsPerServer), so tool_search is
listed from the first tools/list when their tools are expected to be deferred.

Over stdio (the default) stdout carries protocol frames only; logs go to
stderr. With --http ADDR it serves streamable HTTP at http://ADDR/mcp, one
fresh run (tool state) per MCP session. Every HTTP request needs
"Authorization: Bearer TOKEN": the token of $AIBUDDY_TOKEN, else one aibuddy
makes (256 random bits) and keeps in the data folder's http-token file (mode
0600, reused at the next start; the path is printed, the token is not:
--print-token prints it). A session idle for mcp.sessionIdleTimeout (default
30 min) is closed and its tool state freed.`,
		Example: `  aibuddy mcp --workspace ~/src/project
  aibuddy mcp --config aibuddy.json
  aibuddy mcp --http 127.0.0.1:8765
  export AIBUDDY_TOKEN="$(aibuddy mcp --print-token)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if printToken {
				return c.printToken(cmd.OutOrStdout())
			}
			// Over MCP, questions reach the user through elicitation when
			// the host supports it (else ask_user_question refuses at the
			// Authorization stage).
			oo := *o
			oo.Services = map[string]any{approval.ServiceUserInput: approval.Asker(mcpserver.ElicitAsker{})}
			for k, v := range o.Services {
				oo.Services[k] = v
			}
			var live *uiLive // ui.go: the web view at /ui/ of --http, approval.via
			if httpAddr != "" {
				var err error
				if live, err = c.newUILive(&oo); err != nil {
					return err
				}
			}
			r, err := c.resolve(ctx, &oo)
			if err != nil {
				return err
			}
			defer r.close()
			r.ui = live
			// Every session's calls go through one pipeline; high-impact
			// actions are put to the user through the host (elicitation),
			// or refused when it cannot ask.
			expect := r.newExpectations()
			opts := &mcpserver.Options{Version: Version, Logger: r.logger, Discovery: r.discovery,
				Pipeline: r.pipeline(live.confirmer(mcpserver.ElicitConfirmer{})), ServerStatus: r.serverStatus, Pending: expect.pending}
			if r.mcp != nil { // upstream resources, prompts, completions
				opts.Passthrough = &mcpserver.PassthroughOptions{Upstream: r.mcp, Names: r.cfg.MCP.PassthroughNames,
					MaxChars: r.cfg.Limits.ResultMaxChars, MaxBlobBytes: int(r.cfg.MCP.PassthroughMaxBlobBytes)}
			}
			gw := &gateways{r: r, opts: opts, life: ctx, ui: live}
			r.compactor.SetSummarizer(gw) // summaries through the host's MCP sampling (summarize.go)
			if live != nil {
				live.g = gw
			}
			// On SIGTERM/SIGINT (ctx done) every call in flight is
			// cancelled (execute stops its process group) and waited for,
			// so no command outlives aibuddy mcp; but a call that has not
			// returned mcp.stopGrace later is stuck in a system call its
			// cancellation cannot stop (a hung network filesystem), and
			// is left behind with a warning (issue 11).
			abandon := afterStop(ctx, r.cfg.MCP.StopGrace.D())
			defer gw.waitInflight(abandon, r.logger)
			if r.mcp != nil {
				defer gw.watchUpstream(ctx, r.mcp, expect, r.cfg.MCP.ListChangedInterval.D())()
			}
			if httpAddr == "" {
				if isTerminal(cmd.InOrStdin()) {
					waitingNotice(cmd.ErrOrStderr(), r.workspace)
				}
				first := gw.add()
				defer gw.endTask(first) // the session's background jobs end with it
				srv := first.Server()
				tr := guardedStdio(cmd.InOrStdin(), cmd.OutOrStdout(), stdioOptions{MaxFrame: int(r.cfg.MCP.MaxFrameBytes),
					Grace: r.cfg.MCP.DrainGrace.D(), Logger: r.logger})
				if err := serveStdio(ctx, abandon, srv, tr); err != nil {
					return &exitError{code: ExitFailure, err: fmt.Errorf("mcp over stdio: %w", err)}
				}
				return nil
			}
			return serveHTTP(ctx, cmd, r, httpAddr, gw)
		},
	}
	c.register(cmd)
	cmd.AddCommand(newMCPLogin(o), newMCPLogout(o))
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on ADDR (host:port) instead of stdio; every request needs Authorization: Bearer TOKEN")
	cmd.Flags().BoolVar(&printToken, "print-token", false, "print the bearer token --http requires ($AIBUDDY_TOKEN, else the data folder's http-token, made if missing) on stdout and exit")
	return cmd
}

// serveStdio is mcp.Server.Run without its ERROR log when ctx ends: a
// host's SIGTERM or a user's Ctrl-C is the normal end of `aibuddy mcp`,
// not a failure. It returns when the session ends (nil at the end of
// input) or ctx is done (nil, after the session closed: calls in flight
// are cancelled and waited for, until abandon is closed).
func serveStdio(ctx context.Context, abandon <-chan struct{}, srv *mcp.Server, tr mcp.Transport) error {
	ss, err := srv.Connect(ctx, tr, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		closed := make(chan struct{})
		go func() {
			_ = ss.Close() // waits for the handlers in flight
			<-done
			close(closed)
		}()
		select {
		case <-closed:
		case <-abandon:
		}
		return nil
	case err := <-done:
		return err
	}
}

// DefaultStopGrace is mcp.stopGrace when unset.
const DefaultStopGrace = 10 * time.Second

// afterStop returns a channel closed grace (default DefaultStopGrace)
// after ctx is done; never while it is not.
func afterStop(ctx context.Context, grace time.Duration) <-chan struct{} {
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	ch := make(chan struct{})
	context.AfterFunc(ctx, func() { time.AfterFunc(grace, func() { close(ch) }) })
	return ch
}

// waitInflight waits for the calls in flight, until abandon is closed;
// then it warns about those still running (stuck where their cancellation
// cannot reach) and returns without them.
func (g *gateways) waitInflight(abandon <-chan struct{}, logger *slog.Logger) {
	done := make(chan struct{})
	go func() {
		g.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-abandon:
		g.runMu.Lock()
		var names []string
		for c := range g.running {
			names = append(names, c.Name+" "+c.ID)
		}
		g.runMu.Unlock()
		sort.Strings(names)
		logger.Warn("calls still running after the stop and mcp.stopGrace (stuck in a system call their cancellation cannot stop, e.g. on a hung filesystem); exiting without them",
			"calls", names)
	}
}

// gateways are the live MCP gateways of this process (one per session),
// refreshed together when an upstream MCP server's tools change.
type gateways struct {
	r    *run
	opts *mcpserver.Options
	mu   sync.Mutex
	all  []*mcpserver.Gateway // over HTTP, dropped when their session ends (httpserve.go)
	// life ends with the command (a signal or the end of the session):
	// every call in flight is cancelled then.
	life     context.Context
	inflight sync.WaitGroup
	watching sync.WaitGroup              // HTTP sessions being watched for their end
	closing  bool                        // aibuddy is stopping: a new session is closed at once
	onDrop   func(gw *mcpserver.Gateway) // when set, told of each gateway dropped (tests)
	runMu    sync.Mutex
	running  map[*tool.Call]bool // calls in flight, for the warning of waitInflight; guarded by runMu
	tasks    sync.Map            // *mcpserver.Gateway → its task id, for the end of its jobs (jobs.go)
	ui       *uiLive             // the web view (ui.go); nil without one
}

// add resolves a fresh run (fresh per-run tool state) and serves it.
func (g *gateways) add() *mcpserver.Gateway {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.r.resolveSet(); err != nil {
		g.r.logger.Error("resolving the tool set", "err", err)
	}
	// Each session is one task in the call records.
	opts := *g.opts
	opts.TaskID = newTaskID("mcp")
	life := g.life
	if life == nil {
		life = context.Background()
	}
	// Around the whole pipeline: every call is counted in flight (and
	// named in the warning of waitInflight) and cancelled when the
	// command stops.
	opts.Wrap = func(next pipeline.Handler) pipeline.Handler {
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			g.inflight.Add(1)
			defer g.inflight.Done()
			g.track(call, true)
			defer g.track(call, false)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(life, cancel)()
			return next(ctx, call)
		}
	}
	gw := mcpserver.NewGateway(g.r.set, &opts)
	g.noteTask(gw, opts.TaskID)
	g.all = append(g.all, gw)
	g.ui.added(gw, opts.TaskID)
	return gw
}

// track records call as running (or no longer).
func (g *gateways) track(call *tool.Call, running bool) {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	if running {
		if g.running == nil {
			g.running = map[*tool.Call]bool{}
		}
		g.running[call] = true
		return
	}
	delete(g.running, call)
}

// refresh re-resolves the tool set after an upstream change and updates
// every gateway (the gates are re-evaluated; activations are kept).
func (g *gateways) refresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, gw := range g.all {
		// Each gateway keeps its own built-in tools (their per-run state,
		// such as which files were read) and gets the new MCP tools.
		if err := g.r.resolveSetReusing(gw.Set()); err != nil {
			g.r.logger.Error("resolving the tool set after an MCP server changed", "err", err)
			return
		}
		gw.Update(g.r.set)
	}
	g.ui.changed()
}

// serveHTTP serves gw's sessions over streamable HTTP at http://addr/mcp
// until ctx ends: every request needs the bearer token (httpToken), a
// session idle for mcp.sessionIdleTimeout is closed and its gateway
// dropped, and request headers and bodies are read within
// mcp.httpHeaderTimeout and mcp.httpBodyTimeout.
func serveHTTP(ctx context.Context, cmd *cobra.Command, r *run, addr string, gw *gateways) error {
	stderr := cmd.ErrOrStderr()
	o := httpOptions{Logger: r.logger}
	httpSettings(r.cfg.MCP, &o)
	var from string
	if oa := r.cfg.MCP.OAuth; oa.Issuer != "" {
		// Discovery and key requests get one request's worth of the
		// HTTP bounds.
		client := &http.Client{Timeout: o.HeaderTimeout + o.BodyTimeout}
		if err := oauthResourceServer(ctx, oa, client, &o); err != nil {
			return usageErr("%v", err)
		}
		from = "oauth"
	} else {
		token, src, err := httpToken(r.dataDir, os.Getenv)
		if err != nil {
			return usageErr("%v", err)
		}
		from = src
		o.Verify = staticToken(token)
		o.Bearer = bearerOptions{Realm: "aibuddy", SDK: auth.RequireBearerTokenOptions{AllowMissingExpiration: true},
			Hint: "send the header Authorization: Bearer <token>, with the token of $" + TokenEnv + " or of the token file aibuddy mcp --http named at start (aibuddy mcp --print-token prints it)"}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("listen on %s: %v", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintf(stderr, "aibuddy: WARNING: %s is not a loopback address: requests, responses and the bearer token travel unencrypted over plain HTTP, "+
			"and anyone who learns the token can read and write the workspace and run commands as you. Bind 127.0.0.1 unless a TLS proxy in front terminates the connection.\n", ln.Addr())
	}
	srv := &http.Server{Handler: gw.handler(o), ReadHeaderTimeout: o.HeaderTimeout}
	fmt.Fprintf(stderr, "aibuddy: serving MCP over streamable HTTP at http://%s/mcp (workspace %s)\n", ln.Addr(), r.sandbox.Workspace())
	if oa := r.cfg.MCP.OAuth; from == "oauth" {
		fmt.Fprintf(stderr, "aibuddy: every request needs Authorization: Bearer <access token> from %s for %s (protected-resource metadata: %s)\n",
			oa.Issuer, oa.Resource, o.Bearer.SDK.ResourceMetadataURL)
	} else if from == "$"+TokenEnv {
		fmt.Fprintf(stderr, "aibuddy: every request needs Authorization: Bearer <token>, the token of $%s\n", TokenEnv)
	} else {
		fmt.Fprintf(stderr, "aibuddy: every request needs Authorization: Bearer <token>, the token in %s (for a host: export %s=\"$(cat %s)\")\n", from, TokenEnv, shellQuote(from))
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		gw.closeSessions()
		return &exitError{code: ExitFailure, err: err}
	case <-ctx.Done():
		// Shutdown stops accepting and waits for connections to go idle;
		// closing the sessions ends their GET streams, so it need not
		// wait for those.
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopped := make(chan error, 1)
		go func() { stopped <- srv.Shutdown(shutdown) }()
		gw.closeSessions()
		if <-stopped == nil {
			gw.watching.Wait() // no handler is left to start a watch
		}
		return nil
	}
}

// checkOrigin refuses (403) a request whose Origin header names another
// site than the one served: the MCP transport spec requires servers to
// validate Origin against DNS rebinding ("Security Warning", Streamable
// HTTP, 2025-06-18). Requests without Origin (non-browser clients) pass.
func checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if o := req.Header.Get("Origin"); o != "" && !sameSite(o, req.Host) {
			http.Error(w, "aibuddy: Origin "+o+" is not allowed (only this server's own origin or localhost)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// sameSite reports whether origin (scheme://host[:port]) is the served host
// or a loopback name.
func sameSite(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// serverStatus is mcpserver.Options.ServerStatus over the run's MCP
// client: connected, or the state and error ("disconnected: connection
// closed by the server").
func (r *run) serverStatus(server string) (connected bool, why string) {
	if r.mcp == nil {
		return true, ""
	}
	for _, st := range r.mcp.Servers() {
		if st.Name != server {
			continue
		}
		if st.State == mcpclient.StateConnected {
			return true, ""
		}
		why = string(st.State)
		if st.Error != "" {
			why += ": " + st.Error
		}
		return false, why
	}
	return true, ""
}

// isTerminal reports whether r is a terminal (a person typing, not a
// host's pipe).
func isTerminal(r io.Reader) bool {
	f, ok := r.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// waitingNotice tells a person who ran `aibuddy mcp` in a terminal what it
// is waiting for and how a host starts it. It goes to stderr: stdout
// carries protocol frames only.
func waitingNotice(w io.Writer, workspace string) {
	exe := "aibuddy"
	if p, err := os.Executable(); err == nil && !strings.Contains(p, "go-build") {
		exe = p // an installed binary: hosts need its absolute path unless it is on their PATH
	}
	if abs, err := filepath.Abs(workspace); err == nil {
		workspace = abs // a host starts it in a folder of its own
	}
	args, _ := json.Marshal([]string{"mcp", "--workspace", workspace})
	quotedExe, _ := json.Marshal(exe)
	fmt.Fprintf(w, `aibuddy mcp: serving the tools for %s over stdio, waiting for an MCP host to speak JSON-RPC on stdin.
It is meant to be started by a host, not typed at. Register it:
  Claude Code:      claude mcp add aibuddy -- %s mcp --workspace %s
  mcpServers JSON (Claude Desktop, Cursor, Gemini CLI, ...):
                    {"mcpServers": {"aibuddy": {"command": %s, "args": %s}}}
  browser or remote host: aibuddy mcp --http 127.0.0.1:8765 (streamable HTTP at http://127.0.0.1:8765/mcp;
                    every request needs Authorization: Bearer $AIBUDDY_TOKEN, see aibuddy mcp --print-token)
`, workspace, shellQuote(exe), shellQuote(workspace), quotedExe, args)
	if exe == "aibuddy" {
		fmt.Fprintln(w, "  (hosts start the aibuddy on their PATH: install it with go install ./cmd/aibuddy, or give the binary's absolute path)")
	}
	fmt.Fprintln(w, "Press Ctrl-C (or Ctrl-D) to stop.")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '=' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
