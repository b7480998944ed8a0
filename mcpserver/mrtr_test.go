package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/internal/fixtures/fxmrtr"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
)

func TestMain(m *testing.M) {
	if args := os.Getenv(fxmrtr.EnvArgs); args != "" { // fixture fx-mrtr as an upstream process
		os.Exit(fxmrtr.Main(context.Background(), strings.Fields(args), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

var specVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// upstream connects aibuddy's MCP client, with the gateway's
// HostElicitor, to fx-mrtr processes: "fx" on 2026-07-28 (input requests
// inside the reply) and "old" on 2025-11-25 (classic elicitation/create).
func upstream(t *testing.T) (*mcpclient.Manager, *capability.Set) {
	t.Helper()
	fx := func(name, v string) mcpclient.ServerConfig {
		return mcpclient.ServerConfig{Name: name, Type: mcpclient.TypeStdio, Command: os.Args[0],
			Args: []string{"-test.run=^$"}, Env: map[string]string{fxmrtr.EnvArgs: "-versions " + v}}
	}
	m := mcpclient.Connect(context.Background(), []mcpclient.ServerConfig{fx("fx", "2026-07-28"), fx("old", "2025-11-25")},
		&mcpclient.Options{Elicit: mcpserver.HostElicitor, InitTimeout: 10 * time.Second, ShutdownTimeout: time.Second})
	t.Cleanup(func() { _ = m.Close() })
	var servers []capability.MCPServer
	for _, st := range m.Servers() {
		if st.State != mcpclient.StateConnected {
			t.Fatalf("%s: %s", st.Name, st.Summary())
		}
		servers = append(servers, capability.MCPServer{Name: st.Name, Connected: true, Tools: m.Tools()[st.Name]})
	}
	set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{MCP: servers})
	if err != nil {
		t.Fatal(err)
	}
	return m, set
}

// host is an MCP host on protocol version v talking to the gateway;
// answer (nil: no elicitation capability) answers its elicitations, and
// asked has their messages.
type host struct {
	cs    *mcp.ClientSession
	mu    sync.Mutex
	asked []string
}

func (h *host) questions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.asked...)
}

func newHost(t *testing.T, gw *mcpserver.Gateway, v string, answer func(n int) *mcp.ElicitResult) *host {
	t.Helper()
	h := &host{}
	var copts *mcp.ClientOptions
	if answer != nil {
		copts = &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.mu.Lock()
			h.asked = append(h.asked, req.Params.Message)
			n := len(h.asked)
			h.mu.Unlock()
			return answer(n), nil
		}}
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := gw.Server().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, copts).
		Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != v {
		t.Fatalf("host asked for %s, the gateway settled on %s", v, got)
	}
	h.cs = cs
	return h
}

func (h *host) call(t *testing.T, name, args string) (string, *mcp.CallToolResult) {
	t.Helper()
	res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: jsonRaw(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res
}

func jsonRaw(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

var acceptAll = func(int) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
}

// BH-069 through aibuddy mcp: the gateway passes an upstream question to
// its host, for every host version and both kinds of upstream (2026-07-28
// input requests, classic elicitation/create): elicitation/create on the
// host connection up to 2025-11-25, an input request in the reply for a
// 2026-07-28 host. Accept applies the change; decline ends the call with
// the upstream's result.
func TestGatewayPassesUpstreamQuestionsToHost(t *testing.T) {
	_, set := upstream(t)
	gw := mcpserver.NewGateway(set, nil)
	for _, v := range specVersions {
		for _, up := range []string{"fx", "old"} {
			h := newHost(t, gw, v, acceptAll)
			text, res := h.call(t, up+"__apply_change", `{"id":"c1"}`)
			if res.IsError || !strings.Contains(text, "change c1 applied to staging") || !strings.Contains(text, "The user answered: accept") {
				t.Errorf("host %s, upstream %s: %s", v, up, text)
			}
			if q := h.questions(); len(q) != 1 || q[0] != "MCP server "+up+" asks: "+fxmrtr.Question {
				t.Errorf("host %s, upstream %s: the host was asked %q", v, up, q)
			}
			d := newHost(t, gw, v, func(int) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} })
			if text, res := d.call(t, up+"__apply_change", `{"id":"c2"}`); res.IsError || !strings.Contains(text, "change c2 not applied: the user chose decline") {
				t.Errorf("host %s, upstream %s, decline: %s", v, up, text)
			}
		}
	}
}

// A 2026-07-28 host answers one question per round and sends back only
// the latest answers: the gateway carries the earlier ones in its
// requestState, so a two-round upstream call finishes after two questions,
// each asked once. A tampered upstream state surfaces as the upstream's
// error.
func TestGatewayMultiRoundHost(t *testing.T) {
	_, set := upstream(t)
	gw := mcpserver.NewGateway(set, nil)
	h := newHost(t, gw, "2026-07-28", acceptAll)
	text, res := h.call(t, "fx__apply_change", `{"id":"twice"}`)
	if res.IsError || !strings.Contains(text, "applied to staging after 2 round(s)") {
		t.Errorf("two rounds: %s", text)
	}
	if q := h.questions(); len(q) != 2 || q[0] == q[1] {
		t.Errorf("asked %q, want the two questions once each", q)
	}
	text, res = h.call(t, "fx__apply_change", `{"id":"tamper"}`)
	if !res.IsError || !strings.Contains(text, "requestState failed verification") {
		t.Errorf("tampered: %s", text)
	}
	// The next call is asked anew: no answer is replayed.
	before := len(h.questions())
	if text, _ := h.call(t, "fx__apply_change", `{"id":"c9"}`); !strings.Contains(text, "applied") || len(h.questions()) != before+1 {
		t.Errorf("a later call: %s, %d questions (was %d)", text, len(h.questions()), before)
	}
}

// A host without elicitation gets a clear Authorization-stage error, and
// nothing is answered on the user's behalf.
func TestGatewayHostWithoutElicitation(t *testing.T) {
	_, set := upstream(t)
	gw := mcpserver.NewGateway(set, nil)
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		h := newHost(t, gw, v, nil)
		for _, up := range []string{"fx", "old"} {
			text, res := h.call(t, up+"__apply_change", `{"id":"c1"}`)
			if !res.IsError || res.Meta[mcpserver.MetaStage] != "authorization" || !strings.Contains(text, "does not support form elicitation") ||
				strings.Contains(text, "applied to staging") {
				t.Errorf("host %s, upstream %s: %s (meta %v)", v, up, text, res.Meta)
			}
		}
	}
}

// Version negotiation as the gateway: a host gets the version it asks
// for when the gateway speaks it, and a host newer than the gateway
// (asking for a version from the future) is answered with the gateway's
// newest, 2026-07-28, on which the host's SDK carries on.
func TestGatewayProtocolNegotiation(t *testing.T) {
	set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpserver.NewGateway(set, nil)
	for _, c := range []struct{ ask, want string }{
		{"2099-01-01", "2026-07-28"}, {"2026-07-28", "2026-07-28"}, {"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-03-26"}, {"2024-11-05", "2024-11-05"},
	} {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := gw.Server().Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).
			Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: c.ask})
		if err != nil {
			t.Fatalf("host asking %s: %v", c.ask, err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != c.want {
			t.Errorf("host asking %s got %s, want %s", c.ask, got, c.want)
		}
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Errorf("host on %s: tools/list: %v", c.want, err)
		}
		_ = cs.Close()
		_ = ss.Close()
	}
	if mcpserver.ProtocolVersions[0] != "2026-07-28" || len(mcpserver.ProtocolVersions) != 5 {
		t.Errorf("ProtocolVersions %v", mcpserver.ProtocolVersions)
	}
}
