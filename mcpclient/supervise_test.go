package mcpclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/proctest"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// guard is a hang guard for one test step: it bounds a wait that events
// end, it never times a behaviour.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// callName runs the tool named name through the Manager.
func callName(t *testing.T, m *mcpclient.Manager, name, input string) *tool.Result {
	t.Helper()
	if input == "" {
		input = "{}"
	}
	return m.Call(guard(t), &tool.Call{ID: "c-" + name, Name: name, Input: json.RawMessage(input)})
}

// states records each server's state at every change notification.
type states struct {
	mu  sync.Mutex
	seq map[string][]mcpclient.State
	ch  chan struct{}
}

func watchStates(t *testing.T, m *mcpclient.Manager) *states {
	s := &states{seq: map[string][]mcpclient.State{}, ch: make(chan struct{}, 100)}
	t.Cleanup(m.Subscribe(func() {
		s.mu.Lock()
		for _, st := range m.Servers() {
			q := s.seq[st.Name]
			if len(q) == 0 || q[len(q)-1] != st.State {
				s.seq[st.Name] = append(q, st.State)
			}
		}
		s.mu.Unlock()
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}))
	return s
}

func (s *states) of(name string) []mcpclient.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mcpclient.State(nil), s.seq[name]...)
}

// until waits for a change notification after which cond holds.
func (s *states) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := guard(t)
	for !cond() {
		select {
		case <-s.ch:
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		}
	}
}

func mustText(t *testing.T, r *tool.Result, want string) {
	t.Helper()
	if r.IsError || !strings.Contains(r.AllText(), want) {
		t.Fatalf("want a result with %q, got %+v", want, r)
	}
}

func mustFail(t *testing.T, r *tool.Result, want ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want an error with %q, got %+v", want, r)
	}
	for _, w := range want {
		if !strings.Contains(r.AllText(), w) {
			t.Fatalf("error lacks %q: %s", w, r.AllText())
		}
	}
}

// Issue 13, item 1: the server's own requests (ping and roots/list answered,
// elicitation/create refused with a JSON-RPC error: aibuddy declares none), sent
// outside any call, are answered, and a tools/list_changed sent outside a
// call arrives; over streamable HTTP (the standalone GET stream the SDK
// opens through its session hook) and stdio alike.
func TestServerRequestsOutsideACall(t *testing.T) {
	fx := startFxHTTP(t)
	for _, sc := range []mcpclient.ServerConfig{fx.server("web"), fxStdio("local")} {
		t.Run(sc.Type, func(t *testing.T) {
			m := connect(t, nil, sc)
			s := watchStates(t, m)
			mustText(t, callName(t, m, sc.Name+"__poke", ""), "poked")
			r := callName(t, m, sc.Name+"__pokes", `{"wait":3}`)
			mustText(t, r, "ping: ok")
			mustText(t, r, "roots/list: ok, 0 roots")
			mustText(t, r, "elicitation/create: error -32602: client does not support elicitation")
			s.until(t, "gamma listed after tools/list_changed", func() bool {
				_, ok := m.Name(sc.Name, "gamma")
				return ok
			})
			mustText(t, callName(t, m, sc.Name+"__gamma", ""), "gamma")
		})
	}
}

// The same against the reference server, server-everything's
// streamableHttp transport (a Node process): the simulated log messages
// that toggle-simulated-logging starts are sent to the session, outside
// any call, so they come only on the standalone GET stream.
func TestServerEverythingStreamableHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node")
	}
	bin := nodeBin(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(filepath.Join(bin, "mcp-server-everything"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "listening on port") {
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	logs := make(chan string, 100)
	logger := slog.New(recordHandler{ch: logs})
	m := connect(t, &mcpclient.Options{Logger: logger, InitTimeout: 20 * time.Second},
		mcpclient.ServerConfig{Name: "everything", Type: mcpclient.TypeHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)})
	if st := status(t, m, "everything"); st.State != mcpclient.StateConnected {
		t.Fatalf("everything: %s", st.Summary())
	}
	mustText(t, callName(t, m, "everything__toggle-simulated-logging", ""), "")
	ctx := guard(t)
	for {
		select {
		case msg := <-logs:
			if strings.Contains(msg, "mcp server message") && strings.Contains(msg, "SessionId") {
				t.Logf("got %s", msg)
				return
			}
		case <-ctx.Done():
			t.Fatal("no notifications/message from outside a call arrived")
		}
	}
}

// recordHandler sends each log record, as text, to ch (dropping when
// full).
type recordHandler struct{ ch chan string }

func (recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	select {
	case h.ch <- b.String():
	default:
	}
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// BH-061: fx-http restarts (its session table emptied); the 404 for the
// old session id opens a new session. A call of a tool not marked
// idempotent or read-only is not replayed ("server restarted mid-call;
// not retried") and the next call works; a read-only one is retried once;
// a second 404 straight after the fresh session fails the call instead of
// looping. The status goes connected -> reconnecting -> connected.
func TestHTTPSessionRestart(t *testing.T) {
	fx := startFxHTTP(t)
	m := connect(t, nil, fx.server("fx"))
	s := watchStates(t, m)
	mustText(t, callName(t, m, "fx__echo", `{"s":"a"}`), "a")

	fx.control("restart")
	mustFail(t, callName(t, m, "fx__echo", `{"s":"b"}`), "server restarted mid-call; not retried", "HTTP 404")
	mustText(t, callName(t, m, "fx__echo", `{"s":"c"}`), "c")
	if got := s.of("fx"); fmt.Sprint(got) != "[reconnecting connected]" {
		t.Errorf("states after the restart: %v", got)
	}
	if n := fx.control("state").Calls["echo"]; n != 2 {
		t.Errorf("echo ran %d times on the server, want 2 (a and c; b never replayed)", n)
	}

	// A real process restart on the same port, then read-only and
	// idempotent tools: retried once on the new session.
	fx.restartProcess()
	mustText(t, callName(t, m, "fx__alpha", ""), "alpha from generation 1")
	fx.control("restart")
	mustText(t, callName(t, m, "fx__beta", ""), "beta from generation 2")

	// Two 404s in a row: the retry on the fresh session fails too.
	fx.control("flap?tool=alpha&n=2")
	mustFail(t, callName(t, m, "fx__alpha", ""), "lost the connection again straight after it was restored; not retried further")
	s.until(t, "connected again after the double 404", func() bool { return status(t, m, "fx").State == mcpclient.StateConnected })
	mustText(t, callName(t, m, "fx__alpha", ""), "alpha from generation 4")
	if st := status(t, m, "fx"); st.ToolsLoaded == 0 || !strings.HasPrefix(st.Summary(), "connected") {
		t.Errorf("after the restarts: %s", st.Summary())
	}
}

// BH-062: a clean close DELETEs the session, so a single-session server
// accepts the next initialize; Reconnect reports success only after a
// real round trip with the tools routed again.
func TestHTTPSingleSessionReconnect(t *testing.T) {
	fx := startFxHTTP(t, "-single")
	m := mcpclient.Connect(guard(t), []mcpclient.ServerConfig{fx.server("fx")}, &mcpclient.Options{InitTimeout: 5 * time.Second})
	mustText(t, callName(t, m, "fx__alpha", ""), "alpha")
	first := fx.control("state").Live
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	st := fx.control("state")
	if len(first) != 1 || fmt.Sprint(st.Deletes) != fmt.Sprint(first) || len(st.Live) != 0 {
		t.Fatalf("clean close: live before %v, deletes %v, live after %v", first, st.Deletes, st.Live)
	}
	m = connect(t, nil, fx.server("fx"))
	mustText(t, callName(t, m, "fx__alpha", ""), "alpha")

	// The server restarts; the operator reconnects: a new session id,
	// tools/list, routing rebuilt.
	fx.restartProcess()
	if err := m.Reconnect(guard(t), "fx"); err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
	live := fx.control("state").Live
	if len(live) != 1 || live[0] == first[0] {
		t.Errorf("after Reconnect the server holds sessions %v (first was %v)", live, first)
	}
	mustText(t, callName(t, m, "fx__alpha", ""), "alpha")
	// A reconnect to a server that refuses the session fails, and says so.
	fx.control("initfail?code=400&body=" + url.QueryEscape(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"app not enabled for MCP"}}`))
	if err := m.Reconnect(guard(t), "fx"); err == nil || !strings.Contains(err.Error(), "app not enabled for MCP") {
		t.Errorf("Reconnect to a refusing server: %v", err)
	}
	if st := status(t, m, "fx"); st.State != mcpclient.StateFailed || len(m.Tools()["fx"]) != 0 {
		t.Errorf("after a failed reconnect: %s, %d tools", st.Summary(), len(m.Tools()["fx"]))
	}
}

// BH-067 (b)-(d): 503 on initialize is retried on the same transport; a
// 400 with a JSON-RPC body fails with the server's message verbatim; an
// optional GET stream answered 405 or 404 leaves a working POST-only
// connection, with no error.
func TestHTTPConnectAnswers(t *testing.T) {
	fx := startFxHTTP(t)
	fx.control("initfail?code=503&count=2")
	m := connect(t, &mcpclient.Options{RestartBackoff: time.Millisecond}, fx.server("busy"))
	if st := status(t, m, "busy"); st.State != mcpclient.StateConnected {
		t.Errorf("after two 503s: %s", st.Summary())
	}

	fx.control("initfail?code=400&body=" + url.QueryEscape(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"app not enabled for MCP"}}`))
	m = connect(t, nil, fx.server("refused"))
	if st := status(t, m, "refused"); st.State != mcpclient.StateFailed || !strings.Contains(st.Error, "app not enabled for MCP") {
		t.Errorf("400 with a JSON-RPC body: %s", st.Summary())
	}

	for _, code := range []int{405, 404} {
		fx.control("get?code=" + strconv.Itoa(code))
		m = connect(t, nil, fx.server("postonly"))
		if st := status(t, m, "postonly"); st.State != mcpclient.StateConnected || st.Error != "" {
			t.Errorf("GET %d: %s", code, st.Summary())
		}
		mustText(t, callName(t, m, "postonly__echo", `{"s":"p"}`), "p")
		if got := fx.control("state").RefusedGET; len(got) == 0 || got[len(got)-1] != code {
			t.Errorf("GET %d: the server refused %v", code, got)
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}
}

// BH-063: fx-stdio's quit exits 0 while answering. Policy (a): the server
// is respawned at once, both later whoami calls succeed with the same new
// pid, and its tools stay registered. Closing on purpose never respawns,
// and after Close no child of ours remains (/proc).
func TestStdioRespawn(t *testing.T) {
	m := mcpclient.Connect(guard(t), []mcpclient.ServerConfig{fxStdio("fx")}, &mcpclient.Options{InitTimeout: 10 * time.Second, ShutdownTimeout: time.Second})
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = m.Close()
		}
	})
	s := watchStates(t, m)
	pid1 := callName(t, m, "fx__whoami", "").AllText()
	mustText(t, callName(t, m, "fx__quit", ""), "bye from "+pid1)
	pid2 := callName(t, m, "fx__whoami", "")
	mustText(t, pid2, "")
	pid3 := callName(t, m, "fx__whoami", "")
	if pid2.AllText() == pid1 || pid3.AllText() != pid2.AllText() {
		t.Fatalf("whoami: %s, then after quit %s and %s: want one new pid", pid1, pid2.AllText(), pid3.AllText())
	}
	if _, ok := m.Name("fx", "whoami"); !ok || len(m.Tools()["fx"]) == 0 {
		t.Fatal("the respawned server's tools are not registered")
	}
	s.until(t, "connected after the respawn", func() bool { return status(t, m, "fx").State == mcpclient.StateConnected })
	if got := fmt.Sprint(s.of("fx")); got != "[reconnecting connected]" {
		t.Errorf("states: %s", got)
	}
	if kids := children(t); len(kids) != 1 || kids[0] != pid2.AllText() {
		t.Errorf("children of the test while the server runs: %v, want only %s", kids, pid2.AllText())
	}
	closed = true
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("children of the test after Close: %v", kids)
	}
	if st := status(t, m, "fx"); st.State != mcpclient.StateDisconnected || st.Error != "closed by the client" {
		t.Errorf("after Close: %s", st.Summary())
	}
}

// A crash whose respawn fails too: calls in the backoff gap fail at once,
// naming the exit code and the tail of stderr; the tools stay registered
// while the server is reconnecting.
func TestStdioRespawnGap(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "crash")
	sc := fxStdio("fx")
	sc.Env[fxEnv] = "stdio -crash-at-start " + marker
	m := connect(t, &mcpclient.Options{RestartBackoff: time.Hour}, sc)
	s := watchStates(t, m)
	mustText(t, callName(t, m, "fx__echo", `{"s":"up"}`), "up")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mustFail(t, callName(t, m, "fx__crash", ""), "exited with status 3", "crashing on request")
	s.until(t, "the first respawn attempt failed", func() bool {
		return strings.Contains(status(t, m, "fx").Error, "attempt 1 of 5 failed")
	})
	st := status(t, m, "fx")
	if st.State != mcpclient.StateReconnecting || len(m.Tools()["fx"]) == 0 {
		t.Fatalf("in the gap: %s, %d tools", st.Summary(), len(m.Tools()["fx"]))
	}
	mustFail(t, callName(t, m, "fx__echo", `{"s":"gap"}`), "is reconnecting", "exited with status 3", "crashing at start")
}

// children lists the pids of this process's live children
// (proctest.Children: from /proc, zombies left out).
func children(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range proctest.Children(os.Getpid()) {
		out = append(out, strconv.Itoa(p.PID))
	}
	return out
}

// Options.CallTimeout runs while the server is silent: a call that sends
// progress notifications (heartbeats) outlives it; a silent one ends with
// an error naming the bound and its setting.
func TestCallTimeoutHeartbeats(t *testing.T) {
	fx := startFxHTTP(t)
	m := connect(t, &mcpclient.Options{CallTimeout: time.Second}, fx.server("fx"), fxStdio("local"))
	for _, name := range []string{"fx", "local"} {
		mustText(t, callName(t, m, name+"__stall", `{"ms":2500,"heartbeat_ms":50}`), "stalled 2500 ms")
		mustFail(t, callName(t, m, name+"__stall", `{"ms":0}`), "timed out: no answer and no progress for 1s", "mcp.callTimeout")
		mustText(t, callName(t, m, name+"__echo", `{"s":"after"}`), "after")
	}
}

// A bad frame fails that call, not the server: a result over
// Options.MaxFrameBytes becomes an error for its call; a line that is not
// JSON-RPC, after the handshake, is dropped. The server stays connected.
func TestBadFrames(t *testing.T) {
	fx := startFxHTTP(t)
	m := connect(t, &mcpclient.Options{MaxFrameBytes: 1 << 20}, fx.server("fx"), fxStdio("local"))
	for _, name := range []string{"fx", "local"} {
		mustFail(t, callName(t, m, name+"__big", `{"bytes":2000000}`), "over the 1048576-byte frame limit", "mcp.upstreamMaxFrameBytes")
		mustText(t, callName(t, m, name+"__big", `{"bytes":1000}`), "xxxx")
		if st := status(t, m, name); st.State != mcpclient.StateConnected {
			t.Errorf("%s after an oversized result: %s", name, st.Summary())
		}
	}
	mustText(t, callName(t, m, "local__garbage", ""), "after garbage")
	mustText(t, callName(t, m, "local__echo", `{"s":"still"}`), "still")
	if st := status(t, m, "local"); st.State != mcpclient.StateConnected {
		t.Errorf("after a garbage line: %s", st.Summary())
	}
}

// BH-067 (e): a url-only entry whose server speaks only legacy SSE (POST
// answered 405) falls back to SSE, and the choice is kept for the
// server's reconnects; a pinned "type": "http" never falls back. When the
// fallback fails too, both errors are reported, the original first.
func TestHTTPFallbackToSSE(t *testing.T) {
	legacy := startFxHTTP(t, "-sse")
	parse := func(entry string) mcpclient.ServerConfig {
		servers, err := mcpclient.ParseServersWith(map[string]json.RawMessage{"old": json.RawMessage(entry)}, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return servers[0]
	}
	m := connect(t, nil, parse(`{"url":"`+legacy.URL+`"}`))
	if st := status(t, m, "old"); st.State != mcpclient.StateConnected || st.Type != "sse" {
		t.Fatalf("url only, legacy server: %s (%s)", st.Summary(), st.Type)
	}
	mustText(t, callName(t, m, "old__echo", `{"s":"sse"}`), "sse")
	if err := m.Reconnect(guard(t), "old"); err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
	if st := status(t, m, "old"); st.Type != "sse" {
		t.Errorf("after Reconnect: type %s", st.Type)
	}

	m = connect(t, nil, parse(`{"type":"http","url":"`+legacy.URL+`"}`))
	if st := status(t, m, "old"); st.State != mcpclient.StateFailed || strings.Contains(st.Error, "legacy SSE") {
		t.Errorf("pinned http: %s", st.Summary())
	}

	// Neither transport answers: a plain handler refusing everything.
	nothing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no MCP here", http.StatusMethodNotAllowed)
	}))
	t.Cleanup(nothing.Close)
	m = connect(t, nil, parse(`{"url":"`+nothing.URL+`"}`))
	st := status(t, m, "old")
	if i, j := strings.Index(st.Error, "streamable HTTP: "), strings.Index(st.Error, "; then legacy SSE: "); st.State != mcpclient.StateFailed || i != 0 || j < 0 {
		t.Errorf("both failing: %s", st.Summary())
	}
}
