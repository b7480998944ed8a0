package cli

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/pipeline"
)

// elicitorFor is how upstream MCP servers' questions for the user reach
// them, from the run's ask_user_question service: `aibuddy mcp` passes
// them to its host (mcpserver.HostElicitor: elicitation on the host
// connection, or an input request in the reply for a 2026-07-28 host),
// `aibuddy run` asks on the terminal (mcpclient.FormElicitor). A run
// without anyone to ask (aibuddy call, tools) gets nil: elicitation is
// then not advertised, and a server that asks anyway is refused. Every
// answer is reported to the call's pipeline (pipeline.Decided): recorded,
// and in `aibuddy run` added as user-role text after the call's result.
func elicitorFor(service any) mcpclient.Elicitor {
	var ask mcpclient.Elicitor
	switch a := service.(type) {
	case mcpserver.ElicitAsker:
		ask = mcpserver.HostElicitor
	case approval.Asker:
		ask = mcpclient.FormElicitor(a)
	default:
		return nil
	}
	return func(ctx context.Context, e mcpclient.Elicitation) (*mcp.ElicitResult, error) {
		asked := time.Now()
		res, err := ask(ctx, e)
		if err == nil {
			pipeline.Decided(ctx, e.Exchange(res, asked, time.Now()))
		}
		return res, err
	}
}
