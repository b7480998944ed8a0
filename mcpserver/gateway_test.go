package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

func mcpTools(server string, names ...string) []*tool.Tool {
	var out []*tool.Tool
	for _, n := range names {
		full := server + "__" + n
		out = append(out, tool.MustDefine(tool.Spec{Name: full, Description: "Tool " + n + " of " + server,
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler:     func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text(full + " ran"), nil }}))
	}
	return out
}

// An upstream server's tools change (notifications/tools/list_changed in
// mcpclient): Update re-evaluates the gates, keeps what tool_search
// activated when it still exists, tells the host with list_changed, and a
// tool that is gone is no longer callable.
func TestGatewayUpdateAfterUpstreamChange(t *testing.T) {
	core := tool.MustDefine(tool.Spec{Name: "ls", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("."), nil }})
	reg := registry.New([]registry.Group{{Key: "filesystem", Names: []string{"ls"},
		Build: func(registry.Env) ([]*tool.Tool, error) { return []*tool.Tool{core}, nil }}},
		[]registry.Meta{{Key: "filesystem"}}, nil)
	resolve := func(names ...string) *capability.Set {
		set, _, err := capability.Resolve(reg, capability.RunSpec{MCP: []capability.MCPServer{
			{Name: "big", Connected: true, Tools: mcpTools("big", names...)}}})
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	var twelve []string
	for i := range 12 {
		twelve = append(twelve, fmt.Sprintf("t%02d", i))
	}
	gw := mcpserver.NewGateway(resolve(twelve...), nil)
	var changed atomic.Int32
	st, ct := mcp.NewInMemoryTransports()
	if _, err := gw.Server().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) }}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	listed := func() string {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, tl := range lt.Tools {
			n = append(n, tl.Name)
		}
		sort.Strings(n)
		return strings.Join(n, ",")
	}
	if got := listed(); got != "call_tool,ls,tool_search" {
		t.Fatalf("12 tools on one server must be deferred: %s", got)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "select:big__t03"}}); err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if got := listed(); got != "big__t03,call_tool,ls,tool_search" {
		t.Fatalf("after activation: %s", got)
	}
	// The server now offers 5 tools, t03 among them: under the gate, all direct.
	before := changed.Load()
	gw.Update(resolve("t00", "t01", "t02", "t03", "t04"))
	if got := listed(); got != "big__t00,big__t01,big__t02,big__t03,big__t04,ls" {
		t.Errorf("after the upstream change: %s", got)
	}
	// Then it drops t03.
	gw.Update(resolve("t00", "t01"))
	if got := listed(); got != "big__t00,big__t01,ls" {
		t.Errorf("after t03 left: %s", got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big__t03", Arguments: map[string]any{}})
	if err != nil || !res.IsError || res.Meta[mcpserver.MetaStage] != "discovery" {
		t.Errorf("a tool that is gone: %v %+v", err, res)
	} else if got := resultText(res); !strings.Contains(got, `tool "big__t03" is no longer offered by MCP server big (removed at refresh)`) ||
		!strings.Contains(got, "call one of the tools listed now") {
		t.Errorf("a tool that is gone: %s", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for changed.Load() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if changed.Load() == before {
		t.Error("no notifications/tools/list_changed after the upstream change")
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// After a refresh, a call to a tool that left says why, at the Discovery
// stage, whether the host calls it by name or through call_tool: "tool X
// is no longer offered by MCP server S (removed at refresh)" with
// tool_search as the next step, or "MCP server S is disconnected:
// <reason>" with checking the server as the next step.
func TestGatewayExplainsDepartedTools(t *testing.T) {
	reg := registry.New(nil, nil, nil)
	type upstream struct {
		tools []string
		down  string // "" connected, else "<state>: <reason>"
	}
	var mu sync.Mutex
	state := map[string]upstream{}
	resolve := func() *capability.Set {
		mu.Lock()
		defer mu.Unlock()
		var spec capability.RunSpec
		for _, name := range []string{"big", "mem"} {
			u := state[name]
			m := capability.MCPServer{Name: name, Connected: u.down == ""}
			if m.Connected {
				m.Tools = mcpTools(name, u.tools...)
			} else {
				m.Error = u.down
			}
			spec.MCP = append(spec.MCP, m)
		}
		set, _, err := capability.Resolve(reg, spec)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	var twelve []string
	for i := range 12 {
		twelve = append(twelve, fmt.Sprintf("t%02d", i))
	}
	state["big"] = upstream{tools: twelve} // 12 > 10: deferred, so tool_search is there
	state["mem"] = upstream{tools: []string{"read", "write"}}
	gw := mcpserver.NewGateway(resolve(), &mcpserver.Options{ServerStatus: func(server string) (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		d := state[server].down
		return d == "", d
	}})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := gw.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "select:big__t05"}}); err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mem__read", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatal(err, res)
	}

	// big drops t05 (it still offers 11 tools); mem disconnects.
	mu.Lock()
	state["big"] = upstream{tools: slices.DeleteFunc(slices.Clone(twelve), func(s string) bool { return s == "t05" })}
	state["mem"] = upstream{down: "disconnected: connection closed by the server"}
	mu.Unlock()
	gw.Update(resolve())

	call := func(name string, viaProxy bool) string {
		t.Helper()
		p := &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
		if viaProxy {
			p = &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name, "arguments": map[string]any{}}}
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The tools of a server that is down fail at Execution (their
		// server); a tool dropped at refresh or never offered, at
		// Discovery.
		want := "discovery"
		if strings.HasPrefix(name, "mem__") {
			want = "execution"
		}
		if !res.IsError || res.Meta[mcpserver.MetaStage] != want {
			t.Errorf("%s (proxy %v): want a %s-stage error, got %+v", name, viaProxy, want, res)
		}
		return resultText(res)
	}
	for _, proxy := range []bool{false, true} {
		got := call("big__t05", proxy)
		for _, want := range []string{`tool "big__t05" is no longer offered by MCP server big (removed at refresh)`,
			"call tool_search again to find what MCP server big offers now"} {
			if !strings.Contains(got, want) {
				t.Errorf("removed tool (proxy %v): %q lacks %q", proxy, got, want)
			}
		}
		for _, name := range []string{"mem__read", "mem__write", "mem__never_existed"} {
			got := call(name, proxy)
			for _, want := range []string{"MCP server mem is disconnected: connection closed by the server",
				"check MCP server mem"} {
				if !strings.Contains(got, want) {
					t.Errorf("%s of a disconnected server (proxy %v): %q lacks %q", name, proxy, got, want)
				}
			}
		}
	}
	// A name nobody ever offered keeps the plain answer.
	if got := call("nobody__x", false); !strings.Contains(got, `no tool named "nobody__x" exists in this run`) {
		t.Errorf("unknown name: %s", got)
	}
	// tool_search's select: says the same about a departed name.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "select:big__t05,mem__read"}})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if got := resultText(res); !strings.Contains(got, "no longer offered by MCP server big") || !strings.Contains(got, "MCP server mem is disconnected") {
		t.Errorf("select: of departed names: %s", got)
	}

	// mem comes back with its tools: they are callable again.
	mu.Lock()
	state["mem"] = upstream{tools: []string{"read", "write"}}
	mu.Unlock()
	gw.Update(resolve())
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mem__read", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("mem__read after reconnection: %v %+v", err, res)
	}
}
