package cli

import (
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
)

// elicitorFor is how upstream MCP servers' questions for the user reach
// them, from the run's ask_user_question service: `aibuddy mcp` passes
// them to its host (mcpserver.HostElicitor: elicitation on the host
// connection, or an input request in the reply for a 2026-07-28 host),
// `aibuddy run` asks on the terminal (mcpclient.FormElicitor). A run
// without anyone to ask (aibuddy call, tools) gets nil: elicitation is
// then not advertised, and a server that asks anyway is refused.
func elicitorFor(service any) mcpclient.Elicitor {
	switch a := service.(type) {
	case mcpserver.ElicitAsker:
		return mcpserver.HostElicitor
	case approval.Asker:
		return mcpclient.FormElicitor(a)
	}
	return nil
}
