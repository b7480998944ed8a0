package web

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/tool"
)

// HubOptions configure a [Hub]. Zero fields take the defaults given.
type HubOptions struct {
	// EventBuffer is how many events the hub keeps (settings
	// web.eventBuffer, default 1024): a stream that falls further behind
	// gets a "gap" event. OutputTailBytes is the newest output of a call
	// kept for a page load (web.outputTailBytes, default 16 KiB).
	// RecentCalls is how many finished calls stay listed
	// (web.recentCalls, default 100).
	EventBuffer, OutputTailBytes, RecentCalls int
	// Sessions, Servers and Exclusions describe the serving process now
	// (aibuddy mcp --http: its MCP sessions with their tool sets, the
	// upstream MCP servers, the tools left out of the effective set); nil
	// shows none. They are called on each snapshot.
	Sessions   func() []Session
	Servers    func() []Upstream
	Exclusions func() []capability.Exclusion
	// Broker holds the approvals waiting for a browser (approval.via web
	// or both); nil: none are asked here. Its OnChange must call
	// [Hub.ApprovalsChanged].
	Broker *approval.Broker
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Session is one MCP session (one task) as the live page shows it.
type Session struct {
	TaskID string `json:"taskId"`
	// Active are the tools the model sees now (tools/list), Deferred the
	// tools only tool_search reaches, Activated the deferred ones it has
	// activated so far.
	Active    []string `json:"active"`
	Deferred  []string `json:"deferred,omitempty"`
	Activated []string `json:"activated,omitempty"`
}

// Upstream is one upstream MCP server with its state and the count gate's
// decision for its tools.
type Upstream struct {
	Name  string `json:"name"`
	State string `json:"state"` // connected, connecting, reconnecting, failed, ...
	Error string `json:"error,omitempty"`
	Tools int    `json:"tools"`
	// Gate is the exposure decision: "direct" (schemas listed), "deferred
	// (over discovery.perServer N)", "deferred (over discovery.total N)".
	Gate string `json:"gate"`
}

// Call is one call as the live page shows it.
type Call struct {
	ID     string `json:"id"`
	TaskID string `json:"taskId"`
	Tool   string `json:"tool"`
	Target string `json:"target,omitempty"`
	// Stage is the last stage reached (while running) or, for an error,
	// the failing stage.
	Stage     string    `json:"stage"`
	Status    string    `json:"status"` // running, ok, error
	StartedAt time.Time `json:"startedAt"`
	// DurationMS is the whole call's duration once ended.
	DurationMS int64 `json:"durationMs,omitempty"`
	// Output is the newest live output (at most OutputTailBytes);
	// OutputBytes counts all of it.
	Output      string    `json:"output"`
	OutputBytes int64     `json:"outputBytes"`
	LastBeat    time.Time `json:"lastBeat,omitzero"`
	// Summary is the first line of the result (at most 300 characters).
	Summary string `json:"summary,omitempty"`

	cancel context.CancelFunc
}

// Snapshot is the whole live view at one event sequence number: a page
// load, and a reload after a "gap" event.
type Snapshot struct {
	Seq        int64                  `json:"seq"`
	Live       bool                   `json:"live"`
	Calls      []Call                 `json:"calls"`
	Sessions   []Session              `json:"sessions"`
	Servers    []Upstream             `json:"servers"`
	Exclusions []capability.Exclusion `json:"exclusions"`
	Approvals  []approval.Request     `json:"approvals"`
}

// event is one entry of the stream: id, SSE event name, JSON data.
type event struct {
	id   int64
	kind string
	data []byte
}

// Hub is the live state of the calls a pipeline serves: a
// [pipeline.Observer] that keeps the running and recent calls, and a
// bounded ring of events for the browsers' event streams (server-sent
// events). Publishing never waits for a browser: a slow one falls behind
// in the ring and, once overtaken, gets a "gap" event and reloads the
// snapshot. Safe for concurrent use.
type Hub struct {
	o HubOptions

	mu     sync.Mutex
	seq    int64
	ring   []event
	notify chan struct{}
	calls  map[string]*Call
	order  []string // call ids, oldest first
}

var _ pipeline.Observer = (*Hub)(nil)

// NewHub returns a hub with nothing yet seen.
func NewHub(o *HubOptions) *Hub {
	h := &Hub{notify: make(chan struct{}), calls: map[string]*Call{}}
	if o != nil {
		h.o = *o
	}
	if h.o.EventBuffer <= 0 {
		h.o.EventBuffer = 1024
	}
	if h.o.OutputTailBytes <= 0 {
		h.o.OutputTailBytes = 16 << 10
	}
	if h.o.RecentCalls <= 0 {
		h.o.RecentCalls = 100
	}
	if h.o.Now == nil {
		h.o.Now = time.Now
	}
	h.ring = make([]event, h.o.EventBuffer)
	return h
}

// publishLocked appends an event and wakes the streams.
func (h *Hub) publishLocked(kind string, v any) {
	data, _ := json.Marshal(v)
	h.seq++
	h.ring[h.seq%int64(len(h.ring))] = event{id: h.seq, kind: kind, data: data}
	close(h.notify)
	h.notify = make(chan struct{})
}

// Begin implements pipeline.Observer: the call is listed as running, and
// its context can be cancelled by [Hub.Stop].
func (h *Hub) Begin(ctx context.Context, taskID string, call *tool.Call) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	c := &Call{ID: call.ID, TaskID: taskID, Tool: call.Name, Target: result.Target(call.Input), Status: "running",
		StartedAt: h.o.Now(), cancel: cancel}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[c.ID] = c
	h.order = append(h.order, c.ID)
	h.trimLocked()
	h.publishLocked("call", c)
	return ctx
}

// trimLocked drops the oldest finished calls beyond RecentCalls.
func (h *Hub) trimLocked() {
	finished := 0
	for _, id := range h.order {
		if h.calls[id].Status != "running" {
			finished++
		}
	}
	for i := 0; finished > h.o.RecentCalls && i < len(h.order); {
		id := h.order[i]
		if h.calls[id].Status == "running" {
			i++
			continue
		}
		delete(h.calls, id)
		h.order = slices.Delete(h.order, i, i+1)
		finished--
	}
}

// Stage implements pipeline.Observer.
func (h *Hub) Stage(callID string, s tool.Stage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.calls[callID]; c != nil {
		c.Stage = string(s)
		h.publishLocked("stage", map[string]string{"id": callID, "stage": string(s)})
	}
}

// Event implements pipeline.Observer: output chunks and heartbeats.
func (h *Hub) Event(callID string, e tool.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.calls[callID]
	if c == nil {
		return
	}
	switch e.Kind {
	case tool.EventStdout, tool.EventStderr:
		text := strings.ToValidUTF8(string(e.Data), "\uFFFD")
		c.OutputBytes += int64(len(e.Data))
		c.Output = tail(c.Output+text, h.o.OutputTailBytes)
		h.publishLocked("output", map[string]any{"id": callID, "stream": string(e.Kind), "text": text, "bytes": c.OutputBytes})
	case tool.EventHeartbeat, tool.EventProgress:
		c.LastBeat = e.Time
		if c.LastBeat.IsZero() {
			c.LastBeat = h.o.Now()
		}
		h.publishLocked("beat", map[string]any{"id": callID, "at": c.LastBeat, "message": e.Message})
	}
}

// End implements pipeline.Observer.
func (h *Hub) End(callID string, res *tool.Result, took time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.calls[callID]
	if c == nil {
		return
	}
	c.cancel()
	c.Status, c.DurationMS = "ok", took.Milliseconds()
	if res != nil && res.IsError {
		c.Status, c.Stage = "error", string(res.Stage)
	}
	c.Summary = summary(res.AllText())
	h.trimLocked()
	h.publishLocked("call", c)
	if c.Tool == "tool_search" {
		h.publishLocked("refresh", map[string]string{"what": "sessions"}) // activations changed
	}
}

// ApprovalsChanged publishes the approvals waiting now (the Broker's
// OnChange).
func (h *Hub) ApprovalsChanged() {
	var reqs []approval.Request
	if h.o.Broker != nil {
		reqs = h.o.Broker.Pending()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishLocked("approvals", orEmpty(reqs))
}

// Changed tells the browsers that what (sessions, servers, tools) changed
// and should be reloaded: an MCP session opened or ended, an upstream
// server changed.
func (h *Hub) Changed(what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publishLocked("refresh", map[string]string{"what": what})
}

// Stop cancels the running call id (as Ctrl-C would: execute stops its
// process group); false when no such call runs.
func (h *Hub) Stop(id string) bool {
	h.mu.Lock()
	c := h.calls[id]
	h.mu.Unlock()
	if c == nil || c.Status != "running" {
		return false
	}
	c.cancel()
	return true
}

// Snapshot returns the live view as of now.
func (h *Hub) Snapshot() Snapshot {
	s := Snapshot{Live: true, Calls: []Call{}}
	// The callbacks run outside the lock; the sequence number is taken
	// first, so events published meanwhile are applied again, harmlessly.
	if h.o.Sessions != nil {
		s.Sessions = h.o.Sessions()
	}
	if h.o.Servers != nil {
		s.Servers = h.o.Servers()
	}
	if h.o.Exclusions != nil {
		s.Exclusions = h.o.Exclusions()
	}
	if h.o.Broker != nil {
		s.Approvals = h.o.Broker.Pending()
	}
	h.mu.Lock()
	s.Seq = h.seq
	for _, id := range h.order {
		s.Calls = append(s.Calls, *h.calls[id])
	}
	h.mu.Unlock()
	s.Sessions, s.Servers, s.Exclusions, s.Approvals = orEmpty(s.Sessions), orEmpty(s.Servers), orEmpty(s.Exclusions), orEmpty(s.Approvals)
	return s
}

// since returns the events after id, and whether some after id are no
// longer in the ring (a gap), with the notification channel for the next.
func (h *Hub) since(id int64) (evs []event, gap bool, head int64, next <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	head, next = h.seq, h.notify
	if id > head {
		id = head // a stream of an earlier process: start from now
		gap = true
	}
	oldest := head - int64(len(h.ring)) + 1
	if id+1 < oldest {
		return nil, true, head, next
	}
	for n := id + 1; n <= head; n++ {
		evs = append(evs, h.ring[n%int64(len(h.ring))])
	}
	return evs, gap, head, next
}

// serveEvents is the event stream (text/event-stream) from the request's
// Last-Event-ID (or ?since=); keepAlive is the idle comment interval.
func (h *Hub) serveEvents(w http.ResponseWriter, req *http.Request, keepAlive time.Duration) {
	from := req.Header.Get("Last-Event-ID")
	if from == "" {
		from = req.URL.Query().Get("since")
	}
	cursor, err := strconv.ParseInt(from, 10, 64)
	if err != nil || cursor < 0 {
		cursor = -1 // unknown: a gap, so the page reloads the snapshot
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	write := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(2*keepAlive + 10*time.Second))
		if _, err := w.Write([]byte(s)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write("retry: 1000\n\n") {
		return
	}
	beat := time.NewTicker(keepAlive)
	defer beat.Stop()
	for {
		var gap bool
		var evs []event
		var head int64
		var next <-chan struct{}
		if cursor < 0 {
			_, _, head, next = h.since(0)
			gap = true
		} else {
			evs, gap, head, next = h.since(cursor)
		}
		var b strings.Builder
		if gap {
			b.WriteString("id: " + strconv.FormatInt(head, 10) + "\nevent: gap\ndata: {}\n\n")
			cursor = head
		}
		for _, e := range evs {
			b.WriteString("id: " + strconv.FormatInt(e.id, 10) + "\nevent: " + e.kind + "\ndata: ")
			b.Write(e.data)
			b.WriteString("\n\n")
			cursor = e.id
		}
		if b.Len() > 0 && !write(b.String()) {
			return
		}
		select {
		case <-req.Context().Done():
			return
		case <-next:
		case <-beat.C:
			if !write(": keep-alive\n\n") {
				return
			}
		}
	}
}

// tail keeps the last n bytes of s, cut at a rune start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}

// summary is the first non-empty line of text, at most 300 characters.
func summary(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if r := []rune(line); len(r) > 300 {
				return string(r[:300]) + "…"
			}
			return line
		}
	}
	return ""
}

func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
