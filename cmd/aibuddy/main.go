// Command aibuddy is the tool plane for LLM agents on the command line: it
// serves built-in tools to MCP hosts (aibuddy mcp), runs single tool calls
// (aibuddy call) and explains the effective tool set (aibuddy tools).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/aibuddy/aibuddy/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Options{})
	stop()
	os.Exit(code)
}
