package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildCache is XDG_CACHE_HOME as it was before TestMain moved it to a
// folder of the run (package variables are set before TestMain runs): the
// fixture is built with the usual Go build cache, not an empty one.
var buildCache, buildCacheSet = os.LookupEnv("XDG_CACHE_HOME")

// fxtoolsOnce builds the fixture MCP server internal/fixtures/fxtools once
// per test binary.
var fxtoolsOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "aibuddy-fxtools-")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "fxtools")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", p, "./internal/fixtures/fxtools")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+buildCache)
	if !buildCacheSet {
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "XDG_CACHE_HOME=") })
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building fxtools: %v\n%s", err, out)
	}
	return p, nil
})

func fxtools(t *testing.T) string {
	t.Helper()
	p, err := fxtoolsOnce()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// gate is a named pipe the held fixture servers open before serving; open
// lets them all go at once.
type gate struct {
	path string
	f    *os.File
}

func newGate(t *testing.T) *gate {
	t.Helper()
	g := &gate{path: filepath.Join(t.TempDir(), "gate")}
	if err := syscall.Mkfifo(g.path, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if g.f != nil {
			g.f.Close()
		}
	})
	return g
}

// open lets every held server go: O_RDWR does not block and counts as the
// writer their O_RDONLY open waits for. It stays open, so a server that
// reaches its open later goes at once too.
func (g *gate) open(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(g.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.f = f
}

// fxServer is one fixture server's mcpServers entry; held ones wait for g.
func fxServer(bin, name string, tools int, g *gate) map[string]any {
	args := []string{"-name", name, "-tools", strconv.Itoa(tools)}
	if g != nil {
		args = append(args, "-wait", g.path)
	}
	return map[string]any{"command": bin, "args": args}
}

// gatesHost is a host connected to `aibuddy mcp` that counts the
// notifications/tools/list_changed it receives.
type gatesHost struct {
	cs      *mcp.ClientSession
	changed chan struct{}
	stderr  *lockedBuilder
}

func startGatesHost(t *testing.T, ctx context.Context, servers map[string]any, dataDir string, mcpSettings map[string]any) *gatesHost {
	t.Helper()
	doc := map[string]any{"mcpServers": servers, "mcp": mcpSettings}
	b, _ := json.Marshal(doc)
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	h := &gatesHost{changed: make(chan struct{}, 1024), stderr: &lockedBuilder{}}
	cmd := exec.Command(bin, "mcp", "--workspace", t.TempDir(), "--config", cfg, "--data-dir", dataDir, "--verbose")
	cmd.Stderr = h.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-gates", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { h.changed <- struct{}{} }})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	h.cs = cs
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("aibuddy stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

var statedCount = regexp.MustCompile(`Search the (\d+) tools`)

// listing is one tools/list answer as the gates tests read it.
type listing struct {
	names  map[string]bool
	search string // tool_search's description, "" when not listed
	stated int    // the count it states, -1 when not listed
	mcp    int    // tools of fixture servers listed directly
}

func (h *gatesHost) list(t *testing.T, ctx context.Context) listing {
	t.Helper()
	lt, err := h.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := listing{names: map[string]bool{}, stated: -1}
	for _, tl := range lt.Tools {
		l.names[tl.Name] = true
		if strings.Contains(tl.Name, "__") {
			l.mcp++
		}
		if tl.Name == "tool_search" {
			l.search = tl.Description
			m := statedCount.FindStringSubmatch(tl.Description)
			if m == nil {
				t.Fatalf("tool_search states no count: %q", tl.Description)
			}
			l.stated, _ = strconv.Atoi(m[1])
		}
	}
	return l
}

// untilSettled waits, list_changed by list_changed, for a list that done
// accepts, and returns it with how many notifications came.
func (h *gatesHost) untilSettled(t *testing.T, ctx context.Context, done func(listing) bool) (listing, int) {
	t.Helper()
	notes := 0
	for {
		l := h.list(t, ctx)
		if done(l) {
			return l, notes
		}
		select {
		case <-h.changed:
			notes++
		case <-ctx.Done():
			t.Fatalf("the tool list did not settle after %d list_changed: tool_search states %d, listed %d MCP tools directly: %q",
				notes, l.stated, l.mcp, l.search)
		}
	}
}

func searchEvidence(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.Meta["aibuddy/evidence"])
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("tool_search evidence %s: %v", b, err)
	}
	return ev
}

// TestSeventyServersSettleWithToolSearch (issue 13, done-when): through
// `aibuddy mcp` with 70 configured fixture servers (real stdio processes,
// 6 tools each), 35 of them held back until after the host's first
// tools/list. The first list already holds tool_search (70 configured
// servers bring at least 70 tools > the total gate of 30) and no MCP tool
// directly; the held servers join after it, the host gets
// notifications/tools/list_changed as the count tool_search states changes
// (fewer than one per server: they are taken together), and the settled
// list's tool_search states all 420 tools, its index holds every one of
// them (select: of all 420 names matches 420), a query finds the ledger of
// a held server, and that tool runs. The data folder then keeps each
// server's count for the next start.
func TestSeventyServersSettleWithToolSearch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	t0 := time.Now()
	fx := fxtools(t)
	t.Log("fixture built", time.Since(t0))
	g := newGate(t)
	const n, each, held = 70, 6, 35
	servers := map[string]any{}
	var all []string
	for i := range n {
		name := fmt.Sprintf("fx%02d", i)
		var wait *gate
		if i >= n-held {
			wait = g
		}
		servers[name] = fxServer(fx, name, each, wait)
		for j := range each - 1 {
			all = append(all, fmt.Sprintf("%s__echo%d", name, j))
		}
		all = append(all, name+"__ledger")
	}
	data := t.TempDir()
	h := startGatesHost(t, ctx, servers, data, map[string]any{"initTimeout": "150s", "startupWait": "300ms"})

	first := h.list(t, ctx)
	t.Log("first list", time.Since(t0))
	if first.stated < 0 || !first.names["call_tool"] || !first.names["read_file"] {
		t.Fatalf("first tools/list: want the built-in tools, tool_search and call_tool: %v", first.names)
	}
	if first.mcp != 0 || first.stated > (n-held)*each {
		t.Fatalf("first tools/list: %d MCP tools listed directly, tool_search states %d (at most %d servers could have joined)",
			first.mcp, first.stated, n-held)
	}
	if !strings.Contains(first.search, "still connecting") {
		t.Errorf("first tool_search description does not say servers are still connecting: %q", first.search)
	}
	g.open(t)
	settled, notes := h.untilSettled(t, ctx, func(l listing) bool {
		return l.stated == n*each && !strings.Contains(l.search, "still connecting")
	})
	if settled.mcp != 0 {
		t.Errorf("settled list has %d MCP tools directly, want every one deferred", settled.mcp)
	}
	if notes == 0 || notes >= held {
		t.Errorf("%d notifications/tools/list_changed while %d servers joined: want at least one, fewer than one per server", notes, held)
	}
	t.Logf("first list stated %d tools; settled at %d after %d list_changed (%v)", first.stated, settled.stated, notes, time.Since(t0))

	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search",
		Arguments: map[string]any{"query": "read the ledger of server fx69", "max_results": 1}})
	if err != nil || res.IsError {
		t.Fatalf("tool_search: %v %s", err, text(res))
	}
	if act := searchEvidence(t, res)["activated"]; fmt.Sprint(act) != "[fx69__ledger]" {
		t.Errorf("a query for the ledger of held server fx69 loaded %v: %s", act, text(res))
	}
	out := mustOK(t, "call_tool", callTool(t, ctx, h.cs, "call_tool", map[string]any{"name": "fx69__ledger", "arguments": map[string]any{}}))
	if !strings.Contains(out, "ledger of fx69") {
		t.Errorf("fx69__ledger answered %q", out)
	}

	res, err = h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search",
		Arguments: map[string]any{"query": "select:" + strings.Join(all, ",")}})
	if err != nil || res.IsError {
		t.Fatalf("tool_search select: %v %s", err, text(res))
	}
	if m := searchEvidence(t, res)["matched"]; m != float64(n*each) || strings.Contains(text(res), "No tool is named") {
		t.Errorf("select: of all %d names matched %v: %.500s", n*each, m, text(res))
	}

	t.Log("searched", time.Since(t0))
	h.cs.Close() // aibuddy exits; its last save of the counts is done
	t.Log("closed", time.Since(t0))
	b, err := os.ReadFile(filepath.Join(data, "mcp-tool-counts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Servers map[string]int }
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != n || doc.Servers["fx00"] != each || doc.Servers["fx69"] != each {
		t.Errorf("counts kept for the next start: %s", b)
	}
}

// TestLastCountsGateTheFirstList: one server with 12 tools (over the
// per-server gate of 10) and one with 2, both held until after the first
// tools/list. Without a record of their counts (a fresh data folder), the
// first list holds neither tool_search nor their tools; when they join,
// exposure flips: list_changed brings tool_search (big's 12 deferred) and
// small's 2 tools directly. On the next start with the same data folder,
// big is expected to bring 12, so tool_search is on the first list.
func TestLastCountsGateTheFirstList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	fx := fxtools(t)
	data := t.TempDir()
	settings := map[string]any{"initTimeout": "100s", "startupWait": "300ms"}
	for start := range 2 {
		g := newGate(t)
		servers := map[string]any{"big": fxServer(fx, "big", 12, g), "small": fxServer(fx, "small", 2, g)}
		h := startGatesHost(t, ctx, servers, data, settings)
		first := h.list(t, ctx)
		if first.mcp != 0 {
			t.Fatalf("start %d: first list has %d MCP tools before the servers were let go", start, first.mcp)
		}
		switch {
		case start == 0 && first.stated >= 0:
			t.Errorf("start 0 (no counts known): tool_search listed before any server answered: %q", first.search)
		case start == 1 && first.stated != 0:
			t.Errorf("start 1 (big known to bring 12): tool_search %d, want listed with 0 deferred so far", first.stated)
		}
		g.open(t)
		settled, notes := h.untilSettled(t, ctx, func(l listing) bool { return l.stated == 12 && l.mcp == 2 })
		if notes == 0 {
			t.Errorf("start %d: the list changed without notifications/tools/list_changed", start)
		}
		if !settled.names["small__ledger"] || settled.names["big__ledger"] {
			t.Errorf("start %d: settled list %v: want small's tools direct, big's deferred", start, settled.names)
		}
		h.cs.Close()
	}
}
