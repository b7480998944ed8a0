package cli

import (
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessVersion is the first MCP protocol version without sessions
// (SEP-2575): every request carries its version, and the Go SDK serves it
// over streamable HTTP only from a stateless handler.
const statelessVersion = "2026-07-28"

// byProtocol sends requests of protocol 2026-07-28 and later (by their
// Mcp-Protocol-Version header, which the spec has a client send on every
// request, server/discover included) to a stateless streamable handler,
// and the rest to sessions, the handler of 2025-11-25 and older. Without
// sessions there is nothing else to tell two hosts apart by, so stateless
// requests share one gateway per user (the verified token's subject with
// mcp.oauth; everyone holding the one bearer token otherwise) for the
// life of the process: what tool_search activates for one stays active
// for that user's next 2026-07-28 requests, never for another user's.
func (g *gateways) byProtocol(o httpOptions, sessions http.Handler) http.Handler {
	var (
		mu    sync.Mutex
		users = map[string]http.Handler{}
	)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Mcp-Protocol-Version") < statelessVersion {
			sessions.ServeHTTP(w, req)
			return
		}
		var user string
		if ti := auth.TokenInfoFromContext(req.Context()); ti != nil {
			user = ti.UserID
		}
		mu.Lock()
		h := users[user]
		if h == nil {
			gw := g.add()
			h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gw.Server() },
				&mcp.StreamableHTTPOptions{Stateless: true, Logger: o.Logger, MaxRequestBodyBytes: o.MaxBody})
			users[user] = h
		}
		mu.Unlock()
		h.ServeHTTP(w, req)
	})
}
