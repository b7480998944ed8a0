package mcpclient

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/tool"
)

// Options configures Connect and Start. A nil *Options means the defaults.
type Options struct {
	// InitTimeout bounds each server's start: process start or HTTP
	// connect, initialize, and the first tools/list. It also bounds every
	// later tools/list refresh. Default 30 s (BH-041).
	InitTimeout time.Duration
	// CallTimeout bounds each tools/call while the server is silent about
	// it: every progress notification for the call (a heartbeat) starts
	// the bound again. 0 means [DefaultCallTimeout] (10 min, what hosts
	// use); a negative value means only the caller's ctx (setting
	// mcp.callTimeout).
	CallTimeout time.Duration
	// RestartBackoff is the wait before the second and later attempts to
	// restore a lost connection (a stdio server respawned, an HTTP session
	// opened again); it doubles with each attempt up to
	// RestartBackoffMax. The first attempt runs at once. Defaults 250 ms
	// and 30 s.
	RestartBackoff, RestartBackoffMax time.Duration
	// MaxRestarts bounds the restorations of one server within
	// RestartWindow, and the attempts of one restoration; past it the
	// server is failed with the reason. 0 means 5; a negative value means
	// a lost connection is never restored (the server is disconnected and
	// its tools removed). RestartWindow defaults to 10 min.
	MaxRestarts   int
	RestartWindow time.Duration
	// StderrTailBytes is how much of each stdio server's stderr is kept
	// (the newest bytes) for diagnostics. Default 8 KiB (BH-042).
	StderrTailBytes int
	// ListChangedDebounce is how long the client waits for a burst of
	// notifications/tools/list_changed to go quiet before re-fetching
	// tools/list once (at most 10 times this after the first). Default
	// 200 ms (BH-043).
	ListChangedDebounce time.Duration
	// ShutdownTimeout is how long Close waits for a stdio server to exit
	// after its stdin is closed before SIGTERM (then 1 s before SIGKILL).
	// Default 2 s.
	ShutdownTimeout time.Duration
	// Logger receives connection events and warnings (quarantined tools at
	// Warn, never only at Debug). Default: discard.
	Logger *slog.Logger
	// ClientName and ClientVersion identify us in initialize. Defaults
	// "aibuddy" and "dev".
	ClientName, ClientVersion string
	// InheritEnv names the host environment variables a stdio server
	// inherits; its "env" entries are added on top. nil means
	// [DefaultInheritEnv]. A server never sees the host's other variables
	// (API keys, tokens), as with the TypeScript SDK's default environment.
	InheritEnv []string
	// NotificationsPerSecond bounds the notifications (message, progress,
	// list_changed, ...) handled from one server: a token bucket of this
	// many per second, as many in a burst. The excess is dropped and
	// counted (ServerStatus.NotificationsDropped); a dropped list_changed
	// still leads to one debounced refresh. Default 100.
	NotificationsPerSecond int
	// NotificationLogInterval is the least time between two log lines
	// about dropped notifications of one server. Default 10 s.
	NotificationLogInterval time.Duration
	// MaxSchemaDepth bounds the nesting of one tool's input schema, in
	// levels of JSON objects and arrays (the top-level object is level 1);
	// a deeper schema is quarantined at intake with the reason. Default
	// tool.DefaultMaxSchemaDepth (128).
	MaxSchemaDepth int
	// CompileSchemas compiles every tool's input schema at intake, so that
	// a schema the compiler rejects is quarantined at once (what
	// `aibuddy tools` shows). By default intake checks schemas
	// structurally (tool.CheckSchema) and each tool compiles its schema
	// when it is first activated or called: with thousands of tools,
	// compiling them all held start-up for seconds (issue 10).
	CompileSchemas bool
	// HTTPClient is used for http and sse servers; its Transport is wrapped
	// to add each server's configured headers. Default: a client with its
	// own transport, whose idle connections Close closes.
	HTTPClient *http.Client
	// Confine resolves a stdio server's operating-system confinement (its
	// "sandbox" entry, or the run's default for servers): a nil policy, or
	// mode off, starts the server as is. An error, or a policy the
	// machine cannot enforce, fails the server with the reason: it is
	// never started with a weaker confinement. nil means no server is
	// confined.
	Confine func(sc ServerConfig) (*confine.Policy, error)
	// ConfineDriver runs confined servers; nil means confine.NewDriver(nil).
	ConfineDriver *confine.Driver
	// Elicit, when set, answers the servers' requests for the user's
	// input (form elicitation, inside a tools/call reply or as
	// elicitation/create; mrtr.go); only then is elicitation advertised.
	Elicit Elicitor
	// MaxInputRounds bounds the input-required replies of one tools/call
	// (mcp.maxInputRounds). Default DefaultMaxInputRounds (4).
	MaxInputRounds int
	// ProtocolVersion is the newest MCP protocol version offered
	// (mcp.protocolVersion); the server may settle on an older one.
	// Default "": the newest of ProtocolVersions.
	ProtocolVersion string
	// MaxFrameBytes bounds one inbound message from a server (bytes: a
	// stdio line, an HTTP body or event). A response over it fails its
	// call only, with an error naming the size; other bad frames are
	// dropped and logged (frame.go). Default [DefaultMaxFrameBytes]
	// (16 MiB, setting mcp.upstreamMaxFrameBytes).
	MaxFrameBytes int
	// OAuth authorizes http servers with OAuth 2.1 (oauth.go); nil means
	// no OAuth: a 401 fails the server.
	OAuth *OAuthOptions
}

// DefaultInheritEnv is what a stdio server inherits from the host by
// default: the TypeScript SDK's getDefaultEnvironment set (HOME, LOGNAME,
// PATH, SHELL, TERM, USER) plus locale, temporary folder, XDG folders,
// proxy and CA certificate settings, which servers need to run and reach
// the network.
var DefaultInheritEnv = []string{
	"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER",
	"LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.InitTimeout <= 0 {
		v.InitTimeout = 30 * time.Second
	}
	if v.CallTimeout == 0 {
		v.CallTimeout = DefaultCallTimeout
	}
	if v.RestartBackoff <= 0 {
		v.RestartBackoff = 250 * time.Millisecond
	}
	if v.RestartBackoffMax <= 0 {
		v.RestartBackoffMax = 30 * time.Second
	}
	if v.MaxRestarts == 0 {
		v.MaxRestarts = 5
	}
	if v.RestartWindow <= 0 {
		v.RestartWindow = 10 * time.Minute
	}
	if v.MaxFrameBytes <= 0 {
		v.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if v.StderrTailBytes <= 0 {
		v.StderrTailBytes = 8 << 10
	}
	if v.ListChangedDebounce <= 0 {
		v.ListChangedDebounce = 200 * time.Millisecond
	}
	if v.ShutdownTimeout <= 0 {
		v.ShutdownTimeout = 2 * time.Second
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	if v.ClientName == "" {
		v.ClientName = "aibuddy"
	}
	if v.ClientVersion == "" {
		v.ClientVersion = "dev"
	}
	return v
}

// DefaultCallTimeout is Options.CallTimeout when unset: how long one
// tools/call may go without an answer or a progress notification.
const DefaultCallTimeout = 10 * time.Minute

// State is a server's connection state.
type State string

// Usable reports whether the server's tools are registered: connected, or
// reconnecting (its tools stay while the connection is restored).
func (s State) Usable() bool { return s == StateConnected || s == StateReconnecting }

// Server states.
const (
	StateConnecting   State = "connecting"   // Start has begun the handshake
	StateConnected    State = "connected"    // initialized and its tools listed
	StateReconnecting State = "reconnecting" // lost; being restored (Error says why), its tools still registered
	StateFailed       State = "failed"       // never became usable; Error says why
	StateDisconnected State = "disconnected" // was connected, then lost or closed; Error says why
	StateDisabled     State = "disabled"     // "disabled": true in the configuration
)

// ServerStatus is one server as Servers reports it.
type ServerStatus struct {
	Name  string
	Type  string // "stdio", "http" or "sse"
	State State
	// Error is why a server failed or disconnected, with the tail of its
	// stderr for stdio servers, e.g. "exited with status 3: cannot open db"
	// or "initialize timed out after 2s".
	Error string
	// ToolsOffered is how many tools the server's tools/list returned;
	// ToolsLoaded how many are usable (BH-033: "2 of 3 tools loaded").
	ToolsOffered, ToolsLoaded int
	Quarantined               []Quarantine
	Repairs                   []Repair
	// StderrTail is the last Options.StderrTailBytes of a stdio server's
	// stderr.
	StderrTail string
	// Notifications is how many notifications the server sent;
	// NotificationsDropped how many of them were over
	// Options.NotificationsPerSecond and dropped unhandled.
	Notifications, NotificationsDropped int64
	// Elapsed is the time from the start of the connection to connected
	// or failed.
	Elapsed time.Duration
	// ServerInfo is "name version" from the server's initialize result.
	ServerInfo string
	// Protocol is the negotiated MCP protocol version ("2026-07-28").
	Protocol string
}

// Summary is a one-line status, e.g. "connected: 2 of 3 tools loaded, 1
// quarantined" or "failed: exited with status 3: cannot open db".
func (s ServerStatus) Summary() string {
	switch s.State {
	case StateConnected:
		sum := fmt.Sprintf("connected: %d of %d tools loaded", s.ToolsLoaded, s.ToolsOffered)
		if n := len(s.Quarantined); n > 0 {
			sum += fmt.Sprintf(", %d quarantined", n)
		}
		if n := len(s.Repairs); n > 0 {
			sum += fmt.Sprintf(", %d schema repairs", n)
		}
		if s.NotificationsDropped > 0 {
			sum += fmt.Sprintf(", %d of %d notifications dropped (over mcp.notificationsPerSecond)", s.NotificationsDropped, s.Notifications)
		}
		return sum
	case StateFailed, StateDisconnected, StateReconnecting:
		return string(s.State) + ": " + s.Error
	}
	return string(s.State)
}

// Manager holds the connections to a set of MCP servers. It is safe for
// concurrent use.
type Manager struct {
	opts  Options
	conns []*conn // sorted by name
	ready chan struct{}
	life  context.Context // cancelled by Close
	stop  context.CancelFunc
	wg    sync.WaitGroup
	http  *http.Transport // our own, when Options.HTTPClient is nil

	mu     sync.Mutex
	closed bool
	driver *confine.Driver  // confined servers' driver when Options gives none
	routes map[string]route // provider-facing name -> tool
	subs   map[int]func()
	nextID int

	notifyMu sync.Mutex // serializes subscriber calls

	pt ptSubs // resource subscriptions (passthru.go)
}

type route struct {
	c    *conn
	orig string
}

// conn is one configured server.
type conn struct {
	m   *Manager
	cfg ServerConfig

	kick chan struct{} // list_changed signals, capacity 1
	done chan struct{} // closed by Close

	progressMu sync.Mutex
	progress   map[string]progressSink
	nextToken  atomic.Int64

	excludedMu sync.Mutex
	excluded   []Quarantine // tools the SDK dropped from tools/list

	notes *notes // the notification bound

	inflight inflightSet // calls in flight, for elicitation/create (mrtr.go)
	pt       ptState     // resources, templates, prompts (passthru.go)

	// Guarded by m.mu.
	state       State
	err         string
	elapsed     time.Duration
	info        string
	session     *mcp.ClientSession
	proc        *proc
	offered     int
	cands       []candidate
	quarantined []Quarantine // from intake
	collided    []Quarantine // from naming
	repairs     []Repair
	tools       []*tool.Tool
	defined     map[string]definedTool // name -> tool, reused while unchanged
	live        map[string]bool        // original names currently loaded
	gone        map[string]string      // provider-facing name -> original, once loaded and no longer offered
	closing     bool
	sup         supervision // the restoration of a lost connection (supervise.go)
	refreshing  bool        // the refresher runs (started by the first install)
	sseFallback atomic.Bool // a guessed-type server answered POST with 405: it speaks legacy SSE (cached)
}

// progressSink is where a running call's progress notifications go: its
// event sink, and the heartbeat that restarts its CallTimeout.
type progressSink struct {
	call *tool.Call
	beat func()
}

type definedTool struct {
	cand candidate
	t    *tool.Tool
}

// Connect starts every enabled server in parallel and returns when each
// has connected or failed; a hung server holds it at most
// Options.InitTimeout (plus about a second to kill it). It never fails as a
// whole: per-server outcomes are in Servers. ctx bounds the start only; the
// connections live until Close.
func Connect(ctx context.Context, servers []ServerConfig, opts *Options) *Manager {
	m := Start(ctx, servers, opts)
	_ = m.Wait(ctx)
	return m
}

// Start is Connect without the wait: it begins connecting every enabled
// server in parallel and returns at once. Servers appear in Tools as they
// connect, and subscribers are notified each time one connects or fails.
// Use Wait to block until every server has connected or failed.
func Start(ctx context.Context, servers []ServerConfig, opts *Options) *Manager {
	o := opts.withDefaults()
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	m := &Manager{
		opts:   o,
		ready:  make(chan struct{}),
		life:   life,
		stop:   stop,
		routes: map[string]route{},
		subs:   map[int]func(){},
	}
	if o.HTTPClient == nil {
		m.http = http.DefaultTransport.(*http.Transport).Clone()
		m.opts.HTTPClient = &http.Client{Transport: m.http}
	}
	sorted := append([]ServerConfig(nil), servers...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var pending sync.WaitGroup
	for _, sc := range sorted {
		c := &conn{m: m, cfg: sc, kick: make(chan struct{}, 1), done: make(chan struct{}),
			progress: map[string]progressSink{}, state: StateConnecting,
			live: map[string]bool{}, gone: map[string]string{}, defined: map[string]definedTool{}}
		c.notes = newNotes(sc.Name, o.NotificationsPerSecond, o.NotificationLogInterval, o.Logger, c.signal)
		if sc.Disabled {
			c.state = StateDisabled
		}
		m.conns = append(m.conns, c)
	}
	// Every conn is in m.conns before the first connects: a connect walks
	// m.conns (rebuildLocked), so appending after starting one was a race.
	for _, c := range m.conns {
		if c.state == StateDisabled {
			continue
		}
		pending.Add(1)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer pending.Done()
			c.connect(ctx)
		}()
	}
	go func() {
		pending.Wait()
		close(m.ready)
	}()
	return m
}

// Wait blocks until every server has connected or failed, or ctx is done
// (then it returns ctx.Err()).
func (m *Manager) Wait(ctx context.Context) error {
	select {
	case <-m.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Servers reports every configured server, sorted by name.
func (m *Manager) Servers() []ServerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ServerStatus, 0, len(m.conns))
	for _, c := range m.conns {
		late := c.unusableLocked()
		s := ServerStatus{
			Name: c.cfg.Name, Type: c.transportType(), State: c.state, Error: c.err,
			ToolsOffered: c.offered, ToolsLoaded: len(c.tools) - len(late),
			Quarantined: append(append(append([]Quarantine(nil), c.quarantined...), c.collided...), late...),
			Repairs:     append([]Repair(nil), c.repairs...),
			Elapsed:     c.elapsed, ServerInfo: c.info, Protocol: protocolOf(c.session),
			Notifications: c.notes.received.Load(), NotificationsDropped: c.notes.dropped.Load(),
		}
		if c.proc != nil {
			s.StderrTail = c.proc.errTail.String()
		}
		out = append(out, s)
	}
	return out
}

// Tools returns the usable tools of every connected server, keyed by server
// name, each defined through tool.Define under its provider-facing name.
// The slices are fresh copies; the tools are shared and immutable.
func (m *Manager) Tools() map[string][]*tool.Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]*tool.Tool{}
	for _, c := range m.conns {
		if !c.state.Usable() {
			continue
		}
		ts := make([]*tool.Tool, 0, len(c.tools))
		for _, t := range c.tools {
			if _, err := t.Compiled(); err == nil {
				ts = append(ts, t)
			}
		}
		out[c.cfg.Name] = ts
	}
	return out
}

// transportType is the transport the server is reached by: its
// configured type, or "sse" once a guessed-type server fell back.
func (c *conn) transportType() string {
	if c.sseFallback.Load() {
		return TypeSSE
	}
	return c.cfg.Type
}

// unusableLocked lists the loaded tools whose schema failed to compile at
// their first activation or call, as quarantines. m.mu must be held.
func (c *conn) unusableLocked() []Quarantine {
	var out []Quarantine
	for _, t := range c.tools {
		if _, err := t.Compiled(); err != nil {
			orig := c.defined[t.Name()].cand.orig
			var de *tool.DefinitionError
			msg := err.Error()
			if errors.As(err, &de) {
				msg = de.Keyword + ": " + de.Msg
				if strings.Contains(de.Msg, de.Keyword) {
					msg = de.Msg
				}
			}
			out = append(out, Quarantine{Tool: orig, Err: err,
				Reason: fmt.Sprintf("server %q tool %q: input schema rejected when the tool was first used: %s", c.cfg.Name, orig, msg)})
		}
	}
	return out
}

// Route maps a provider-facing name back to the server and the original
// MCP tool name (the reverse of Name).
func (m *Manager) Route(name string) (Origin, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.routes[name]
	if !ok {
		return Origin{}, false
	}
	return Origin{Server: r.c.cfg.Name, Tool: r.orig}, true
}

// Name is the provider-facing name of a loaded tool (the forward map of
// Route).
func (m *Manager) Name(server, original string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, r := range m.routes {
		if r.c.cfg.Name == server && r.orig == original {
			return name, true
		}
	}
	return "", false
}

// Call runs call against the tool named call.Name, routing by name. It
// never returns nil. A loaded tool runs as tool.Tool.Call does. A name in the
// namespace of a server that is not connected is an Execution-stage error
// at once (BH-041); a tool the server no longer offers is a Discovery-stage
// error "tool no longer offered by server <name>" (BH-043); any other
// unknown name is a Discovery-stage error.
func (m *Manager) Call(ctx context.Context, call *tool.Call) *tool.Result {
	m.mu.Lock()
	r, ok := m.routes[call.Name]
	var t *tool.Tool
	if ok {
		for _, tt := range r.c.tools {
			if tt.Name() == call.Name {
				t = tt
			}
		}
	}
	var owner *conn
	var goneOrig string
	if t == nil {
		for _, c := range m.conns {
			if o, gone := c.gone[call.Name]; gone {
				owner, goneOrig = c, o
				break
			}
		}
		if owner == nil {
			for _, c := range m.conns {
				if strings.HasPrefix(call.Name, sanitize(c.cfg.Name)+Separator) {
					owner = c
				}
			}
		}
	}
	var state State
	var reason string
	if owner != nil {
		state, reason = owner.state, owner.err
	}
	m.mu.Unlock()
	if t != nil {
		return t.Call(ctx, call)
	}
	switch {
	case owner != nil && !state.Usable():
		return tool.ErrorResult(owner.unavailable(state, reason), call.Name)
	case owner != nil && goneOrig != "":
		return tool.ErrorResult(owner.noLongerOffered(goneOrig), call.Name)
	case owner != nil:
		return tool.ErrorResult(tool.Errorf(tool.Discovery, "server %s offers no tool named %s", owner.cfg.Name, call.Name).
			WithHint("use tool_search to find the server's tools"), call.Name)
	}
	return tool.ErrorResult(tool.Errorf(tool.Discovery, "no MCP tool is named %s", call.Name).
		WithHint("use tool_search to find a tool"), call.Name)
}

// Subscribe registers fn, called after the tool set changed: a server
// connected or failed during Start, a list_changed refresh, or a
// disconnect. Calls are serialized and come from the Manager's goroutines;
// fn must not block for long and must not call Subscribe's cancel of
// another subscription while running. cancel is idempotent.
func (m *Manager) Subscribe(fn func()) (cancel func()) {
	m.mu.Lock()
	id := m.nextID
	m.nextID++
	m.subs[id] = fn
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

func (m *Manager) notify() {
	m.notifyMu.Lock()
	defer m.notifyMu.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	ids := make([]int, 0, len(m.subs))
	for id := range m.subs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	fns := make([]func(), 0, len(ids))
	for _, id := range ids {
		fns = append(fns, m.subs[id])
	}
	m.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Close closes every connection: stdio servers get their stdin closed,
// then SIGTERM and SIGKILL to their process group, each step bounded;
// HTTP sessions are closed. Connections still starting are abandoned.
// It waits for every goroutine the Manager started and is idempotent. The
// error is nil unless a connection could not be closed cleanly.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for _, c := range m.conns {
		c.closing = true
	}
	m.mu.Unlock()
	m.stop()
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	for _, c := range m.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.close(); err != nil {
				emu.Lock()
				errs = append(errs, fmt.Errorf("server %q: %w", c.cfg.Name, err))
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	m.wg.Wait()
	<-m.ready
	if m.http != nil {
		m.http.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

// rebuildLocked assigns provider-facing names across all connected servers
// and (re)defines their tools. m.mu must be held.
func (m *Manager) rebuildLocked() {
	var origins []Origin
	for _, c := range m.conns {
		if !c.state.Usable() {
			continue
		}
		for _, cd := range c.cands {
			origins = append(origins, Origin{c.cfg.Name, cd.orig})
		}
	}
	names, collisions := assignNames(origins)
	routes := map[string]route{}
	for _, c := range m.conns {
		old := map[string]string{} // name -> orig before
		for _, t := range c.tools {
			if r, ok := m.routes[t.Name()]; ok && r.c == c {
				old[t.Name()] = r.orig
			}
		}
		c.tools, c.collided = nil, nil
		c.live = map[string]bool{}
		if !c.state.Usable() {
			continue
		}
		defined := map[string]definedTool{}
		for _, cd := range c.cands {
			o := Origin{c.cfg.Name, cd.orig}
			if ce, bad := collisions[o]; bad {
				q := Quarantine{Tool: cd.orig, Reason: fmt.Sprintf("server %q tool %q: %v", c.cfg.Name, cd.orig, ce), Err: ce}
				c.collided = append(c.collided, q)
				m.opts.Logger.Warn("mcp tool quarantined", "server", c.cfg.Name, "tool", cd.orig, "reason", q.Reason)
				continue
			}
			name := names[o]
			if d, ok := c.defined[name]; ok && sameCandidate(d.cand, cd) {
				defined[name] = d
			} else {
				t, err := tool.Define(tool.Spec{Name: name, Description: cd.description, InputSchema: cd.schema,
					Annotations: cd.annotations, Handler: c.handler(cd.orig), CompileOnUse: true})
				if err != nil { // the schema passed tool.Compile in intake; only the unexpected lands here
					c.collided = append(c.collided, Quarantine{Tool: cd.orig,
						Reason: fmt.Sprintf("server %q tool %q: %v", c.cfg.Name, cd.orig, err), Err: err})
					continue
				}
				defined[name] = definedTool{cand: cd, t: t}
			}
			c.tools = append(c.tools, defined[name].t)
			c.live[cd.orig] = true
			routes[name] = route{c: c, orig: cd.orig}
			delete(c.gone, name)
		}
		c.defined = defined
		for name, orig := range old {
			if r, still := routes[name]; !still || r.c != c {
				c.gone[name] = orig
			}
		}
		sort.Slice(c.tools, func(i, j int) bool { return c.tools[i].Name() < c.tools[j].Name() })
	}
	m.routes = routes
}

func sameCandidate(a, b candidate) bool {
	return a.orig == b.orig && a.description == b.description && bytes.Equal(a.schema, b.schema) &&
		reflect.DeepEqual(a.annotations, b.annotations)
}

// connect runs one server's start: transport, handshake, first tools/list.
func (c *conn) connect(ctx context.Context) {
	m := c.m
	start := time.Now()
	initCtx, cancel := context.WithTimeout(ctx, m.opts.InitTimeout)
	defer cancel()
	stopOnClose := context.AfterFunc(m.life, cancel)
	defer stopOnClose()

	d, reason := c.dial(initCtx)
	if d == nil {
		m.mu.Lock()
		c.state, c.err, c.elapsed = StateFailed, reason, time.Since(start)
		m.mu.Unlock()
		m.opts.Logger.Warn("mcp server failed", "server", c.cfg.Name, "error", reason)
		m.notify()
		return
	}
	if !c.install(d, start) {
		return
	}
	m.notify()
}

// dialed is one open connection: its session, its process (stdio), and
// the first tools/list.
type dialed struct {
	sess *mcp.ClientSession
	p    *proc
	list []*mcp.Tool
	info string
}

// dial opens one connection to the server, bounded by initCtx: process
// start or HTTP connect, initialize, and the first tools/list. It returns
// nil and the reason Servers shows when any step fails, with the process
// (if any) shut down.
func (c *conn) dial(initCtx context.Context) (*dialed, string) {
	m := c.m
	var transport mcp.Transport
	var p *proc
	switch c.cfg.Type {
	case TypeStdio:
		var err error
		p, err = startProc(c.cfg, m.opts.InheritEnv, m.opts.StderrTailBytes, m.opts.ShutdownTimeout, m.confinement(c.cfg))
		if err != nil {
			return nil, err.Error()
		}
		maxDepth := m.opts.MaxSchemaDepth
		if maxDepth <= 0 {
			maxDepth = tool.DefaultMaxSchemaDepth
		}
		p.filter = func(line []byte) []byte {
			if line = c.notes.line(line); line == nil {
				return nil
			}
			// Before the handshake a line that is not JSON fails the start at
			// once (a server logging to stdout); after it, it is dropped.
			return c.frame(defuse(line, maxDepth, c.exclude), p.initialized.Load())
		}
		m.mu.Lock()
		c.proc = p
		m.mu.Unlock()
		transport = p.transport(m.opts.MaxFrameBytes + 64<<10)
	case TypeHTTP, TypeSSE:
		transport = c.httpTransport(initCtx)
	default:
		return nil, fmt.Sprintf("unknown transport type %q", c.cfg.Type)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: m.opts.ClientName, Version: m.opts.ClientVersion},
		c.clientOptions(&mcp.ClientOptions{
			Logger:                      slog.New(&captureHandler{c: c, inner: m.opts.Logger.Handler()}),
			Capabilities:                &mcp.ClientCapabilities{}, // no roots: a server uses its own configuration
			ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { c.signal() },
			ProgressNotificationHandler: c.onProgress,
			LoggingMessageHandler:       c.onLog,
			// Pass-through (passthru.go).
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.passthruChanged() },
			PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { c.passthruChanged() },
			ResourceUpdatedHandler:     c.passthruUpdated,
		}))
	client.AddReceivingMiddleware(c.ackMiddleware) // subscription acknowledgements (subscribeack.go)
	sess, err := c.handshake(initCtx, client, transport)
	if err != nil && c.fallBackToSSE(err) {
		// BH-067 (e): only a POST answered 405, on an entry without a
		// pinned type; both errors are reported if SSE fails too.
		first := c.describeFailure("initialize", err, initCtx)
		c.sseFallback.Store(true)
		c.m.opts.Logger.Info("mcp server refused POST (405); trying legacy SSE", "server", c.cfg.Name)
		sess, err = c.handshake(initCtx, client, c.httpTransport(initCtx))
		if err != nil {
			c.sseFallback.Store(false)
			return nil, "streamable HTTP: " + first + "; then legacy SSE: " + c.describeFailure("initialize", err, initCtx)
		}
	}
	if err != nil {
		if p != nil {
			p.shutdown()
		}
		return nil, c.describeFailure("initialize", err, initCtx)
	}
	d := &dialed{sess: sess, p: p}
	ir := sess.InitializeResult()
	if ir != nil && ir.ServerInfo != nil {
		d.info = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	if ir == nil || ir.Capabilities == nil || ir.Capabilities.Tools != nil {
		d.list, err = c.listTools(initCtx, sess)
		if err != nil {
			_ = sess.Close()
			if p != nil {
				p.shutdown()
			}
			return nil, c.describeFailure("tools/list", err, initCtx)
		}
	}
	c.passthruList(initCtx, sess) // resources, templates, prompts (passthru.go)
	if p != nil {
		p.initialized.Store(true)
	}
	return d, ""
}

// install makes d the server's connection: state connected, its tools
// listed and routed, and a watch on it. It returns false (and closes d)
// when the Manager closed meanwhile.
func (c *conn) install(d *dialed, start time.Time) bool {
	m := c.m
	m.mu.Lock()
	if m.closed || c.closing {
		m.mu.Unlock()
		_ = d.sess.Close()
		if d.p != nil {
			d.p.shutdown()
		}
		return false
	}
	c.session, c.proc, c.info, c.elapsed = d.sess, d.p, d.info, time.Since(start)
	c.state, c.err = StateConnected, ""
	c.applyListLocked(d.list)
	m.rebuildLocked()
	loaded, offered := len(c.tools), c.offered
	m.wg.Add(1) // under m.mu with closing false: before Close waits
	go func() { defer m.wg.Done(); c.watch(d.sess, d.p) }()
	if !c.refreshing {
		c.refreshing = true
		m.wg.Add(1)
		go func() { defer m.wg.Done(); c.refresher() }()
	}
	m.mu.Unlock()
	m.opts.Logger.Info("mcp server connected", "server", c.cfg.Name, "tools_loaded", loaded, "tools_offered", offered)
	return true
}

// listTools fetches every page of tools/list and adds the tools the SDK
// itself refused (it drops tools with invalid x-mcp-header annotations) to
// the list of quarantines, so nothing disappears silently.
func (c *conn) listTools(ctx context.Context, sess *mcp.ClientSession) ([]*mcp.Tool, error) {
	c.excludedMu.Lock()
	c.excluded = nil
	c.excludedMu.Unlock()
	var list []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if !c.cfg.Wants(t.Name) {
			continue // the user's includeTools/excludeTools
		}
		list = append(list, t)
	}
	return list, nil
}

// exclude records a tool taken out of tools/list before the SDK read it
// (defuse), as a quarantine.
func (c *conn) exclude(name, reason string) {
	c.excludedMu.Lock()
	c.excluded = append(c.excluded, Quarantine{Tool: name, Reason: fmt.Sprintf("server %q tool %q: %s", c.cfg.Name, name, reason)})
	c.excludedMu.Unlock()
}

// applyListLocked runs intake over a fresh tools/list. m.mu must be held.
func (c *conn) applyListLocked(list []*mcp.Tool) {
	cands, repairs, quar := intake(c.cfg.Name, list, intakeOptions{
		check:   &tool.CheckOptions{MaxDepth: c.m.opts.MaxSchemaDepth},
		compile: c.m.opts.CompileSchemas,
	})
	c.excludedMu.Lock()
	quar = append(quar, c.excluded...)
	c.excludedMu.Unlock()
	c.offered = len(list) + len(c.excluded)
	c.cands, c.repairs, c.quarantined = cands, repairs, quar
	for _, q := range quar {
		c.m.opts.Logger.Warn("mcp tool quarantined", "server", c.cfg.Name, "tool", q.Tool, "reason", q.Reason)
	}
	for _, r := range repairs {
		c.m.opts.Logger.Info("mcp tool schema repaired", "server", c.cfg.Name, "tool", r.Tool, "repair", r.What)
	}
}

// describeFailure turns a start failure into the reason Servers shows.
func (c *conn) describeFailure(step string, err error, initCtx context.Context) string {
	c.m.mu.Lock()
	p := c.proc
	c.m.mu.Unlock()
	var reason string
	exited := false
	switch {
	case c.m.life.Err() != nil:
		reason = "closed before " + step + " completed"
	case errors.Is(initCtx.Err(), context.DeadlineExceeded):
		reason = fmt.Sprintf("%s timed out after %s", step, c.m.opts.InitTimeout)
	case p != nil && p.hasExited(300*time.Millisecond) && p.selfExit():
		reason, exited = p.exitReason()+" during "+step, true
	default:
		reason = step + " failed: " + err.Error()
	}
	if p != nil {
		if g := p.garbage(); g != "" {
			reason += fmt.Sprintf("; stdout is not JSON-RPC: %q", g)
		}
		if tail := p.stderrLines(); tail != "" && exited {
			reason += ": " + tail // "exited with status 3 during initialize: cannot open db"
		} else if tail != "" {
			reason += "; stderr: " + tail
		}
	}
	return reason
}

// watch waits for the session to end and, unless we closed it, hands
// the loss to the supervision (supervise.go): the connection is restored,
// or the server is marked disconnected or failed and its tools removed.
func (c *conn) watch(sess *mcp.ClientSession, p *proc) {
	werr := sess.Wait()
	m := c.m
	m.mu.Lock()
	if c.closing || c.session != sess {
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	var reason string
	switch {
	case p != nil && p.hasExited(500*time.Millisecond) && p.selfExit():
		reason = p.exitReason()
		if tail := p.stderrLines(); tail != "" {
			reason += ": " + tail
		}
	case werr != nil:
		reason = "connection lost: " + werr.Error()
	default:
		reason = "connection closed by the server"
	}
	_ = sess.Close()
	if p != nil {
		p.shutdown()
	}
	c.lost(sess, reason)
}

// signal records a list_changed notification; the refresher debounces.
func (c *conn) signal() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// refresher re-fetches tools/list once per burst of list_changed
// notifications: it waits until none has arrived for ListChangedDebounce
// (at most 10 times that after the first), then lists (BH-043).
func (c *conn) refresher() {
	d := c.m.opts.ListChangedDebounce
	for {
		select {
		case <-c.done:
			return
		case <-c.kick:
		}
		limit := time.Now().Add(10 * d)
		t := time.NewTimer(d)
	quiet:
		for {
			select {
			case <-c.done:
				t.Stop()
				return
			case <-c.kick:
				if wait := time.Until(limit); wait > 0 {
					t.Reset(min(d, wait))
				}
			case <-t.C:
				break quiet
			}
		}
		c.refresh()
	}
}

func (c *conn) refresh() {
	m := c.m
	m.mu.Lock()
	sess, state := c.session, c.state
	m.mu.Unlock()
	if sess == nil || state != StateConnected {
		return
	}
	ctx, cancel := context.WithTimeout(m.life, m.opts.InitTimeout)
	defer cancel()
	list, err := c.listTools(ctx, sess)
	if err != nil {
		m.opts.Logger.Warn("mcp tools/list refresh failed; keeping the previous tools", "server", c.cfg.Name, "error", err)
		return
	}
	m.mu.Lock()
	if c.closing || c.state != StateConnected {
		m.mu.Unlock()
		return
	}
	c.applyListLocked(list)
	m.rebuildLocked()
	m.mu.Unlock()
	m.opts.Logger.Info("mcp tools refreshed", "server", c.cfg.Name)
	m.notify()
}

// close ends this connection for Close.
func (c *conn) close() error {
	m := c.m
	m.mu.Lock()
	sess, p := c.session, c.proc
	prev := c.state
	m.mu.Unlock()
	close(c.done)
	var err error
	if sess != nil {
		err = sess.Close()
	}
	if p != nil {
		p.shutdown()
	}
	m.mu.Lock()
	if prev == StateConnected || prev == StateConnecting || prev == StateReconnecting {
		c.state, c.err = StateDisconnected, "closed by the client"
	}
	c.tools = nil
	m.mu.Unlock()
	if err != nil && (errors.Is(err, mcp.ErrConnectionClosed) || p != nil) {
		err = nil // the server went first, or the process exit status is ours to cause
	}
	return err
}

// unavailable is the Execution-stage error for a call to a server that is
// not connected (BH-041: returned at once, no wait).
func (c *conn) unavailable(state State, reason string) *tool.Error {
	msg := fmt.Sprintf("MCP server %s is %s", c.cfg.Name, state)
	if reason != "" {
		msg += ": " + reason
	}
	return tool.Errorf(tool.Execution, "%s", msg).
		WithHint("this server's tools cannot run now; use other tools, or ask the user to fix the server")
}

// noLongerOffered is the Discovery-stage error for a tool removed by a
// list_changed refresh (BH-043).
func (c *conn) noLongerOffered(orig string) *tool.Error {
	return tool.Errorf(tool.Discovery, "tool no longer offered by server %s (was %q)", c.cfg.Name, orig).
		WithHint("use tool_search to see what the server offers now")
}

// handler calls the original MCP tool orig on this server. Input has been
// validated against the tool's schema by tool.Tool.Call; it is sent as is.
func (c *conn) handler(orig string) tool.Handler {
	return func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		m := c.m
		m.mu.Lock()
		state, reason, offered := c.state, c.err, c.live[orig]
		m.mu.Unlock()
		if !state.Usable() {
			return nil, c.unavailable(state, reason)
		}
		if !offered {
			return nil, c.noLongerOffered(orig)
		}
		beat := func() {}
		if d := cmp.Or(c.cfg.CallTimeout, m.opts.CallTimeout); d > 0 {
			// The bound runs while the server is silent: each progress
			// notification for the call (a heartbeat) starts it again.
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			expire := &callTimeoutError{d: d}
			t := time.AfterFunc(d, func() { cancel(expire) })
			defer t.Stop()
			defer cancel(nil)
			beat = func() { t.Reset(d) }
		}
		args := json.RawMessage(bytes.TrimSpace(call.Input))
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		params := &mcp.CallToolParams{Name: orig, Arguments: args}
		token := c.cfg.Name + "-" + strconv.FormatInt(c.nextToken.Add(1), 10)
		params.Meta = mcp.Meta{"progressToken": token}
		c.progressMu.Lock()
		c.progress[token] = progressSink{call: call, beat: beat}
		c.progressMu.Unlock()
		defer func() {
			c.progressMu.Lock()
			delete(c.progress, token)
			c.progressMu.Unlock()
		}()
		res, err := c.callRounds(ctx, call, orig, params) // mrtr.go
		if err != nil {
			var te *tool.Error
			if errors.As(err, &te) {
				return nil, te
			}
			return nil, c.callError(ctx, err)
		}
		if res.IsError {
			return nil, tool.Errorf(tool.Execution, "server %s reported an error: %s", c.cfg.Name, resultText(res)).
				WithHint("read the server's message; the effect may be partial, inspect before retrying")
		}
		return mapResult(c.cfg.Name, orig, res), nil
	}
}

// callError attributes a failed tools/call: cancellation and timeouts,
// a connection lost mid-call, or a JSON-RPC error from the server.
func (c *conn) callError(ctx context.Context, err error) *tool.Error {
	var expired *callTimeoutError
	switch {
	case errors.As(context.Cause(ctx), &expired):
		return (&tool.Error{Stage: tool.Execution, Msg: fmt.Sprintf("call to server %s timed out: no answer and no progress for %s (setting mcp.callTimeout, or the server's callTimeout)", c.cfg.Name, expired.d), Err: err}).
			WithHint("the server may still be working; inspect the state before retrying")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return (&tool.Error{Stage: tool.Execution, Msg: fmt.Sprintf("call to server %s timed out", c.cfg.Name), Err: err}).
			WithHint("the server may still be working; inspect the state before retrying")
	case ctx.Err() != nil:
		return (&tool.Error{Stage: tool.Execution, Msg: fmt.Sprintf("call to server %s cancelled", c.cfg.Name), Err: err}).
			WithHint("the call was stopped; inspect the state before retrying")
	}
	if te := oauthCallError(c.cfg.Name, err); te != nil {
		return te
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return (&tool.Error{Stage: tool.Execution, Msg: fmt.Sprintf("server %s rejected the call: %s (code %d)", c.cfg.Name, we.Message, we.Code), Err: err}).
			WithHint("check the tool name and arguments against the server's current tool list")
	}
	if why := c.crashed(); why != "" {
		// The process ended under the call: name how, with its last
		// stderr lines, not the transport's "connection closed".
		return (&tool.Error{Stage: tool.Execution, Msg: fmt.Sprintf("MCP server %s %s during the call", c.cfg.Name, why), Err: err}).
			WithHint("the effect may be partial; inspect before retrying, and check the server (its command and logs) or ask the user to")
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return (&tool.Error{Stage: tool.Execution, Msg: fmt.Sprintf("server %s disconnected during the call: %v", c.cfg.Name, err), Err: err}).
			WithHint("the effect may be partial; inspect before retrying")
	}
	return &tool.Error{Stage: tool.Execution, Msg: fmt.Sprintf("call to server %s failed: %v", c.cfg.Name, err), Err: err}
}

// callTimeoutError is the cause of a call's ctx when CallTimeout passed
// without an answer or a heartbeat.
type callTimeoutError struct{ d time.Duration }

func (e *callTimeoutError) Error() string {
	return fmt.Sprintf("no answer and no progress for %s", e.d)
}

// crashed describes how the server's process ended by itself ("exited
// with status 3: <last stderr lines>", "killed by signal killed"), or ""
// while it runs, for a remote server, or when we stopped it. It waits a
// moment for an exit the broken connection announces.
func (c *conn) crashed() string {
	c.m.mu.Lock()
	p := c.proc
	c.m.mu.Unlock()
	if p == nil || !p.hasExited(500*time.Millisecond) || !p.selfExit() {
		return ""
	}
	reason := p.exitReason()
	if tail := p.stderrLines(); tail != "" {
		reason += ": " + tail
	}
	return reason
}

// onProgress forwards notifications/progress for a running call to its
// client event sink (never to the model).
func (c *conn) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token := fmt.Sprint(req.Params.ProgressToken)
	c.progressMu.Lock()
	sink, ok := c.progress[token]
	c.progressMu.Unlock()
	if !ok {
		return
	}
	sink.beat()
	sink.call.Emit(tool.Event{Kind: tool.EventProgress, Message: req.Params.Message,
		Progress: req.Params.Progress, Total: req.Params.Total, Time: time.Now()})
}

// onLog writes a server's notifications/message to our logger at Info
// ("mcp server message", with its level, logger name and data).
func (c *conn) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	if req == nil || req.Params == nil {
		return
	}
	c.m.opts.Logger.InfoContext(ctx, "mcp server message", "server", c.cfg.Name,
		"level", string(req.Params.Level), "logger", req.Params.Logger, "data", req.Params.Data)
}

// httpTransport builds the streamable HTTP or SSE transport with the
// server's headers. The connection's own lifetime is the Manager's, not
// the start's: the SSE stream would otherwise end with initCtx.
func (c *conn) httpTransport(initCtx context.Context) mcp.Transport {
	base := c.m.opts.HTTPClient
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc := *base
	maxDepth := c.m.opts.MaxSchemaDepth
	if maxDepth <= 0 {
		maxDepth = tool.DefaultMaxSchemaDepth
	}
	hc.Transport = headerTransport{base: rt, headers: c.cfg.Headers, filter: func(msg []byte) []byte {
		if msg = c.notes.line(msg); msg == nil {
			return nil
		}
		return c.frame(defuse(msg, maxDepth, c.exclude), false)
	}}
	if c.cfg.Type == TypeSSE || c.sseFallback.Load() {
		inner := &mcp.SSEClientTransport{Endpoint: c.cfg.URL, HTTPClient: &hc}
		return lifeTransport{inner: inner, life: c.m.life, init: initCtx}
	}
	// The streamable connection is handed to the SDK as is, never wrapped:
	// the SDK tells it about the session through an unexported method
	// (sessionUpdated), which starts the standalone GET stream that carries
	// the server's own requests (ping, roots/list, elicitation/create) and
	// notifications outside a call (tools/list_changed). A wrapper hid that
	// method, and those messages never arrived (issue 13). The SDK detaches
	// the connection from the connect context itself, and closes it when
	// the handshake fails.
	st := &mcp.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: &hc, MaxEventSize: c.m.opts.MaxFrameBytes + 64<<10}
	if h := newOAuthHandler(c.cfg, c.m.opts.OAuth, base); h != nil { // oauth.go
		st.OAuthHandler = h
	}
	return st
}

// lifeTransport connects inner with a context that lives until Close, but
// that is cancelled too if the start times out before the handshake ends.
// Only for legacy SSE: its connection has no session hook to hide.
type lifeTransport struct {
	inner mcp.Transport
	life  context.Context
	init  context.Context
}

func (t lifeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	connCtx, cancel := context.WithCancel(t.life)
	stop := context.AfterFunc(t.init, func() {
		if errors.Is(t.init.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	conn, err := t.inner.Connect(connCtx)
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	return &cancelConn{Connection: conn, cancel: cancel, stop: stop}, nil
}

type cancelConn struct {
	mcp.Connection
	cancel context.CancelFunc
	stop   func() bool
}

func (c *cancelConn) Close() error {
	err := c.Connection.Close()
	c.stop()
	c.cancel()
	return err
}

// headerTransport adds a server's headers to each request and passes each
// JSON-RPC message of a response through filter (the notification bound
// and defuse), as the stdio reader does: in a JSON body line by line, in an
// event stream each "data:" line (an event left without data is skipped
// by the SDK).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	filter  func(msg []byte) []byte
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err != nil || h.filter == nil || resp.Body == nil {
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		resp.Body = filteredBody{Reader: &lineReader{in: bufio.NewReader(resp.Body), f: h.filter}, Closer: resp.Body}
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = filteredBody{Reader: &lineReader{in: bufio.NewReader(resp.Body), f: h.sseLine}, Closer: resp.Body}
	}
	return resp, nil
}

// sseLine filters the message of one "data:" line of an event stream.
func (h headerTransport) sseLine(line []byte) []byte {
	payload, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return line
	}
	msg := bytes.TrimLeft(payload, " ")
	out := h.filter(msg)
	switch {
	case out == nil:
		return nil
	case len(out) == len(msg) && (len(out) == 0 || &out[0] == &msg[0]):
		return line
	}
	return append([]byte("data: "), out...)
}

type filteredBody struct {
	io.Reader
	io.Closer
}

// captureHandler forwards the SDK's log records to our logger and notes the
// tools the SDK drops from tools/list, so they show as quarantined.
type captureHandler struct {
	c     *conn
	inner slog.Handler
}

// Enabled lets Error records through for capture (the SDK logs refused
// tools at Error) and anything else the inner handler wants.
func (h *captureHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.inner.Enabled(ctx, l)
}

func (h *captureHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "excluding tool from tools/list" {
		var name, reason string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "tool":
				name = a.Value.String()
			case "error":
				reason = a.Value.String()
			}
			return true
		})
		h.c.excludedMu.Lock()
		h.c.excluded = append(h.c.excluded, Quarantine{Tool: name,
			Reason: fmt.Sprintf("server %q tool %q: refused by the MCP SDK: %s", h.c.cfg.Name, name, reason)})
		h.c.excludedMu.Unlock()
	}
	if !h.inner.Enabled(ctx, r.Level) {
		return nil
	}
	r = r.Clone()
	r.AddAttrs(slog.String("server", h.c.cfg.Name))
	return h.inner.Handle(ctx, r)
}

func (h *captureHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &captureHandler{c: h.c, inner: h.inner.WithAttrs(attrs)}
}

func (h *captureHandler) WithGroup(name string) slog.Handler {
	return &captureHandler{c: h.c, inner: h.inner.WithGroup(name)}
}

// procConfinement is how one stdio server is confined: its policy and the
// driver, or an error that stops its start; a zero value starts it as is.
type procConfinement struct {
	policy *confine.Policy
	driver *confine.Driver
	err    error
}

// confinement resolves sc's confinement through Options.Confine.
func (m *Manager) confinement(sc ServerConfig) procConfinement {
	if m.opts.Confine == nil {
		return procConfinement{}
	}
	pol, err := m.opts.Confine(sc)
	if err != nil {
		return procConfinement{err: err}
	}
	if pol == nil || pol.Mode == confine.Off {
		return procConfinement{}
	}
	d := m.opts.ConfineDriver
	if d == nil {
		m.mu.Lock()
		if m.driver == nil {
			m.driver = confine.NewDriver(nil)
		}
		d = m.driver
		m.mu.Unlock()
	}
	return procConfinement{policy: pol, driver: d}
}
