package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// npmServer returns the command of a reference MCP server installed by
// `npm ci` (scripts/test).
func npmServer(t *testing.T, bin string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not installed (%v): run `bash scripts/test`, which runs npm ci", bin, err)
	}
	return p
}

// settings writes an aibuddy settings file naming the given reference
// servers (memory, everything, filesystem) and returns its path.
func settings(t *testing.T, ws string, names []string, extra map[string]any) string {
	t.Helper()
	servers := map[string]any{}
	for _, n := range names {
		switch n {
		case "memory":
			servers[n] = map[string]any{"command": npmServer(t, "mcp-server-memory"),
				"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
		case "everything":
			servers[n] = map[string]any{"command": npmServer(t, "mcp-server-everything")}
		case "filesystem":
			servers[n] = map[string]any{"command": npmServer(t, "mcp-server-filesystem"), "args": []string{ws}}
		case "hang":
			servers[n] = map[string]any{"command": "sh", "args": []string{"-c", "sleep 3600"}}
		}
	}
	// startupWait covers the initialize timeout: these tests see every
	// server from the first tools/list (TestLateServerJoins covers less).
	doc := map[string]any{"mcpServers": servers, "mcp": map[string]any{"initTimeout": "20s", "startupWait": "20s"}}
	for k, v := range extra {
		doc[k] = v
	}
	b, _ := json.Marshal(doc)
	p := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// toolNames lists the session's tools (tools/list) as a set of names.
func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, tl := range lt.Tools {
		m[tl.Name] = true
	}
	return m
}

// listChanges is a client's notifications/tools/list_changed as events:
// the handler for mcp.ClientOptions, and the channel it signals (capacity
// one; a signal not yet taken covers the later ones).
func listChanges() (func(context.Context, *mcp.ToolListChangedRequest), <-chan struct{}) {
	ch := make(chan struct{}, 1)
	return func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}, ch
}

// waitListed waits, on the server's list_changed notifications, until
// tools/list holds name (want true) or lacks it (want false); it fails the
// test at ctx's end, saying what it waited for.
func waitListed(t *testing.T, ctx context.Context, cs *mcp.ClientSession, changed <-chan struct{}, name string, want bool, why string) {
	t.Helper()
	for toolNames(t, ctx, cs)[name] != want {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%s: tools/list still %s %s at the test's deadline", why, map[bool]string{true: "lacks", false: "holds"}[want], name)
		}
	}
}

type toolsDoc struct {
	MCPServers []struct{ Name, State, Summary, Error string }
	Tools      []struct{ Name, Group, Server, Exposure, Gate string }
	Excluded   []struct{ Tool, Group, Reason, Detail string }
}

func toolsJSON(t *testing.T, cfg, ws string) toolsDoc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "tools", "--json", "--config", cfg, "--workspace", ws).Output()
	if err != nil {
		t.Fatalf("aibuddy tools: %v %s", err, out)
	}
	var doc toolsDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return doc
}

// exposures counts tools per server and exposure: "memory/direct" -> 9.
func exposures(doc toolsDoc) map[string]int {
	m := map[string]int{}
	for _, tl := range doc.Tools {
		srv := tl.Server
		if srv == "" {
			srv = "core"
		}
		m[srv+"/"+tl.Exposure]++
	}
	return m
}

// TestCountGatesWithReferenceServers: the seed's three gate outcomes with
// real servers from npm (memory 9 tools, everything 13, filesystem 14).
func TestCountGatesWithReferenceServers(t *testing.T) {
	ws := t.TempDir()
	cases := []struct {
		servers []string
		want    map[string]int
	}{
		// core: the six file tools, execute, job_output, job_kill, jobs, view_tool_call.
		{[]string{"memory"}, map[string]int{"core/direct": 11, "memory/direct": 9}},
		// With tools deferred, tool_search and call_tool are listed too: core, direct.
		{[]string{"memory", "everything"}, map[string]int{"core/direct": 13, "memory/direct": 9, "everything/deferred": 13}},
		{[]string{"memory", "everything", "filesystem"}, map[string]int{"core/direct": 13, "memory/deferred": 9,
			"everything/deferred": 13, "filesystem/deferred": 14}},
	}
	for _, c := range cases {
		doc := toolsJSON(t, settings(t, ws, c.servers, nil), ws)
		got := exposures(doc)
		if len(got) != len(c.want) {
			t.Errorf("%v: exposures %v, want %v", c.servers, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%v: %s = %d, want %d (all: %v)", c.servers, k, got[k], v, got)
			}
		}
		for _, tl := range doc.Tools {
			if tl.Gate == "" {
				t.Errorf("%v: %s has no gate explanation", c.servers, tl.Name)
			}
		}
	}
}

// TestGatewaySearchActivatesThenCalls: through `aibuddy mcp` as a gateway,
// a deferred tool is refused until tool_search activates it; the host is
// told with notifications/tools/list_changed and the call then succeeds.
func TestGatewaySearchActivatesThenCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ws := t.TempDir()
	cfg := settings(t, ws, []string{"memory", "everything"}, nil)
	onChange, changed := listChanges()
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg)
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-gateway", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: onChange})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed := func() map[string]bool { return toolNames(t, ctx, cs) }
	names := listed()
	for _, want := range []string{"read_file", "execute", "memory__create_entities", "tool_search", "call_tool"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	if names["everything__echo"] {
		t.Fatal("everything's tools must be deferred (13 > 10)")
	}
	res := callTool(t, ctx, cs, "call_tool", map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": "hi"}})
	if !res.IsError || res.Meta["aibuddy/stage"] != "discovery" || !strings.Contains(text(res), "tool_search") {
		t.Fatalf("a never-activated tool must be refused at Discovery: %v %q", res.Meta, text(res))
	}
	out := mustOK(t, "tool_search", callTool(t, ctx, cs, "tool_search", map[string]any{"query": "echo back the message"}))
	if !strings.Contains(out, "everything__echo") || !strings.Contains(out, `"message"`) {
		t.Fatalf("tool_search did not return echo with its schema:\n%s", out)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second): // a bound on "never", not a wait for an event
		t.Error("no notifications/tools/list_changed after activation")
	}
	if !listed()["everything__echo"] {
		t.Error("tools/list lacks everything__echo after activation")
	}
	out = mustOK(t, "everything__echo", callTool(t, ctx, cs, "everything__echo", map[string]any{"message": "hi there"}))
	if !strings.Contains(out, "hi there") {
		t.Errorf("echo answered %q", out)
	}
	out = mustOK(t, "call_tool", callTool(t, ctx, cs, "call_tool", map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": "via proxy"}}))
	if !strings.Contains(out, "via proxy") {
		t.Errorf("call_tool echo answered %q", out)
	}
}

// TestLateServerJoins (BH-041 over MCP): `aibuddy mcp` answers the host
// after mcp.startupWait even while one server hangs in initialize (its
// timeout here is 10 minutes) and another is still starting; the late one's
// tools arrive with notifications/tools/list_changed once it connects.
func TestLateServerJoins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ws := t.TempDir()
	gate := filepath.Join(t.TempDir(), "go")
	// The memory server starts only once the test creates the gate file,
	// so it is certainly late for the first tools/list.
	late := map[string]any{"command": "sh", "args": []string{"-c",
		`while [ ! -e "$1" ]; do sleep 0.05; done; exec "$2"`, "sh", gate, npmServer(t, "mcp-server-memory")},
		"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
	doc := map[string]any{
		"mcpServers": map[string]any{"late": late, "hang": map[string]any{"command": "sh", "args": []string{"-c", "sleep 3600"}}},
		"mcp":        map[string]any{"initTimeout": "10m", "startupWait": "300ms"},
	}
	b, _ := json.Marshal(doc)
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg)
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-late", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("the host was not answered while servers were connecting: %v", err)
	}
	defer cs.Close()
	listed := func() map[string]bool { return toolNames(t, ctx, cs) }
	first := listed()
	if !first["read_file"] || first["late__read_graph"] {
		t.Fatalf("first tools/list: want the built-in tools and no late__ tool yet: %v", first)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for !listed()["late__read_graph"] {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("no notifications/tools/list_changed bringing the late server's tools")
		}
	}
	out := mustOK(t, "late__read_graph", callTool(t, ctx, cs, "late__read_graph", map[string]any{}))
	if !strings.Contains(out, "entities") {
		t.Errorf("read_graph answered %q", out)
	}
}

// TestHangingServerDoesNotDelayOthers (BH-041): a server that never answers
// initialize is excluded after the configured timeout with its reason while
// the others' tools are there.
func TestHangingServerDoesNotDelayOthers(t *testing.T) {
	ws := t.TempDir()
	cfg := settings(t, ws, []string{"memory", "hang"}, map[string]any{"mcp": map[string]any{"initTimeout": "8s"}})
	start := time.Now()
	doc := toolsJSON(t, cfg, ws)
	elapsed := time.Since(start)
	if exposures(doc)["memory/direct"] != 9 {
		t.Errorf("memory tools missing: %v", exposures(doc))
	}
	found := false
	for _, e := range doc.Excluded {
		if e.Group == "mcp:hang" && e.Reason == "mcp_server_failed" && strings.Contains(e.Detail, "initialize") {
			found = true
		}
	}
	if !found {
		t.Errorf("hang not excluded with its reason: %+v", doc.Excluded)
	}
	if elapsed > 60*time.Second {
		t.Errorf("tools took %v with an 8 s initialize timeout", elapsed)
	}
}
