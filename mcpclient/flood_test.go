package mcpclient_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// records keeps the log records a Manager writes.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Message)
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// Issue 10, item 4: a server that sends 60,000 notifications in a tight
// loop has at most its bound handled (a burst plus the rate times how long
// the flood lasted), the rest dropped and counted in its status, one log
// line per interval; a call answered in the middle of the flood comes back,
// and the flood's own call returns.
func TestNotificationFloodBounded(t *testing.T) {
	const n, perSec = 60000, 50
	logs := &records{}
	m := connect(t, &mcpclient.Options{NotificationsPerSecond: perSec, NotificationLogInterval: time.Hour,
		ListChangedDebounce: 20 * time.Millisecond, Logger: slog.New(logs)},
		scriptedServer("flood", "scripted", `[{"name":"flood","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}]`))
	flood, echo := findTool(t, m, "flood", "flood__flood"), findTool(t, m, "flood", "flood__echo")

	start := time.Now()
	floodDone := make(chan *tool.Result, 1)
	go func() { floodDone <- call(t, flood, `{"n":60000}`) }()
	// The server answers echo only once half the flood is out, and sends
	// the rest only after that answer: this call is answered mid-flood.
	if r := call(t, echo, `{}`); r.IsError || r.AllText() != "echo" {
		t.Fatalf("call during the flood: %+v", r)
	}
	r := <-floodDone
	elapsed := time.Since(start)
	if r.IsError || r.AllText() != "flooded 60000" {
		t.Fatalf("flood call: %+v", r)
	}

	st := status(t, m, "flood")
	if st.Notifications != n {
		t.Errorf("Notifications = %d, want %d", st.Notifications, n)
	}
	handled := st.Notifications - st.NotificationsDropped
	bound := int64(perSec + perSec*elapsed.Seconds() + 1)
	if handled > bound || st.NotificationsDropped == 0 {
		t.Errorf("handled %d (dropped %d) in %v, want at most %d", handled, st.NotificationsDropped, elapsed, bound)
	}
	if !strings.Contains(st.Summary(), "notifications dropped (over mcp.notificationsPerSecond)") {
		t.Errorf("Summary = %q", st.Summary())
	}
	if c := logs.count("mcp server floods notifications; the excess is dropped"); c != 1 {
		t.Errorf("%d log lines about the drops, want 1 per interval", c)
	}
	if st.State != mcpclient.StateConnected {
		t.Errorf("state %s: %s", st.State, st.Error)
	}
}

// A list_changed dropped by the bound still counts as a change: the
// server's tools are refreshed once, after the debounce.
func TestDroppedListChangedStillRefreshes(t *testing.T) {
	m := connect(t, &mcpclient.Options{NotificationsPerSecond: 1, ListChangedDebounce: 20 * time.Millisecond},
		scriptedServer("chg", "scripted", `[{"name":"change_in_flood","inputSchema":{"type":"object"}}]`))
	changed := make(chan struct{}, 1)
	cancel := m.Subscribe(func() {
		if _, ok := m.Name("chg", "beta"); ok {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer cancel()
	if r := call(t, findTool(t, m, "chg", "chg__change_in_flood"), `{}`); r.IsError {
		t.Fatalf("%+v", r)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second): // a hang guard, not a timing claim
		t.Fatalf("tools never refreshed: %s", status(t, m, "chg").Summary())
	}
	if st := status(t, m, "chg"); st.NotificationsDropped < 200 {
		t.Errorf("dropped %d of %d, want the list_changed ones among them", st.NotificationsDropped, st.Notifications)
	}
}

// Over streamable HTTP the bound holds as well: progress notifications
// past it never reach the call's event sink.
func TestNotificationFloodBoundedOverHTTP(t *testing.T) {
	const n, perSec = 3000, 20
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "flood", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			for i := range n {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Message: "working"})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "flooded"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	servers, err := mcpclient.ParseServers(map[string]json.RawMessage{"web": json.RawMessage(`{"url":"` + hs.URL + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	m := connect(t, &mcpclient.Options{NotificationsPerSecond: perSec}, servers...)
	var events atomic.Int64
	start := time.Now()
	r := m.Call(context.Background(), &tool.Call{Name: "web__flood", Input: json.RawMessage(`{}`),
		Events: func(tool.Event) { events.Add(1) }})
	elapsed := time.Since(start)
	if r.IsError || r.AllText() != "flooded" {
		t.Fatalf("flood call: %+v", r)
	}
	st := status(t, m, "web")
	bound := int64(perSec + perSec*elapsed.Seconds() + 1)
	if st.NotificationsDropped == 0 || events.Load() > bound || st.Notifications-st.NotificationsDropped > bound {
		t.Errorf("%d events, %d of %d dropped in %v; want at most %d handled", events.Load(), st.NotificationsDropped, st.Notifications, elapsed, bound)
	}
}
