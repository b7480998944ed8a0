package e2bsandbox

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	fspb "github.com/aibuddy/aibuddy/internal/envdspec/filesystem"
	"github.com/aibuddy/aibuddy/internal/envdspec/filesystem/filesystemconnect"
	"github.com/aibuddy/aibuddy/internal/envdspec/process/processconnect"
	"github.com/aibuddy/aibuddy/sandbox"
)

// Defaults of Options (each a setting: config sandbox.e2b.*).
const (
	DefaultUser              = "user"                 // Options.User
	DefaultKillDelay         = 2 * time.Second        // Options.KillDelay
	DefaultDrainGrace        = 1 * time.Second        // Options.DrainGrace
	DefaultKeepalive         = 30 * time.Second       // Options.Keepalive
	DefaultMaxReadBytes      = 64 << 20               // Options.MaxReadBytes
	DefaultMaxSearchBytes    = 256 << 20              // Options.MaxSearchBytes
	DefaultMaxSearchFiles    = 20000                  // Options.MaxSearchFiles
	DefaultRequestTimeout    = 60 * time.Second       // Options.RequestTimeout
	DefaultReattachRetries   = 5                      // Options.ReattachRetries
	DefaultReattachBackoff   = 100 * time.Millisecond // Options.ReattachBackoff
	maxLinkHops              = 40
	defaultMaxPathComponents = 256
)

// Options configures New.
type Options struct {
	// EnvdURL is the base URL of the sandbox's envd, e.g.
	// "https://49983-<sandboxID>.e2b.app" (setting sandbox.e2b.envdURL).
	EnvdURL string
	// AccessToken is sent as X-Access-Token when set (the sandbox's
	// envdAccessToken; setting sandbox.e2b.accessToken).
	AccessToken string
	// Workspace is the absolute workspace path inside the sandbox
	// (setting sandbox.workspace), e.g. "/workspace/project"; "" means the
	// sandbox user's home as envd resolves it.
	Workspace string
	// User is the sandbox user the calls run as (HTTP Basic user name on
	// the RPCs, "username" on /files, as envd reads them); "" means
	// DefaultUser. Setting sandbox.e2b.user.
	User string
	// HTTPClient makes every request; nil means a client without an
	// overall timeout (streams are long) and HTTP/2 when the server
	// offers it.
	HTTPClient *http.Client
	// KillDelay is the wait between SIGTERM and SIGKILL to a stopped
	// command's process group. Default 2 s (sandbox.e2b.killDelay).
	KillDelay time.Duration
	// DrainGrace bounds reading output held open by descendants after the
	// shell exits, as localsandbox.Options.DrainGrace. Default 1 s
	// (sandbox.e2b.drainGrace).
	DrainGrace time.Duration
	// Keepalive is the Keepalive-Ping-Interval envd sends keepalive
	// events at on a Start stream (whole seconds, at least 1), so
	// proxies keep an idle command's stream open. Default 30 s
	// (sandbox.e2b.keepalive).
	Keepalive time.Duration
	// MaxReadBytes bounds the bytes Read, Edit and Write's read-back
	// fetch of one file. Default 64 MiB (sandbox.e2b.maxReadBytes).
	MaxReadBytes int64
	// MaxSearchBytes and MaxSearchFiles bound what one grep fetches;
	// past them the result is Partial. Defaults 256 MiB and 20,000
	// files (sandbox.e2b.maxSearchBytes, sandbox.e2b.maxSearchFiles).
	MaxSearchBytes int64
	MaxSearchFiles int
	// RequestTimeout bounds one unary call or file transfer when the
	// caller's context has no earlier deadline. Default 60 s
	// (sandbox.e2b.requestTimeout).
	RequestTimeout time.Duration
	// ReattachRetries is how many Process.Connect attempts Exec makes
	// after a command's output stream breaks before the end event
	// (counted again after each successful re-attach); negative turns
	// re-attach off (a break then kills the command, and no output spool
	// is kept in the sandbox's /tmp). Default 5
	// (sandbox.e2b.reattachRetries).
	ReattachRetries int
	// ReattachBackoff is the wait before the first Connect attempt after
	// a break, doubled before each further one. Default 100 ms
	// (sandbox.e2b.reattachBackoff).
	ReattachBackoff time.Duration
	// OnClose runs once at Close (NewAPI kills the sandbox there).
	OnClose func() error
}

// Sandbox is a sandbox.Sandbox on one workspace inside a remote sandbox.
type Sandbox struct {
	opts      Options
	base      string // EnvdURL without a trailing slash
	ws        string // absolute, cleaned
	wsReal    string // ws as envd resolves it (every link followed)
	sandboxID string // set by NewAPI
	hc        *http.Client
	proc      processconnect.ProcessClient
	fs        filesystemconnect.FilesystemClient
	closed    chan struct{}
}

// New connects to the envd at opts.EnvdURL: it checks GET /health and
// that opts.Workspace is a directory there (Filesystem.Stat), so a wrong
// URL, token or path fails here, not at the first tool call.
//
// Errors name the stage and the setting to fix: an unreachable or
// unhealthy envd (sandbox.e2b.envdURL), a refused token
// (sandbox.e2b.accessToken), a workspace that is missing or not a
// directory (sandbox.workspace).
func New(ctx context.Context, opts Options) (*Sandbox, error) {
	if opts.EnvdURL == "" {
		return nil, errors.New("e2bsandbox: Discovery: no envd URL: set sandbox.e2b.envdURL, or E2B_API_KEY with sandbox.e2b.template to create a sandbox")
	}
	u, err := url.Parse(opts.EnvdURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("e2bsandbox: Discovery: sandbox.e2b.envdURL %q is not an http(s) URL", opts.EnvdURL)
	}
	if opts.Workspace != "" && !path.IsAbs(opts.Workspace) {
		return nil, fmt.Errorf("e2bsandbox: Parameters: sandbox.workspace %q must be an absolute path inside the sandbox (e.g. /workspace/project), or unset for the user's home", opts.Workspace)
	}
	if opts.User == "" {
		opts.User = DefaultUser
	}
	setDur(&opts.KillDelay, DefaultKillDelay)
	setDur(&opts.DrainGrace, DefaultDrainGrace)
	setDur(&opts.Keepalive, DefaultKeepalive)
	setDur(&opts.RequestTimeout, DefaultRequestTimeout)
	setDur(&opts.ReattachBackoff, DefaultReattachBackoff)
	if opts.ReattachRetries == 0 {
		opts.ReattachRetries = DefaultReattachRetries
	}
	if opts.MaxReadBytes <= 0 {
		opts.MaxReadBytes = DefaultMaxReadBytes
	}
	if opts.MaxSearchBytes <= 0 {
		opts.MaxSearchBytes = DefaultMaxSearchBytes
	}
	if opts.MaxSearchFiles <= 0 {
		opts.MaxSearchFiles = DefaultMaxSearchFiles
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	s := &Sandbox{opts: opts, base: strings.TrimRight(opts.EnvdURL, "/"), ws: path.Clean(opts.Workspace), hc: hc, closed: make(chan struct{})}
	ic := connect.WithInterceptors(headerInterceptor{s: s})
	s.proc = processconnect.NewProcessClient(hc, s.base, ic)
	s.fs = filesystemconnect.NewFilesystemClient(hc, s.base, ic)
	if err := s.health(ctx); err != nil {
		return nil, err
	}
	if s.ws == "." { // unset: envd resolves "" to the user's home
		e, err := s.stat(ctx, "")
		if err != nil {
			return nil, fmt.Errorf("e2bsandbox: Discovery: the sandbox user's home: %w (set sandbox.workspace)", err)
		}
		s.ws = path.Clean(e.GetPath())
	}
	e, err := s.stat(ctx, s.ws)
	if err != nil {
		return nil, fmt.Errorf("e2bsandbox: Discovery: workspace %s in the sandbox: %w (check sandbox.workspace)", s.ws, err)
	}
	if e.GetType() != fspb.FileType_FILE_TYPE_DIRECTORY {
		return nil, fmt.Errorf("e2bsandbox: Discovery: workspace %s in the sandbox is not a directory (check sandbox.workspace)", s.ws)
	}
	// envd reports link targets fully resolved: learn the workspace's
	// real path so they map back into it.
	if out, err := s.run(ctx, "/bin/sh", "-c", `cd -- "$1" && pwd -P`, "aibuddy-realpath", s.ws); err == nil {
		if r := strings.TrimSpace(out); path.IsAbs(r) {
			s.wsReal = path.Clean(r)
		}
	}
	return s, nil
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// Kind is sandbox.KindE2B.
func (s *Sandbox) Kind() sandbox.Kind { return sandbox.KindE2B }

// Workspace is the workspace's absolute path inside the sandbox.
func (s *Sandbox) Workspace() string { return s.ws }

// EnvdURL is the envd the adapter talks to.
func (s *Sandbox) EnvdURL() string { return s.base }

// Supports is true for the six operations.
func (s *Sandbox) Supports(op sandbox.Op) bool {
	switch op {
	case sandbox.OpList, sandbox.OpRead, sandbox.OpWrite, sandbox.OpEdit, sandbox.OpSearch, sandbox.OpExec:
		return true
	}
	return false
}

// Close runs Options.OnClose once (killing an API-created sandbox).
func (s *Sandbox) Close() error {
	select {
	case <-s.closed:
		return nil
	default:
		close(s.closed)
	}
	if s.opts.OnClose != nil {
		return s.opts.OnClose()
	}
	return nil
}

// headerInterceptor adds envd's headers to every RPC: X-Access-Token, the
// user as HTTP Basic auth (envd's permissions.GetAuthUser), and on Start
// the Keepalive-Ping-Interval.
type headerInterceptor struct{ s *Sandbox }

func (h headerInterceptor) set(hd http.Header) {
	if h.s.opts.AccessToken != "" {
		hd.Set("X-Access-Token", h.s.opts.AccessToken)
	}
	hd.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(h.s.opts.User+":")))
}

func (h headerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		h.set(req.Header())
		return next(ctx, req)
	}
}

func (h headerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		h.set(conn.RequestHeader())
		secs := int(h.s.opts.Keepalive / time.Second)
		conn.RequestHeader().Set("Keepalive-Ping-Interval", strconv.Itoa(max(secs, 1)))
		return conn
	}
}

func (h headerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// unaryCtx bounds one request by Options.RequestTimeout.
func (s *Sandbox) unaryCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.RequestTimeout)
}

func (s *Sandbox) health(ctx context.Context) error {
	ctx, cancel := s.unaryCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/health", nil)
	if err != nil {
		return fmt.Errorf("e2bsandbox: Discovery: %w", err)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("e2bsandbox: Discovery: envd at %s is unreachable: %w (check sandbox.e2b.envdURL and that the sandbox runs)", s.base, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("e2bsandbox: Discovery: envd at %s: GET /health answered %s (check sandbox.e2b.envdURL)", s.base, resp.Status)
	}
	return nil
}

// stat is Filesystem.Stat of an absolute sandbox path (not following a
// final symlink, as envd's Stat).
func (s *Sandbox) stat(ctx context.Context, p string) (*fspb.EntryInfo, error) {
	ctx, cancel := s.unaryCtx(ctx)
	defer cancel()
	resp, err := s.fs.Stat(ctx, connect.NewRequest(&fspb.StatRequest{Path: p}))
	if err != nil {
		return nil, s.rpcErr("Filesystem.Stat", err)
	}
	return resp.Msg.GetEntry(), nil
}

// rpcErr maps a Connect error to the package's errors: NotFound wraps
// sandbox.ErrNotFound, Unauthenticated names the token setting.
func (s *Sandbox) rpcErr(call string, err error) error {
	switch connect.CodeOf(err) {
	case connect.CodeNotFound:
		return fmt.Errorf("envd %s: %w", call, notFound{})
	case connect.CodeUnauthenticated, connect.CodePermissionDenied:
		return fmt.Errorf("envd %s: Authorization: the sandbox refused the access token (%v): check sandbox.e2b.accessToken", call, err)
	case connect.CodeCanceled, connect.CodeDeadlineExceeded:
		return fmt.Errorf("envd %s: %w", call, err)
	}
	return fmt.Errorf("envd %s: Execution: %w", call, err)
}
