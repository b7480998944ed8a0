package mcpclient

import (
	"context"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ackMethod is the notification a server sends first on a
// subscriptions/listen stream (MCP 2026-07-28, SEP-2575), naming the
// subscriptions it agreed to.
const ackMethod = "notifications/subscriptions/acknowledged"

// subAcks are the resource subscriptions of one connection waiting for
// their acknowledgement. The MCP Go SDK (v1.8.0) ClientSession.Subscribe
// opens the subscriptions/listen stream in the background and returns at
// once, before the server registered the subscription; SubscribeResource
// waits here for the server's acknowledgement instead.
type subAcks struct {
	mu      sync.Mutex
	waiting map[string][]chan struct{} // URI -> closed on its acknowledgement
}

// expect registers a wait for uri's acknowledgement; call it before the
// listen is opened, so an early acknowledgement is not missed. forget
// drops the wait when it is abandoned.
func (a *subAcks) expect(uri string) (acked <-chan struct{}, forget func()) {
	ch := make(chan struct{})
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting = map[string][]chan struct{}{}
	}
	a.waiting[uri] = append(a.waiting[uri], ch)
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.waiting[uri] = slices.DeleteFunc(a.waiting[uri], func(c chan struct{}) bool { return c == ch })
		if len(a.waiting[uri]) == 0 {
			delete(a.waiting, uri)
		}
	}
}

// acked wakes every wait for the URIs in p.
func (a *subAcks) acked(p *mcp.SubscriptionsAcknowledgedParams) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, uri := range p.Notifications.ResourceSubscriptions {
		for _, ch := range a.waiting[uri] {
			close(ch)
		}
		delete(a.waiting, uri)
	}
}

// ackMiddleware is the client's receiving middleware that passes each
// subscriptions acknowledgement to c's waits, then on to the SDK.
func (c *conn) ackMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == ackMethod {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && p != nil {
				c.pt.acks.acked(p)
			}
		}
		return next(ctx, method, req)
	}
}
