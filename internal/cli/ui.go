package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/web"
)

// DefaultUIAddr is where `aibuddy ui` listens without --http.
const DefaultUIAddr = "127.0.0.1:8766"

// uiLive is the web view of one `aibuddy mcp --http`: the hub that
// observes every call of its pipeline, the broker of the approvals a
// browser decides (approval.via web or both), and the task id of each
// live gateway (MCP session).
type uiLive struct {
	via      approval.Via
	settings config.Web
	hub      *web.Hub
	broker   *approval.Broker // nil for approval.via host
	g        *gateways        // set by newMCP once the gateways exist
	mu       sync.Mutex
	tasks    map[*mcpserver.Gateway]string
}

// newUILive reads approval.via and the web block from the settings and,
// for via web or both, makes ask_user_question ask the browser too (o's
// user_input service).
func (c *common) newUILive(o *Options) (*uiLive, error) {
	cfg, _, err := c.loadConfig()
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	via, err := approval.ParseVia(cfg.Approval.Via)
	if err != nil {
		return nil, usageErr("settings: %v", err)
	}
	u := &uiLive{via: via, settings: cfg.Web.Resolved(), tasks: map[*mcpserver.Gateway]string{}}
	if via.Web() {
		u.broker = approval.NewBroker(&approval.BrokerOptions{OnChange: func() { u.hub.ApprovalsChanged() },
			Timeout: u.settings.ApprovalTimeout.D(), Where: "/ui/ of aibuddy mcp --http"})
		host, _ := o.Services[approval.ServiceUserInput].(approval.Asker)
		o.Services[approval.ServiceUserInput] = approval.AskVia(via, host, u.broker)
	}
	u.hub = web.NewHub(&web.HubOptions{EventBuffer: u.settings.EventBuffer, OutputTailBytes: u.settings.OutputTailBytes,
		RecentCalls: u.settings.RecentCalls, Broker: u.broker, Sessions: u.sessions, Servers: u.servers, Exclusions: u.exclusions})
	return u, nil
}

// confirmer is the Confirmer for approval.via: the host's, the browser's
// or both (nil u: the host's).
func (u *uiLive) confirmer(host approval.Confirmer) approval.Confirmer {
	if u == nil || u.broker == nil {
		return host
	}
	return approval.ConfirmVia(u.via, host, u.broker)
}

// observer is the pipeline's Observer (nil without a web view).
func (u *uiLive) observer() pipeline.Observer {
	if u == nil {
		return nil
	}
	return u.hub
}

// added and dropped follow the MCP sessions (gateways.add, drop).
func (u *uiLive) added(gw *mcpserver.Gateway, taskID string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	u.tasks[gw] = taskID
	u.mu.Unlock()
	u.hub.Changed("sessions")
}

func (u *uiLive) dropped(gw *mcpserver.Gateway) {
	if u == nil {
		return
	}
	u.mu.Lock()
	delete(u.tasks, gw)
	u.mu.Unlock()
	u.hub.Changed("sessions")
}

// changed tells the browsers the upstream servers or tool sets changed.
func (u *uiLive) changed() {
	if u != nil {
		u.hub.Changed("servers")
	}
}

func (u *uiLive) gates() discovery.Gates {
	d := u.g.r.cfg.Discovery
	return discovery.Gates{PerServer: d.PerServer, Total: d.Total}
}

// sessions lists the live MCP sessions with their tool sets: listed now,
// deferred, and activated by tool_search.
func (u *uiLive) sessions() []web.Session {
	if u.g == nil {
		return nil
	}
	u.g.mu.Lock()
	all := slices.Clone(u.g.all)
	u.g.mu.Unlock()
	var out []web.Session
	for _, gw := range all {
		u.mu.Lock()
		task := u.tasks[gw]
		u.mu.Unlock()
		s := web.Session{TaskID: task}
		listed := map[string]bool{}
		for _, t := range gw.Tools() {
			s.Active = append(s.Active, t.Name())
			listed[t.Name()] = true
		}
		for _, d := range discovery.Decide(discovery.EntriesOf(gw.Set()), u.gates()) {
			if d.Exposure == discovery.Deferred {
				if listed[d.Tool] {
					s.Activated = append(s.Activated, d.Tool)
				} else {
					s.Deferred = append(s.Deferred, d.Tool)
				}
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b web.Session) int { return cmpString(a.TaskID, b.TaskID) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// servers lists the upstream MCP servers with their state and the count
// gate's decision for their tools.
func (u *uiLive) servers() []web.Upstream {
	if u.g == nil || u.g.r.mcp == nil {
		return nil
	}
	m := u.g.r.mcp
	tools := m.Tools()
	var entries []discovery.Entry
	for name, ts := range tools {
		for _, t := range ts {
			entries = append(entries, discovery.Entry{Tool: t, Server: name})
		}
	}
	gate := map[string]string{}
	for _, d := range discovery.Decide(entries, u.gates()) {
		if _, seen := gate[d.Server]; !seen {
			gate[d.Server] = string(d.Exposure) + " (" + d.Gate + ")"
		}
	}
	var out []web.Upstream
	for _, st := range m.Servers() {
		g := gate[st.Name]
		if g == "" && st.State != mcpclient.StateConnected {
			g = "no tools while " + string(st.State)
		}
		out = append(out, web.Upstream{Name: st.Name, State: string(st.State), Error: st.Error, Tools: len(tools[st.Name]), Gate: g})
	}
	return out
}

// exclusions are the tools left out of the effective set, with reasons.
func (u *uiLive) exclusions() []capability.Exclusion {
	if u.g == nil {
		return nil
	}
	u.g.mu.Lock()
	defer u.g.mu.Unlock()
	return slices.Clone(u.g.r.exclusions)
}

// handler is /ui/ of aibuddy mcp --http: the same token check as /mcp.
func (u *uiLive) handler(o httpOptions, st *web.Options) http.Handler {
	st.Verify = verifierOf(o.Verify)
	st.Hub, st.Broker, st.Settings, st.Logger = u.hub, u.broker, u.settings, o.Logger
	return web.New(st)
}

// verifierOf adapts the MCP endpoint's token check to the login form.
func verifierOf(v auth.TokenVerifier) web.Verifier {
	if v == nil {
		return nil
	}
	return func(ctx context.Context, token string, req *http.Request) error {
		_, err := v(ctx, token, req)
		return err
	}
}

// newUI is `aibuddy ui`: the web view's records pages over the data
// folder's call records, in any process (no MCP session, nothing live).
func newUI(o *Options) *cobra.Command {
	var c common
	var addr string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web view of the call records (tasks, failures by stage, calls and their projections)",
		Long: `Serve the web view's records pages at http://ADDR/ui/ over the data folder's
call records (records.db): tasks with their failures by stage, one task's calls,
one call's client, model and record projections side by side with the
compaction saving, and search by tool and stage. Nothing is served live: the
live page, approvals and stop are on aibuddy mcp --http's /ui/.

The pages need the same bearer token as aibuddy mcp --http ($AIBUDDY_TOKEN, else
the data folder's http-token file; aibuddy mcp --print-token prints it),
entered once at /ui/login.`,
		Example: `  aibuddy ui
  aibuddy ui --http 127.0.0.1:9000 --data-dir ~/.cache/aibuddy`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, dir, err := c.loadConfig()
			if err != nil {
				return err
			}
			if cfg == nil {
				cfg = &config.Config{}
			}
			data := dataDir(c.dataDir, cfg.DataDir, dir)
			token, from, err := httpToken(data, os.Getenv)
			if err != nil {
				return usageErr("%v", err)
			}
			st, err := sqlitestore.Open(filepath.Join(data, "records.db"), StoreOptions(cfg))
			if err != nil {
				return usageErr("opening the call records: %v (set --data-dir to the data folder of the runs to look at)", err)
			}
			defer st.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usageErr("listen on %s: %v", addr, err)
			}
			if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
				fmt.Fprintf(cmd.ErrOrStderr(), "aibuddy: WARNING: %s is not a loopback address: the token and the records travel unencrypted over plain HTTP. Bind 127.0.0.1 unless a TLS proxy in front terminates the connection.\n", ln.Addr())
			}
			check := staticToken(token)
			mux := http.NewServeMux()
			mux.Handle(web.Prefix+"/", web.New(&web.Options{Verify: verifierOf(check), Store: st, Settings: cfg.Web, DataDir: data}))
			mux.Handle(web.Prefix, http.RedirectHandler(web.Prefix+"/", http.StatusSeeOther))
			var m config.MCP
			var ho httpOptions
			httpSettings(m, &ho)
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: ho.HeaderTimeout}
			fmt.Fprintf(cmd.ErrOrStderr(), "aibuddy: serving the web view of %s at http://%s/ui/ (log in with the token of %s)\n",
				filepath.Join(data, "records.db"), ln.Addr(), from)
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return &exitError{code: ExitFailure, err: err}
			case <-cmd.Context().Done():
				shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shutdown)
				return nil
			}
		},
	}
	cmd.Flags().StringVarP(&c.config, "config", "c", "", "settings file (JSON; default: $AIBUDDY_CONFIG when set)")
	cmd.Flags().StringVar(&c.dataDir, "data-dir", "", "the data folder whose call records to show (default: settings' dataDir, $AIBUDDY_DATA_DIR, else the user cache folder + /aibuddy)")
	cmd.Flags().StringVar(&addr, "http", DefaultUIAddr, "serve the pages on ADDR (host:port)")
	return cmd
}
