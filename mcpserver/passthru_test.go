package mcpserver_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

// everythingServer builds the MCP Go SDK's conformance everything-server
// (module cache, the go.mod version): a real MCP server with resources
// (test://static-text, test://static-binary, test://watched-resource,
// updated every 3 s), the template test://template/{id}/data, prompts,
// completions and some 30 tools.
func everythingServer(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command("go", "build", "-o", out, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the go-sdk conformance everything-server: %v\n%s", err, b)
	}
	return out
}

// gatewayOver connects a Manager to the everything-server over stdio and
// serves it through a Gateway with pass-through po (Upstream filled in),
// to a host over in-memory transports (so host and gateway speak 2026-07-28
// over a persistent session, as over stdio).
func gatewayOver(t *testing.T, po mcpserver.PassthroughOptions, copts *mcp.ClientOptions) (*mcp.ClientSession, *mcpclient.Manager) {
	t.Helper()
	m := mcpclient.Connect(context.Background(), []mcpclient.ServerConfig{{Name: "conformance", Type: mcpclient.TypeStdio,
		Command: everythingServer(t)}}, &mcpclient.Options{InitTimeout: 20 * time.Second})
	t.Cleanup(func() { _ = m.Close() })
	if st := m.Servers()[0]; st.State != mcpclient.StateConnected {
		t.Fatalf("upstream: %s", st.Summary())
	}
	reg := registry.New(nil, nil, nil)
	set, _, err := capability.Resolve(reg, capability.RunSpec{MCP: []capability.MCPServer{
		{Name: "conformance", Connected: true, Tools: m.Tools()["conformance"]}}})
	if err != nil {
		t.Fatal(err)
	}
	po.Upstream = m
	gw := mcpserver.NewGateway(set, &mcpserver.Options{Passthrough: &po})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := gw.Server().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, copts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, m
}

// TestGatewayPassthrough: the gateway advertises what its upstream offers
// and passes resources, templates, prompts and completions through under
// the upstream's own names (one server: nothing collides).
func TestGatewayPassthrough(t *testing.T) {
	cs, _ := gatewayOver(t, mcpserver.PassthroughOptions{}, nil)
	ctx := context.Background()
	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || !caps.Resources.Subscribe || caps.Prompts == nil || caps.Completions == nil || caps.Tools == nil {
		t.Fatalf("capabilities %+v: want tools, resources with subscribe, prompts, completions", caps)
	}
	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	if got := strings.Join(uris, ","); got != "test://static-binary,test://static-text,test://watched-resource" {
		t.Errorf("resources/list = %s", got)
	}
	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
		t.Fatalf("resources/templates/list: %v %+v", err, lt)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "42") || rr.Contents[0].URI != "test://template/42/data" {
		t.Fatalf("read through the template: %v %+v", err, rr)
	}
	bin, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
	if err != nil || len(bin.Contents[0].Blob) == 0 || bin.Contents[0].MIMEType != "image/png" {
		t.Fatalf("read the binary resource: %v %+v", err, bin)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "v1", "arg2": "v2"}})
	if err != nil || !strings.Contains(gp.Messages[0].Content.(*mcp.TextContent).Text, "v1") {
		t.Fatalf("prompts/get: %v %+v", err, gp)
	}
	cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "x"}})
	if err != nil || cr.Completion.Values == nil {
		t.Fatalf("completion/complete: %v %+v", err, cr)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "no_such_prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}}); err == nil || !strings.Contains(err.Error(), "Discovery") {
		t.Errorf("completion for an unknown prompt: %v; want a Discovery-stage error", err)
	}
}

// TestGatewayPassthroughSubscribe: a host's subscription gets the
// upstream's notifications/resources/updated; after it unsubscribes, the
// host still hears of tool changes (tools/list_changed after tool_search
// activates a deferred tool), which an unsubscribe under 2026-07-28 would
// otherwise cut off (the MCP Go SDK v1.8.0 drops a session's list_changed
// subscriptions when any of its listen streams ends).
func TestGatewayPassthroughSubscribe(t *testing.T) {
	updated := make(chan string, 16)
	toolsChanged := make(chan struct{}, 16)
	cs, _ := gatewayOver(t, mcpserver.PassthroughOptions{}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-updated:
		if u != "test://watched-resource" {
			t.Errorf("updated %q", u)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated for the watched resource (the upstream sends one every 3 s)")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "select:conformance__test_simple_text"}})
	if err != nil || res.IsError {
		t.Fatalf("tool_search: %v %+v", err, res)
	}
	select {
	case <-toolsChanged:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after tool_search activated a tool, once the host had unsubscribed from a resource")
	}
}

// TestGatewayPassthroughBounds: a text over MaxChars keeps its head and
// tail under the cut notice; a blob over MaxBlobBytes becomes a note.
func TestGatewayPassthroughBounds(t *testing.T) {
	cs, _ := gatewayOver(t, mcpserver.PassthroughOptions{MaxChars: 20, MaxBlobBytes: 8}, nil)
	ctx := context.Background()
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
	if err != nil {
		t.Fatal(err)
	}
	text := rr.Contents[0].Text
	first, rest, _ := strings.Cut(text, "\n")
	if _, ok := tool.ParseCut(first); !ok || !strings.HasPrefix(rest, "This is th") || !strings.HasSuffix(text, "resource.") || !strings.Contains(text, "characters omitted") {
		t.Errorf("a 49-character text over the 20-character bound: %q", text)
	}
	bin, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
	if err != nil {
		t.Fatal(err)
	}
	if c := bin.Contents[0]; len(c.Blob) != 0 || c.MIMEType != "text/plain" || !strings.Contains(c.Text, "image/png") || !strings.Contains(c.Text, "8-byte bound") {
		t.Errorf("a blob over the 8-byte bound: %+v", c)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_image"})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range gp.Messages {
		if _, ok := msg.Content.(*mcp.ImageContent); ok {
			t.Errorf("a prompt's image over the 8-byte bound was passed: %+v", msg.Content)
		}
	}
}

// TestGatewayWithoutPassthroughCapabilities: an upstream set without
// resources or prompts (no servers) advertises neither, nor completions.
func TestGatewayWithoutPassthroughCapabilities(t *testing.T) {
	m := mcpclient.Connect(context.Background(), nil, nil)
	defer m.Close()
	for _, po := range []*mcpserver.PassthroughOptions{nil, {Upstream: m}} {
		set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{})
		if err != nil {
			t.Fatal(err)
		}
		gw := mcpserver.NewGateway(set, &mcpserver.Options{Passthrough: po})
		st, ct := mcp.NewInMemoryTransports()
		ss, err := gw.Server().Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c := cs.InitializeResult().Capabilities; c.Resources != nil || c.Prompts != nil || c.Completions != nil {
			t.Errorf("passthrough %v: capabilities %+v; want no resources, prompts or completions", po != nil, c)
		}
		cs.Close()
		ss.Close()
	}
}
