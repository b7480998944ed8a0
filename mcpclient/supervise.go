package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/tool"
)

// supervision is the restoration state of one server (guarded by m.mu).
type supervision struct {
	gate     chan struct{} // closed when the running restoration ends; nil when none runs
	attempt  chan struct{} // closed when the running attempt ends; nil between attempts (calls then fail at once)
	restarts []time.Time   // restorations begun within Options.RestartWindow
	// lostSess and lostWhy are the last session lost and why, as its
	// first noticer saw it, for a call that noticed second (by then the
	// process may be replaced, and the exit would read as a plain EOF).
	lostSess *mcp.ClientSession
	lostWhy  string
}

// lost handles the end of session old, which nobody asked for: the
// process exited, the HTTP session was forgotten by the server (404), or
// the connection broke. Whoever notices first (the watch, or a call that
// failed on it) calls it; later calls for the same session do nothing.
//
// The policy (doc.go, "Supervision"): the connection is restored with
// bounded backoff while the server's tools stay registered; with
// Options.MaxRestarts negative the server is disconnected instead, and
// past MaxRestarts restorations within RestartWindow it is failed. Either
// way its tools are then removed, and subscribers are told.
func (c *conn) lost(old *mcp.ClientSession, reason string) string {
	m := c.m
	m.mu.Lock()
	if c.closing || c.session != old || c.state != StateConnected {
		if c.sup.lostSess == old && c.sup.lostWhy != "" {
			reason = c.sup.lostWhy // the first noticer's reason: the exit and stderr of the process that died
		}
		m.mu.Unlock()
		return reason
	}
	c.sup.lostSess, c.sup.lostWhy = old, reason
	oldProc := c.proc
	c.session = nil
	now := time.Now()
	kept := c.sup.restarts[:0]
	for _, t := range c.sup.restarts {
		if now.Sub(t) < m.opts.RestartWindow {
			kept = append(kept, t)
		}
	}
	c.sup.restarts = kept
	switch {
	case m.opts.MaxRestarts < 0:
		c.state, c.err = StateDisconnected, reason
	case len(kept) >= m.opts.MaxRestarts:
		c.state, c.err = StateFailed, fmt.Sprintf("%s (restored %d times within %s already; not again: settings mcp.maxRestarts, mcp.restartWindow)",
			reason, len(kept), m.opts.RestartWindow)
	default:
		c.sup.restarts = append(c.sup.restarts, now)
		c.state, c.err = StateReconnecting, reason
		c.sup.gate, c.sup.attempt = make(chan struct{}), make(chan struct{})
		m.wg.Add(1) // under m.mu with closing false: before Close waits
		go func() {
			defer m.wg.Done()
			c.restore(old, oldProc, reason)
		}()
	}
	if c.state != StateReconnecting {
		m.rebuildLocked()
	}
	state := c.state
	m.mu.Unlock()
	if state == StateReconnecting {
		m.opts.Logger.Warn("mcp server lost; reconnecting", "server", c.cfg.Name, "error", reason)
	} else {
		m.opts.Logger.Warn("mcp server "+string(state), "server", c.cfg.Name, "error", c.errText())
		_ = old.Close()
		if oldProc != nil {
			oldProc.shutdown()
		}
	}
	m.notify()
	return reason
}

func (c *conn) errText() string {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.err
}

// restore opens the connection again: the first attempt at once, each
// later one after a backoff (RestartBackoff doubling up to
// RestartBackoffMax), at most max(1, MaxRestarts) attempts. Calls that
// arrive while an attempt runs wait for it; calls during a backoff wait
// fail at once with the reason.
func (c *conn) restore(old *mcp.ClientSession, oldProc *proc, reason string) {
	m := c.m
	if oldProc != nil {
		oldProc.shutdown() // no child of ours outlives its connection
	}
	_ = old.Close() // the SDK's side of it (no DELETE after a 404)
	finish := c.endRestore
	attempts := max(1, m.opts.MaxRestarts)
	delay := m.opts.RestartBackoff
	var last string
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(delay)
			select {
			case <-m.life.Done():
				t.Stop()
				finish("", "")
				return
			case <-t.C:
			}
			delay = min(2*delay, m.opts.RestartBackoffMax)
			m.mu.Lock()
			c.sup.attempt = make(chan struct{})
			m.mu.Unlock()
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(m.life, m.opts.InitTimeout)
		d, why := c.dial(ctx)
		cancel()
		if m.life.Err() != nil {
			if d != nil {
				_ = d.sess.Close()
				if d.p != nil {
					d.p.shutdown()
				}
			}
			finish("", "")
			return
		}
		if d != nil {
			if c.install(d, start) {
				m.opts.Logger.Info("mcp server restored", "server", c.cfg.Name, "attempt", attempt, "after", reason)
				finish("", "")
				m.notify()
			} else {
				finish("", "")
			}
			return
		}
		last = why
		m.mu.Lock()
		c.err = fmt.Sprintf("%s; reconnect attempt %d of %d failed: %s", reason, attempt, attempts, why)
		if attempt < attempts {
			c.endAttemptLocked() // calls in the backoff gap fail at once
		}
		m.mu.Unlock()
		m.notify() // the status changed
	}
	finish(StateFailed, fmt.Sprintf("%s; not restored after %d attempts, the last: %s", reason, attempts, last))
}

// endAttemptLocked marks the running attempt (if any) as ended, waking
// the calls that wait for it. m.mu must be held.
func (c *conn) endAttemptLocked() {
	if c.sup.attempt != nil {
		close(c.sup.attempt)
		c.sup.attempt = nil
	}
}

// endRestore ends a restoration: the server takes state with why (none:
// install already made it connected, or the Manager closed), and calls
// waiting for the restoration go on.
func (c *conn) endRestore(state State, why string) {
	m := c.m
	m.mu.Lock()
	if !c.closing && state != "" {
		c.state, c.err = state, why
		m.rebuildLocked()
	}
	if c.sup.gate != nil {
		close(c.sup.gate)
	}
	c.sup.gate = nil
	c.endAttemptLocked()
	m.mu.Unlock()
	if state != "" {
		m.opts.Logger.Warn("mcp server "+string(state), "server", c.cfg.Name, "error", why)
		m.notify()
	}
}

// Reconnect closes the connection to server on purpose (an HTTP session
// is DELETEd, bounded by the SDK's short timeout; a stdio server is shut
// down, which never counts as a crash) and opens a new one, bounded by
// ctx and Options.InitTimeout. It returns nil only after a real round
// trip: initialize and tools/list succeeded, the routing was rebuilt
// from that list, and the server has at least one usable tool (BH-062);
// otherwise an error saying which step failed, and the server is failed
// with that reason. Calls during it wait for it.
func (m *Manager) Reconnect(ctx context.Context, server string) error {
	var c *conn
	for _, cc := range m.conns {
		if cc.cfg.Name == server {
			c = cc
		}
	}
	if c == nil {
		return fmt.Errorf("Discovery: no MCP server is named %q; `aibuddy tools` lists the configured servers", server)
	}
	m.mu.Lock()
	switch {
	case m.closed || c.closing:
		m.mu.Unlock()
		return fmt.Errorf("Execution: the MCP client is closed; start a new one")
	case c.state == StateDisabled:
		m.mu.Unlock()
		return fmt.Errorf("Discovery: MCP server %s is disabled in the configuration; enable it first", server)
	case c.sup.gate != nil || c.state == StateConnecting:
		m.mu.Unlock()
		return fmt.Errorf("Execution: MCP server %s is already connecting; see `aibuddy tools` for its state, then try again", server)
	}
	old, oldProc := c.session, c.proc
	c.session = nil
	c.state, c.err = StateReconnecting, "reconnect requested"
	c.sup.gate, c.sup.attempt = make(chan struct{}), make(chan struct{})
	m.mu.Unlock()
	m.notify()
	if old != nil {
		_ = old.Close() // the DELETE of the old session, before the new initialize
	}
	if oldProc != nil {
		oldProc.shutdown()
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, m.opts.InitTimeout)
	defer cancel()
	defer context.AfterFunc(m.life, cancel)()
	d, why := c.dial(dctx)
	if d == nil {
		c.endRestore(StateFailed, "reconnect failed: "+why)
		return fmt.Errorf("Execution: reconnecting MCP server %s failed: %s; check the server, then run the reconnect again", server, why)
	}
	if !c.install(d, start) {
		c.endRestore("", "")
		return fmt.Errorf("Execution: the MCP client closed during the reconnect")
	}
	c.endRestore("", "")
	m.notify()
	m.mu.Lock()
	loaded, offered := len(c.tools)-len(c.unusableLocked()), c.offered
	m.mu.Unlock()
	if loaded == 0 {
		return fmt.Errorf("Discovery: MCP server %s answered, but none of its %d tools could be registered; `aibuddy tools` shows why", server, offered)
	}
	return nil
}

// sessionFor returns the session a call goes to: the current one; while
// a restoration attempt runs, the one it opens (waiting at most ctx); and
// otherwise an Execution-stage error at once naming the state and why
// (a stdio server's exit status and the tail of its stderr).
func (c *conn) sessionFor(ctx context.Context) (*mcp.ClientSession, *tool.Error) {
	m := c.m
	for {
		m.mu.Lock()
		state, reason, sess, attempt := c.state, c.err, c.session, c.sup.attempt
		m.mu.Unlock()
		switch {
		case state == StateConnected && sess != nil:
			return sess, nil
		case state == StateReconnecting && attempt != nil:
			select {
			case <-attempt:
				continue
			case <-ctx.Done():
				return nil, c.callError(ctx, ctx.Err())
			}
		}
		return nil, c.unavailable(state, reason)
	}
}

// ended reports whether err means the session itself is gone (the
// server forgot it, the process exited, the connection closed), as
// opposed to one call failing.
func (c *conn) ended(sess *mcp.ClientSession, err error) bool {
	if errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed) {
		return true
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return false // the server answered
	}
	c.m.mu.Lock()
	p, cur := c.proc, c.session
	c.m.mu.Unlock()
	if cur != sess {
		return true
	}
	// A broken pipe or EOF: the exit it announces may lag a moment.
	return p != nil && p.hasExited(500*time.Millisecond)
}

// lossReason describes why sess ended, as the watch does: a stdio
// process's exit with the tail of its stderr, else err.
func (c *conn) lossReason(err error) string {
	if why := c.crashed(); why != "" {
		return why
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		return "the server no longer knows the session (HTTP 404: it restarted or expired the session)"
	}
	return "connection lost: " + err.Error()
}

// retryable reports whether the tool orig may be sent again on a new
// connection: only when the server marks it readOnlyHint or
// idempotentHint (BH-061).
func (c *conn) retryable(orig string) bool {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for _, cd := range c.cands {
		if cd.orig == orig {
			a := cd.annotations
			return a != nil && (a.ReadOnlyHint || a.IdempotentHint)
		}
	}
	return false
}

// callOnce sends params on the server's session and, when the session
// ends under the call, repairs it and sends the call once more if orig
// may be repeated (BH-061, BH-063): "server restarted mid-call; not
// retried" otherwise, and a session that is lost again straight after the
// repair fails the call instead of looping.
func (c *conn) callOnce(ctx context.Context, orig string, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	sess, terr := c.sessionFor(ctx)
	if terr != nil {
		return nil, terr
	}
	res, err := sess.CallTool(ctx, params)
	if err == nil || ctx.Err() != nil || !c.ended(sess, err) {
		return res, err
	}
	why := c.lost(sess, c.lossReason(err)) // the reason recorded for sess, when the watch noticed first
	fresh, terr := c.sessionFor(ctx)
	if terr != nil {
		return nil, terr.WithHint("the call was not sent again; " + terr.Hint)
	}
	if !c.retryable(orig) {
		return nil, (&tool.Error{Stage: tool.Execution, Err: err,
			Msg: fmt.Sprintf("server restarted mid-call; not retried (MCP server %s: %s)", c.cfg.Name, shortReason(err, why))}).
			WithHint("the tool is not marked read-only or idempotent, so it was not sent again and its effect is unknown; the connection is restored: inspect, then call it again if that is safe")
	}
	res, err = fresh.CallTool(ctx, params)
	if err != nil && ctx.Err() == nil && c.ended(fresh, err) {
		c.lost(fresh, c.lossReason(err))
		return nil, (&tool.Error{Stage: tool.Execution, Err: err,
			Msg: fmt.Sprintf("server %s lost the connection again straight after it was restored; not retried further: %v", c.cfg.Name, err)}).
			WithHint("the server is unstable; check it (its command and logs) or ask the user to")
	}
	return res, err
}

// shortReason is why, for a message: "HTTP 404 for the session", or the
// exit and the last stderr lines.
func shortReason(err error, why string) string {
	if errors.Is(err, mcp.ErrSessionMissing) {
		return "HTTP 404 for the session"
	}
	return lastLines(why, 5, 300)
}

// handshake runs client.Connect over transport, retrying with backoff
// (RestartBackoff doubling) while an HTTP server answers initialize with
// a transient status (502, 503, 504, 429) and initCtx allows (BH-067 b):
// on the same transport, never a fallback.
func (c *conn) handshake(initCtx context.Context, client *mcp.Client, transport mcp.Transport) (*mcp.ClientSession, error) {
	delay := c.m.opts.RestartBackoff
	for {
		sess, err := client.Connect(initCtx, transport, c.sessionOptions()) // mrtr.go: the protocol version offered
		if err == nil || c.cfg.Type == TypeStdio || !transientHTTP(err) {
			return sess, err
		}
		c.m.opts.Logger.Info("mcp server busy; retrying initialize", "server", c.cfg.Name, "error", err, "in", delay)
		t := time.NewTimer(delay)
		select {
		case <-initCtx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		delay = min(2*delay, c.m.opts.RestartBackoffMax)
	}
}

// fallBackToSSE reports whether a failed streamable-HTTP initialize
// should be tried again over legacy SSE: the entry named no type, it has
// not fallen back already, and the POST was answered 405 Method Not
// Allowed (a 401, 4xx body or 5xx never falls back).
func (c *conn) fallBackToSSE(err error) bool {
	return c.cfg.Type == TypeHTTP && c.cfg.TypeGuessed && !c.sseFallback.Load() &&
		strings.Contains(err.Error(), http.StatusText(http.StatusMethodNotAllowed))
}

// transientHTTP reports whether err is the SDK's report of a transient
// HTTP status (it formats them with http.StatusText).
func transientHTTP(err error) bool {
	msg := err.Error()
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusTooManyRequests} {
		if strings.Contains(msg, http.StatusText(code)) {
			return true
		}
	}
	return false
}
