package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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
	}
	deadline := time.Now().Add(10 * time.Second)
	for changed.Load() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if changed.Load() == before {
		t.Error("no notifications/tools/list_changed after the upstream change")
	}
}
