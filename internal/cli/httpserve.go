package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/web"
)

// Defaults of the HTTP bounds of `aibuddy mcp --http` (settings
// mcp.httpHeaderTimeout, mcp.httpBodyTimeout, mcp.httpMaxBodyBytes).
const (
	DefaultHTTPHeaderTimeout = 10 * time.Second
	DefaultHTTPBodyTimeout   = 30 * time.Second
	DefaultHTTPMaxBodyBytes  = mcp.DefaultMaxRequestBodyBytes
)

// httpOptions are the resolved settings of one `aibuddy mcp --http`.
type httpOptions struct {
	// Verify checks the bearer token of every request (staticToken, or
	// an OAuth verifier); Bearer shapes its refusals.
	Verify auth.TokenVerifier
	Bearer bearerOptions
	// Metadata, when set, is served without a token at
	// /.well-known/oauth-protected-resource (RFC 9728 §3).
	Metadata http.Handler
	// SessionIdle closes a session idle this long (SDK
	// StreamableHTTPOptions.SessionTimeout); > 0.
	SessionIdle time.Duration
	// HeaderTimeout bounds reading a request's headers
	// (http.Server.ReadHeaderTimeout), BodyTimeout its body; MaxBody is
	// the largest body in bytes.
	HeaderTimeout, BodyTimeout time.Duration
	MaxBody                    int64
	Logger                     *slog.Logger
}

// httpSettings fills the bounds of o from the settings' mcp block (zero
// means the default).
func httpSettings(m config.MCP, o *httpOptions) {
	o.SessionIdle = orDuration(m.SessionIdleTimeout.D(), config.DefaultSessionIdleTimeout)
	o.HeaderTimeout = orDuration(m.HTTPHeaderTimeout.D(), DefaultHTTPHeaderTimeout)
	o.BodyTimeout = orDuration(m.HTTPBodyTimeout.D(), DefaultHTTPBodyTimeout)
	o.MaxBody = m.HTTPMaxBodyBytes
	if o.MaxBody == 0 {
		o.MaxBody = DefaultHTTPMaxBodyBytes
	}
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// handler is the whole HTTP face of `aibuddy mcp --http`: /mcp (and
// /mcp/...) behind, in this order, the body read deadline (boundBody), the
// Origin check (checkOrigin), the bearer token (requireBearer) and the
// body read (readBody), then the SDK's streamable handler with one gateway
// per session (sessions); and, with o.Metadata, the protected-resource
// metadata without a token.
func (g *gateways) handler(o httpOptions) http.Handler {
	sdk := mcp.NewStreamableHTTPHandler(g.sessionServer, &mcp.StreamableHTTPOptions{Logger: o.Logger,
		SessionTimeout: o.SessionIdle, MaxRequestBodyBytes: o.MaxBody})
	var h http.Handler = g.byProtocol(o, g.sessions(sdk)) // protocol.go: 2026-07-28 is stateless
	h = readBody(o.MaxBody, o.BodyTimeout, h)
	h = requireBearer(o.Verify, o.Bearer)(h)
	h = checkOrigin(h)
	h = boundBody(o.BodyTimeout, h)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/mcp/", h)
	if g.ui != nil { // ui.go: the web view, the same token at its login form
		mux.Handle("/ui/", g.ui.handler(o, &web.Options{Store: g.r.store, DataDir: g.r.dataDir}))
		mux.Handle("/ui", http.RedirectHandler("/ui/", http.StatusSeeOther))
	}
	if o.Metadata != nil {
		mux.Handle("/.well-known/oauth-protected-resource", o.Metadata)
		mux.Handle("/.well-known/oauth-protected-resource/", o.Metadata)
	}
	return mux
}

// boundBody sets a read deadline of timeout on the connection of a request
// that has a body (Content-Length > 0, or chunked), before anything else
// runs: a client that sends its body slower than that gets 408 from
// readBody, and a refused request's unread body is drained within the same
// deadline. readBody lifts the deadline once the body is in, so a long
// tool call is not bounded; a request without a body (a GET stream, a
// DELETE) gets none.
func boundBody(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.ContentLength != 0 && timeout > 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		}
		next.ServeHTTP(w, req)
	})
}

// readBody reads the whole request body (at most max bytes) before next
// runs and then lifts the read deadline boundBody set. A body that did
// not arrive in time gets 408 Request Timeout, one larger than max 413,
// each naming the setting to change; the connection is then closed.
func readBody(max int64, timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.ContentLength == 0 || req.Body == nil {
			next.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, max))
		if err != nil {
			w.Header().Set("Connection", "close")
			var mbe *http.MaxBytesError
			var ne net.Error
			switch {
			case errors.As(err, &mbe):
				http.Error(w, fmt.Sprintf("aibuddy: the request body exceeds mcp.httpMaxBodyBytes (%d bytes); send a smaller message or raise the setting", max), http.StatusRequestEntityTooLarge)
			case errors.As(err, &ne) && ne.Timeout():
				http.Error(w, fmt.Sprintf("aibuddy: the request body did not arrive within mcp.httpBodyTimeout (%s); send it faster or raise the setting", timeout), http.StatusRequestTimeout)
			default:
				http.Error(w, "aibuddy: reading the request body: "+err.Error(), http.StatusBadRequest)
			}
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		next.ServeHTTP(w, req)
	})
}

// sessionSlot carries the gateway of the request that opens a session
// (a POST without Mcp-Session-Id) from sessions to sessionServer.
type sessionSlot struct {
	once sync.Once
	gw   *mcpserver.Gateway
}

type sessionSlotKey struct{}

// sessions gives each request that may open a session (a POST without
// Mcp-Session-Id) a slot, so the SDK's getServer calls for it (it calls
// twice) share one fresh gateway; every other request gets none and
// sessionServer answers nil for it, so no gateway is made for a request
// that only uses an existing session. After the request, the gateway is
// dropped at once when no session was established on it (a failed
// initialize), else when its session ends: a DELETE, the idle timeout
// (mcp.sessionIdleTimeout) or the end of aibuddy. Dropped, its per-session
// tool state is garbage.
func (g *gateways) sessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, req)
			return
		}
		slot := &sessionSlot{}
		next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), sessionSlotKey{}, slot)))
		if slot.gw != nil {
			g.watch(slot.gw)
		}
	})
}

// sessionServer is the getServer of the SDK's streamable handler: the
// slot's gateway (made on first use), or nil for a request without a slot.
// A nil server makes the SDK check the protocol version against its
// defaults, which are ours (mcpserver narrows no versions).
func (g *gateways) sessionServer(req *http.Request) *mcp.Server {
	slot, _ := req.Context().Value(sessionSlotKey{}).(*sessionSlot)
	if slot == nil {
		return nil
	}
	slot.once.Do(func() { slot.gw = g.add() })
	return slot.gw.Server()
}

// watch drops gw when its session ends, or now when it has none.
func (g *gateways) watch(gw *mcpserver.Gateway) {
	var sessions []*mcp.ServerSession
	for ss := range gw.Server().Sessions() {
		sessions = append(sessions, ss)
	}
	if len(sessions) == 0 {
		g.drop(gw)
		return
	}
	g.mu.Lock()
	closing := g.closing
	g.mu.Unlock()
	if closing {
		closeAll(gw) // opened while aibuddy stops
	}
	g.watching.Add(1)
	go func() {
		defer g.watching.Done()
		for _, ss := range sessions {
			_ = ss.Wait()
		}
		g.drop(gw)
	}()
}

// drop removes gw from the live gateways (no refresh updates it again)
// and tells onDrop.
func (g *gateways) drop(gw *mcpserver.Gateway) {
	g.mu.Lock()
	if i := slices.Index(g.all, gw); i >= 0 {
		g.all = slices.Delete(g.all, i, i+1) // zeroes the freed slot: nothing keeps gw
	}
	onDrop := g.onDrop
	g.mu.Unlock()
	g.endTask(gw)    // the session's background jobs end with it (jobs.go)
	g.ui.dropped(gw) // ui.go
	if onDrop != nil {
		onDrop(gw)
	}
}

// live is the number of live gateways (sessions being served, or being
// opened).
func (g *gateways) live() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.all)
}

// closeSessions closes the session of every live gateway, and of every
// one watched from now on (the end of aibuddy mcp --http).
func (g *gateways) closeSessions() {
	g.mu.Lock()
	g.closing = true
	all := slices.Clone(g.all)
	g.mu.Unlock()
	for _, gw := range all {
		closeAll(gw)
	}
}

func closeAll(gw *mcpserver.Gateway) {
	for ss := range gw.Server().Sessions() {
		_ = ss.Close()
	}
}
