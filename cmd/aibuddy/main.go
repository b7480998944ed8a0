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
	// SIGINT (Ctrl-C) and SIGTERM cancel the command with cli.Stopped as
	// the cause: calls in flight are stopped, records kept, and the exit
	// code is 128 + the signal (130 for Ctrl-C). Later signals are
	// absorbed while the command winds down (bounded by its own waits).
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		sig, _ := s.(syscall.Signal)
		cancel(cli.Stopped{Signal: sig})
	}()
	code := cli.Main(ctx, os.Args[1:], cli.Options{})
	cancel(nil)
	os.Exit(code)
}
