package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/mcpserver"
)

func newMCP(o *Options) *cobra.Command {
	var c common
	var httpAddr string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the effective tool set as an MCP server (stdio by default)",
		Long: `Serve the run's effective tool set to an MCP host.

Over stdio (the default) stdout carries protocol frames only; logs go to
stderr. With --http ADDR it serves streamable HTTP at http://ADDR/mcp, one
fresh run (tool state) per MCP session.`,
		Example: `  aibuddy mcp --workspace ~/src/project
  aibuddy mcp --http 127.0.0.1:8765`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := c.resolve(o)
			if err != nil {
				return err
			}
			defer r.close()
			opts := &mcpserver.Options{Version: Version, Logger: r.logger}
			ctx := cmd.Context()
			if httpAddr == "" {
				srv := mcpserver.New(r.set, opts)
				if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
					return &exitError{code: ExitFailure, err: fmt.Errorf("mcp over stdio: %w", err)}
				}
				return nil
			}
			return serveHTTP(ctx, cmd, r, httpAddr, opts)
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on ADDR (host:port) instead of stdio")
	return cmd
}

func serveHTTP(ctx context.Context, cmd *cobra.Command, r *run, addr string, opts *mcpserver.Options) error {
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		// A new MCP session gets a fresh run: fresh per-run tool state.
		if err := r.resolveSet(); err != nil {
			r.logger.Error("resolving the tool set for a new session", "err", err)
			return nil
		}
		return mcpserver.New(r.set, opts)
	}, &mcp.StreamableHTTPOptions{Logger: r.logger})
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	mux.Handle("/mcp/", handler)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("listen on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.ErrOrStderr(), "aibuddy: serving MCP over streamable HTTP at http://%s/mcp (workspace %s)\n", ln.Addr(), r.sandbox.Workspace())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return &exitError{code: ExitFailure, err: err}
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		return nil
	}
}
