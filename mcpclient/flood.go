package mcpclient

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the notification bound (Options.NotificationsPerSecond and
// Options.NotificationLogInterval).
const (
	DefaultNotificationsPerSecond  = 100
	DefaultNotificationLogInterval = 10 * time.Second
)

const listChangedMethod = "notifications/tools/list_changed"

// notes bounds the notifications one server may have handled (issue 10: a
// server sending notifications/message, progress or list_changed in a
// tight loop kept aibuddy at 115% CPU for as long as it lasted, nearly all
// of it the SDK decoding each message). The excess is dropped from the
// byte stream before the SDK reads it: from a stdio server's stdout, from
// an HTTP server's JSON bodies and event streams. A dropped list_changed
// still marks the server's tools as changed, so the debounced refresh
// happens once the flood ends.
type notes struct {
	lim      *rate.Limiter
	perSec   int
	interval time.Duration
	log      *slog.Logger
	server   string
	signal   func() // marks the tools as changed (conn.signal)

	received, dropped atomic.Int64

	mu        sync.Mutex
	lastLog   time.Time
	unlogged  int64 // dropped since the last log line
	lastTotal int64
}

func newNotes(server string, perSec int, interval time.Duration, log *slog.Logger, signal func()) *notes {
	if perSec <= 0 {
		perSec = DefaultNotificationsPerSecond
	}
	if interval <= 0 {
		interval = DefaultNotificationLogInterval
	}
	return &notes{lim: rate.NewLimiter(rate.Limit(perSec), perSec), perSec: perSec, interval: interval,
		log: log, server: server, signal: signal}
}

// admit counts one notification and reports whether it may be handled.
func (n *notes) admit(method string) bool {
	n.received.Add(1)
	if n.lim.Allow() {
		return true
	}
	n.dropped.Add(1)
	if method == listChangedMethod {
		n.signal() // the change is kept, only the message goes
	}
	n.mu.Lock()
	n.unlogged++
	now := time.Now()
	if now.Sub(n.lastLog) < n.interval {
		n.mu.Unlock()
		return false
	}
	count := n.unlogged
	n.unlogged, n.lastLog = 0, now
	n.mu.Unlock()
	n.log.Warn("mcp server floods notifications; the excess is dropped", "server", n.server,
		"dropped", count, "dropped_total", n.dropped.Load(), "limit_per_second", n.perSec,
		"setting", "mcp.notificationsPerSecond")
	return false
}

var notificationsPrefix = []byte(`"notifications/`)

// line is the byte-stream filter: it returns nil for a notification over
// the bound, line (one JSON-RPC message) otherwise. Only a line that mentions "notifications/" is
// decoded, and then only its id and method.
func (n *notes) line(line []byte) []byte {
	if !bytes.Contains(line, notificationsPrefix) {
		return line
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &head) != nil || head.ID != nil || head.Method == "" {
		return line // a request, a response, a batch or not JSON: the SDK's to judge
	}
	if n.admit(head.Method) {
		return line
	}
	return nil
}
