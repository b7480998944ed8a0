package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// aibuddy mcp --http negotiates up and down: a host offering 2026-07-28
// is served statelessly on that version (no session id, the token still
// checked on every request), one on an older version gets a session on
// its version; the stateless requests of one user share one gateway, so
// a second 2026-07-28 host of that user adds none.
func TestHTTPProtocolVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := testGateways(t, ctx)
	ts := httptest.NewServer(g.handler(testHTTPOptions()))
	defer ts.Close()
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
		if _, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: v}); err == nil {
			t.Errorf("%s: connected without the token", v)
		}
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{token: testToken}}}, &mcp.ClientSessionOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != v {
			t.Errorf("host asked for %s, got %s", v, got)
		}
		if stateless := cs.ID() == ""; stateless != (v == "2026-07-28") {
			t.Errorf("%s: session id %q", v, cs.ID())
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ls", Arguments: map[string]any{"path": "."}})
		if err != nil || res.IsError {
			t.Errorf("%s: ls: %v %+v", v, err, res)
		}
		_ = cs.Close()
	}
	g.mu.Lock()
	before := slices.Clone(g.all)
	g.mu.Unlock()
	client := mcp.NewClient(&mcp.Implementation{Name: "host2", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: testToken}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, gw := range g.all {
		if !slices.Contains(before, gw) {
			t.Error("a second 2026-07-28 host of the same user got a gateway of its own")
		}
	}
}
