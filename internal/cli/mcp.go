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

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/tool"
)

func newMCP(o *Options) *cobra.Command {
	c := common{serveEarly: true, sweepTemps: true}
	var httpAddr string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the effective tool set as an MCP server (stdio by default)",
		Long: `Serve the run's effective tool set to an MCP host.

The built-in tools are listed directly. MCP servers from the settings'
"mcpServers" are connected and their tools listed directly or deferred by the
count gates; deferred tools are found with tool_search, which activates them
(the host is told with notifications/tools/list_changed; call_tool reaches an
activated tool for hosts that never refresh their list).

Over stdio (the default) stdout carries protocol frames only; logs go to
stderr. With --http ADDR it serves streamable HTTP at http://ADDR/mcp, one
fresh run (tool state) per MCP session.`,
		Example: `  aibuddy mcp --workspace ~/src/project
  aibuddy mcp --config aibuddy.json
  aibuddy mcp --http 127.0.0.1:8765`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// Over MCP, questions reach the user through elicitation when
			// the host supports it (else ask_user_question refuses at the
			// Authorization stage).
			oo := *o
			oo.Services = map[string]any{approval.ServiceUserInput: approval.Asker(mcpserver.ElicitAsker{})}
			for k, v := range o.Services {
				oo.Services[k] = v
			}
			r, err := c.resolve(ctx, &oo)
			if err != nil {
				return err
			}
			defer r.close()
			// High-impact actions are put to the user through the host
			// (elicitation), or refused when it cannot ask.
			opts := &mcpserver.Options{Version: Version, Logger: r.logger, Discovery: r.discovery,
				Policy: Policy(r.cfg), Confirmer: mcpserver.ElicitConfirmer{}, ServerStatus: r.serverStatus}
			gw := &gateways{r: r, opts: opts, life: ctx}
			// On SIGTERM/SIGINT (ctx done) every call in flight is
			// cancelled (execute stops its process group) and waited for,
			// so no command outlives aibuddy mcp; but a call that has not
			// returned mcp.stopGrace later is stuck in a system call its
			// cancellation cannot stop (a hung network filesystem), and
			// is left behind with a warning (issue 11).
			abandon := afterStop(ctx, r.cfg.MCP.StopGrace.D())
			defer gw.waitInflight(abandon, r.logger)
			if r.mcp != nil {
				cancel := r.mcp.Subscribe(gw.refresh)
				defer cancel()
			}
			if httpAddr == "" {
				if isTerminal(cmd.InOrStdin()) {
					waitingNotice(cmd.ErrOrStderr(), r.workspace)
				}
				srv := gw.add().Server()
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
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on ADDR (host:port) instead of stdio")
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
	all  []*mcpserver.Gateway
	seen map[*mcpserver.Gateway]bool // gateways that have had a session
	// life ends with the command (a signal or the end of the session):
	// every call in flight is cancelled then.
	life     context.Context
	inflight sync.WaitGroup
	runMu    sync.Mutex
	running  map[*tool.Call]bool // calls in flight, for the warning of waitInflight; guarded by runMu
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
	task := newTaskID("mcp")
	rec := g.r.recorder
	life := g.life
	if life == nil {
		life = context.Background()
	}
	opts.Wrap = func(ctx context.Context, call *tool.Call, next func(context.Context, *tool.Call) *tool.Result) *tool.Result {
		g.inflight.Add(1)
		defer g.inflight.Done()
		g.track(call, true)
		defer g.track(call, false)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(life, cancel)()
		return rec.Call(ctx, task, call, next)
	}
	gw := mcpserver.NewGateway(g.r.set, &opts)
	g.all = append(g.all, gw)
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
	live := g.all[:0]
	for _, gw := range g.all {
		// A gateway whose session has ended (HTTP) is dropped; one whose
		// session has not started yet stays.
		if hasSession(gw) {
			if g.seen == nil {
				g.seen = map[*mcpserver.Gateway]bool{}
			}
			g.seen[gw] = true
		} else if g.seen[gw] {
			delete(g.seen, gw)
			continue
		}
		live = append(live, gw)
	}
	g.all = live
	for _, gw := range g.all {
		// Each gateway keeps its own built-in tools (their per-run state,
		// such as which files were read) and gets the new MCP tools.
		if err := g.r.resolveSetReusing(gw.Set()); err != nil {
			g.r.logger.Error("resolving the tool set after an MCP server changed", "err", err)
			return
		}
		gw.Update(g.r.set)
	}
}

func serveHTTP(ctx context.Context, cmd *cobra.Command, r *run, addr string, gw *gateways) error {
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return gw.add().Server()
	}, &mcp.StreamableHTTPOptions{Logger: r.logger})
	mux := http.NewServeMux()
	guarded := checkOrigin(handler)
	mux.Handle("/mcp", guarded)
	mux.Handle("/mcp/", guarded)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("listen on %s: %v", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintf(cmd.ErrOrStderr(), "aibuddy: WARNING: %s is not a loopback address and this endpoint has no authentication: "+
			"anyone who can reach it can read and write the workspace and run commands as you. Bind 127.0.0.1 unless a proxy in front authenticates.\n", ln.Addr())
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.ErrOrStderr(), "aibuddy: serving MCP over streamable HTTP at http://%s/mcp (workspace %s)\n", ln.Addr(), r.sandbox.Workspace())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return &exitError{code: ExitFailure, err: err}
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
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

func hasSession(gw *mcpserver.Gateway) bool {
	for range gw.Server().Sessions() {
		return true
	}
	return false
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
  browser or remote host: aibuddy mcp --http 127.0.0.1:8765 (streamable HTTP at http://127.0.0.1:8765/mcp)
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
