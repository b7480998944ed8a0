package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
)

// TestGatewayListsToolSearchWhileServersArePending: with 40 upstream
// servers configured and none joined, the first tools/list already holds
// tool_search (deferral is expected: 40 servers bring at least 40 tools >
// 30); as servers join, each Update that changes the count tool_search's
// description states sends notifications/tools/list_changed. The settled list's tool_search
// states every joined tool, and its index finds a tool of the last server.
func TestGatewayListsToolSearchWhileServersArePending(t *testing.T) {
	reg := registry.New(nil, nil, nil)
	const servers, each = 40, 3
	var mu sync.Mutex
	joined := 0
	name := func(i int) string { return fmt.Sprintf("s%02d", i) }
	resolve := func() *capability.Set {
		mu.Lock()
		defer mu.Unlock()
		var ms []capability.MCPServer
		for i := range joined {
			ms = append(ms, capability.MCPServer{Name: name(i), Connected: true,
				Tools: mcpTools(name(i), "alpha", "beta", fmt.Sprintf("ledger%02d", i))})
		}
		set, _, err := capability.Resolve(reg, capability.RunSpec{MCP: ms})
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	pending := func() discovery.Pending {
		mu.Lock()
		defer mu.Unlock()
		p := discovery.Pending{}
		for i := joined; i < servers; i++ {
			p[name(i)] = 1
		}
		return p
	}
	gw := mcpserver.NewGateway(resolve(), &mcpserver.Options{Pending: pending})
	changed := make(chan struct{}, 64)
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := gw.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	stated := regexp.MustCompile(`Search the (\d+) tools`)
	searchCount := func() int {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range lt.Tools {
			if tl.Name == discovery.ToolSearchName {
				m := stated.FindStringSubmatch(tl.Description)
				if m == nil {
					t.Fatalf("tool_search description states no count: %q", tl.Description)
				}
				n, _ := strconv.Atoi(m[1])
				return n
			}
		}
		return -1
	}
	if n := searchCount(); n != 0 {
		t.Fatalf("first list: tool_search states %d (-1: not listed), want listed with 0", n)
	}
	join := func(n int) {
		mu.Lock()
		joined = n
		mu.Unlock()
		gw.Update(resolve())
	}
	join(10)
	<-changed
	if n := searchCount(); n != 10*each {
		t.Fatalf("after 10 servers joined: tool_search states %d, want %d", n, 10*each)
	}
	join(servers)
	<-changed
	if n := searchCount(); n != servers*each {
		t.Fatalf("settled: tool_search states %d, want %d", n, servers*each)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: discovery.ToolSearchName,
		Arguments: map[string]any{"query": "ledger39", "max_results": 1}})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	ev, _ := json.Marshal(res.Meta[mcpserver.MetaEvidence])
	if !regexp.MustCompile(`"activated":\["s39__ledger39"\]`).Match(ev) {
		t.Errorf("search for the last server's tool: %s %s", resultText(res), ev)
	}
}
