package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

// An upstream server's question reaches the gateway's host. Here the
// tool asks through HostElicitor itself, as mcpclient does for an
// upstream's form (Options.Elicit); the host is on 2026-07-28, so the
// question travels in the tools/call reply and the host's SDK sends the
// call again with the answer.
func ExampleHostElicitor() {
	ctx := context.Background()
	deploy := tool.MustDefine(tool.Spec{Name: "fx__apply_change", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			ans, err := mcpserver.HostElicitor(ctx, mcpclient.Elicitation{Server: "fx", Tool: "apply_change", Call: c, Round: 1,
				Params: &mcp.ElicitParams{Message: "confirm deploy to staging?", RequestedSchema: map[string]any{
					"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}}}})
			if err != nil {
				return nil, err
			}
			return tool.Text(fmt.Sprintf("deployed: %v", ans.Content["confirm"])), nil
		}})
	set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{MCP: []capability.MCPServer{
		{Name: "fx", Connected: true, Tools: []*tool.Tool{deploy}}}})
	if err != nil {
		log.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(set, nil).Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	host := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("host asked:", req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		}})
	cs, err := host.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__apply_change", Arguments: map[string]any{}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cs.InitializeResult().ProtocolVersion, res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// host asked: MCP server fx asks: confirm deploy to staging?
	// 2026-07-28 deployed: true
}
