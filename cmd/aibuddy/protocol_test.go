package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxmrtr"
)

// fxSettings writes settings naming fx-mrtr (this test binary) as the
// upstream "fx", speaking 2026-07-28, and "old", speaking 2025-11-25.
func fxSettings(t *testing.T) string {
	t.Helper()
	fx := func(v string) map[string]any {
		return map[string]any{"command": os.Args[0], "args": []string{"-test.run=^$"},
			"env": map[string]string{fxmrtr.EnvArgs: "-versions " + v}}
	}
	doc := map[string]any{"mcpServers": map[string]any{"fx": fx("2026-07-28"), "old": fx("2025-11-25")},
		"mcp": map[string]any{"initTimeout": "20s", "startupWait": "20s"}}
	b, _ := json.Marshal(doc)
	p := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// asking is a host's elicitation handler that accepts (confirming
// upstream questions and any approval aibuddy asks for) and keeps the
// messages.
type asking struct {
	mu   sync.Mutex
	msgs []string
}

func (a *asking) handler(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.msgs = append(a.msgs, req.Params.Message)
	a.mu.Unlock()
	if strings.HasPrefix(req.Params.Message, "Approve this action?") {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
}

func (a *asking) asked(prefix string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, m := range a.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// The version matrix with real processes on both sides of aibuddy: a
// host on each protocol version talks to `aibuddy mcp` (stdio, and
// --http), which talks to fx-mrtr upstreams on 2026-07-28 and 2025-11-25.
// The host gets the version it asked for; apply_change's question reaches
// the host (elicitation, or an input request in the reply for a
// 2026-07-28 host) and the change is applied after the answer (BH-069).
func TestMCPProtocolVersionsEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ws := t.TempDir()
	cfg := fxSettings(t)
	out, err := exec.CommandContext(ctx, bin, "tools", "--json", "--config", cfg, "--workspace", ws).Output()
	var doc struct {
		MCPServers []struct{ Name, Protocol string }
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("aibuddy tools: %v %s", err, out)
	}
	for _, s := range doc.MCPServers {
		if want := map[string]string{"fx": "2026-07-28", "old": "2025-11-25"}[s.Name]; s.Protocol != want {
			t.Errorf("aibuddy tools: %s speaks %q, want %q", s.Name, s.Protocol, want)
		}
	}
	if err != nil || len(doc.MCPServers) != 2 {
		t.Errorf("aibuddy tools: %v, servers %+v", err, doc.MCPServers)
	}
	srv := startHTTP(t, []string{"AIBUDDY_TOKEN=" + e2eToken}, "--workspace", ws, "--config", cfg)
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		for _, over := range []string{"stdio", "http"} {
			a := &asking{}
			client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: a.handler})
			var tr mcp.Transport
			if over == "stdio" {
				cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg)
				cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
				tr = &mcp.CommandTransport{Command: cmd}
			} else {
				tr = &mcp.StreamableClientTransport{Endpoint: srv.url, HTTPClient: &http.Client{Transport: bearer{e2eToken}}}
			}
			cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatalf("%s over %s: %v", v, over, err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Errorf("%s over %s: settled on %s", v, over, got)
			}
			for _, up := range []string{"fx", "old"} {
				res := callTool(t, ctx, cs, up+"__apply_change", map[string]any{"id": "c1"})
				if out := text(res); res.IsError || !strings.Contains(out, "change c1 applied to staging") {
					t.Errorf("%s over %s, upstream %s: %s", v, over, up, out)
				}
				if n := a.asked("MCP server " + up + " asks: " + fxmrtr.Question); n != 1 {
					t.Errorf("%s over %s, upstream %s: the host was asked %d times: %q", v, over, up, n, a.msgs)
				}
			}
			_ = cs.Close()
		}
	}
}
