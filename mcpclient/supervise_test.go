package mcpclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// Issue 13, item 1: the server's own requests (ping, roots/list), sent
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
			r := callName(t, m, sc.Name+"__pokes", `{"wait":2}`)
			mustText(t, r, "ping: ok")
			mustText(t, r, "roots/list: ok, 0 roots")
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
