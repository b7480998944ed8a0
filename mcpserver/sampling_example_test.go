package mcpserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
)

// The summary of a large result is asked of the host of the gateway's
// session through MCP sampling (a host on 2025-11-25 that declared
// sampling); the compactor of `aibuddy mcp` holds such a Sampler.
func ExampleSampler() {
	ctx := context.Background()
	set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{})
	if err != nil {
		log.Fatal(err)
	}
	gw := mcpserver.NewGateway(set, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := gw.Server().Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	host := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			fmt.Println("host asked, max tokens:", req.Params.MaxTokens)
			return &mcp.CreateMessageResult{Model: "claude-haiku-4-5", Role: "assistant",
				Content: &mcp.TextContent{Text: "40,000 numbers, 1 to 40000."}}, nil
		}})
	cs, err := host.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil { // any request: the gateway notes its session
		log.Fatal(err)
	}
	sum, err := mcpserver.Sampler{Gateway: gw}.Summarize(ctx, &compact.SummaryRequest{TaskID: gw.TaskID(),
		System: compact.SummarySystem, Prompt: compact.SummaryPrompt("execute", `{"command":"seq 40000"}`, "1\n2\n…", 60000), MaxTokens: 800})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("summarized by %s via %s: %s\n", sum.Model, sum.Via, sum.Text)
	// Output:
	// host asked, max tokens: 800
	// summarized by claude-haiku-4-5 via host sampling: 40,000 numbers, 1 to 40000.
}
