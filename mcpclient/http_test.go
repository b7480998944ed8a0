package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// Streamable HTTP and legacy SSE against the SDK's own server, with the
// configured headers on every request.
func TestRemoteServers(t *testing.T) {
	newServer := func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "greet", Description: "Says hello.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var in struct{ Who string }
				_ = json.Unmarshal(req.Params.Arguments, &in)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Who}}}, nil
			})
		return s
	}
	auth := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	srv := newServer()
	streamable := httptest.NewServer(auth(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(streamable.Close) // after the Manager closes (cleanups run last-in, first-out)
	sse := httptest.NewServer(auth(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(sse.Close)

	raw := map[string]json.RawMessage{
		"web":    json.RawMessage(`{"type":"streamable-http","url":"` + streamable.URL + `","headers":{"Authorization":"Bearer ${TOKEN}"}}`),
		"legacy": json.RawMessage(`{"type":"sse","url":"` + sse.URL + `","headers":{"Authorization":"Bearer ${TOKEN}"}}`),
		"noauth": json.RawMessage(`{"url":"` + streamable.URL + `"}`),
	}
	servers, err := mcpclient.ParseServersWith(raw, func(k string) (string, bool) { return "s3cret", k == "TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	m := connect(t, &mcpclient.Options{InitTimeout: 5 * time.Second}, servers...)
	for _, name := range []string{"web", "legacy"} {
		st := status(t, m, name)
		if st.State != mcpclient.StateConnected || st.ToolsLoaded != 1 {
			t.Fatalf("%s: %s", name, st.Summary())
		}
		r := m.Call(context.Background(), &tool.Call{Name: name + "__greet", Input: json.RawMessage(`{"who":"` + name + `"}`)})
		if r.IsError || r.AllText() != "hello "+name {
			t.Errorf("%s__greet: %+v", name, r)
		}
	}
	if st := status(t, m, "noauth"); st.State != mcpclient.StateFailed || !strings.Contains(strings.ToLower(st.Error), "unauthorized") {
		t.Errorf("noauth: %+v", st)
	}
}
