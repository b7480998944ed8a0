package mcpclient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// runPassthruServer is a real MCP Go SDK server over stdio with lists in
// pages of 2: PT_ID names it in its contents; it offers resources
// test://<id>/r1..r5 and test://shared, the template test://t/{id}, the
// prompts "shared" and "<id>-only", completions, subscriptions, and tools
// to add a resource ("add") or a prompt ("addprompt"), send notifications/resources/updated
// ("touch") and count the subscribe and unsubscribe requests it got
// ("subs").
func runPassthruServer() {
	id := os.Getenv("PT_ID")
	var mu sync.Mutex
	var subs, unsubs int
	var versions []string
	if os.Getenv("PT_LEGACY") != "" {
		versions = []string{"2025-11-25"}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "pt-" + id, Version: "1"}, &mcp.ServerOptions{
		PageSize: 2, SupportedProtocolVersions: versions,
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			mu.Lock()
			subs++
			mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error {
			mu.Lock()
			unsubs++
			mu.Unlock()
			return nil
		},
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			ref := req.Params.Ref
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
				Values: []string{id + ":" + ref.Type + ":" + ref.Name + ref.URI + ":" + req.Params.Argument.Value}}}, nil
		},
	})
	text := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain",
			Text: "from " + id + ": " + req.Params.URI}}}, nil
	}
	for i := 1; i <= 5; i++ {
		u := fmt.Sprintf("test://%s/r%d", id, i)
		srv.AddResource(&mcp.Resource{URI: u, Name: u}, text)
	}
	srv.AddResource(&mcp.Resource{URI: "test://shared", Name: "shared"}, text)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, text)
	prompt := func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
			Content: &mcp.TextContent{Text: id + " " + req.Params.Name + " x=" + req.Params.Arguments["x"]}}}}, nil
	}
	for _, n := range []string{"shared", id + "-only"} {
		srv.AddPrompt(&mcp.Prompt{Name: n, Description: n, Arguments: []*mcp.PromptArgument{{Name: "x"}}}, prompt)
	}
	type uriIn struct {
		URI string `json:"uri"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "add"}, func(_ context.Context, _ *mcp.CallToolRequest, in uriIn) (*mcp.CallToolResult, any, error) {
		srv.AddResource(&mcp.Resource{URI: in.URI, Name: in.URI}, text)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "addprompt"}, func(_ context.Context, _ *mcp.CallToolRequest, in uriIn) (*mcp.CallToolResult, any, error) {
		srv.AddPrompt(&mcp.Prompt{Name: in.URI}, prompt)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "touch"}, func(ctx context.Context, _ *mcp.CallToolRequest, in uriIn) (*mcp.CallToolResult, any, error) {
		err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, err
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "subs"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		defer mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d/%d", subs, unsubs)}}}, nil, nil
	})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// passthruServer is runPassthruServer named id; legacy restricts it to
// protocol 2025-11-25 (else the client and server agree on 2026-07-28).
func passthruServer(id string, legacy bool) mcpclient.ServerConfig {
	if legacy {
		return scriptedServer(id, "passthru", "[]", "PT_ID", id, "PT_LEGACY", "1")
	}
	return scriptedServer(id, "passthru", "[]", "PT_ID", id)
}

func hostURIs(p mcpclient.Passthru) []string {
	var out []string
	for _, r := range p.Resources {
		out = append(out, r.Resource.URI)
	}
	return out
}

func ptCall(t *testing.T, m *mcpclient.Manager, name, input string) string {
	t.Helper()
	res := m.Call(context.Background(), &tool.Call{ID: "c", Name: name, Input: []byte(input)})
	if res.IsError {
		t.Fatalf("%s: %s", name, res.AllText())
	}
	return res.AllText()
}

// TestPassthruNamesPagesAndRoutes: two real SDK servers listing in pages
// of two: every page is merged; what only one offers keeps its name, what
// both offer is namespaced for both ("auto"); "prefixed" namespaces all;
// reads, prompts and completions reach the server named, with its own
// URI and name; an upstream JSON-RPC error keeps its code.
func TestPassthruNamesPagesAndRoutes(t *testing.T) {
	m := connect(t, nil, passthruServer("a", false), passthruServer("b", true))
	p := m.Passthru(mcpclient.NamesAuto)
	want := []string{"aibuddy://a/test://shared", "aibuddy://b/test://shared",
		"test://a/r1", "test://a/r2", "test://a/r3", "test://a/r4", "test://a/r5",
		"test://b/r1", "test://b/r2", "test://b/r3", "test://b/r4", "test://b/r5"}
	if got := hostURIs(p); !slices.Equal(got, want) {
		t.Errorf("auto resources = %v\nwant %v", got, want)
	}
	var prompts, templates []string
	for _, pr := range p.Prompts {
		prompts = append(prompts, pr.Prompt.Name+"="+pr.Server+"/"+pr.Name)
	}
	for _, tp := range p.Templates {
		templates = append(templates, tp.Template.URITemplate+"="+tp.Server+"/"+tp.Orig+"|"+tp.Prefix)
	}
	if w := []string{"a-only=a/a-only", "a__shared=a/shared", "b-only=b/b-only", "b__shared=b/shared"}; !slices.Equal(prompts, w) {
		t.Errorf("auto prompts = %v, want %v", prompts, w)
	}
	if w := []string{"aibuddy://a/test://t/{id}=a/test://t/{id}|aibuddy://a/", "aibuddy://b/test://t/{id}=b/test://t/{id}|aibuddy://b/"}; !slices.Equal(templates, w) {
		t.Errorf("auto templates = %v, want %v", templates, w)
	}
	if !p.Subscribe || !p.Complete {
		t.Errorf("Subscribe %v Complete %v; both servers offer them", p.Subscribe, p.Complete)
	}
	pre := m.Passthru(mcpclient.NamesPrefixed)
	for _, u := range hostURIs(pre) {
		if !strings.HasPrefix(u, "aibuddy://") {
			t.Errorf("prefixed: %s is not namespaced", u)
		}
	}
	if pre.Prompts[0].Prompt.Name != "a__a-only" {
		t.Errorf("prefixed: first prompt %q, want a__a-only", pre.Prompts[0].Prompt.Name)
	}

	ctx := context.Background()
	rr, err := m.ReadResource(ctx, "b", "test://shared")
	if err != nil || rr.Contents[0].Text != "from b: test://shared" {
		t.Errorf("read b test://shared: %v %+v", err, rr)
	}
	gp, err := m.GetPrompt(ctx, "a", &mcp.GetPromptParams{Name: "shared", Arguments: map[string]string{"x": "1"}})
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "a shared x=1" {
		t.Errorf("get a shared: %v %+v", err, gp)
	}
	cr, err := m.Complete(ctx, "b", &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "test://t/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"}})
	if err != nil || !slices.Equal(cr.Completion.Values, []string{"b:ref/resource:test://t/{id}:4"}) {
		t.Errorf("complete on b: %v %+v", err, cr)
	}
	_, err = m.ReadResource(ctx, "a", "test://nope")
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != mcp.CodeResourceNotFound || !strings.Contains(we.Message, "MCP server a") {
		t.Errorf("reading an unknown URI: %v; want the server's resource-not-found error, naming it", err)
	}
	if _, err := m.ReadResource(ctx, "zz", "test://shared"); err == nil || !strings.Contains(err.Error(), "Discovery") {
		t.Errorf("reading from an unconfigured server: %v; want a Discovery-stage error", err)
	}
}

// TestPassthruSubscriptionsAndListChanged, under protocol 2025-11-25 and
// 2026-07-28: two subscribers of one URI make one upstream subscription;
// each gets the server's notifications/resources/updated. Under 2025-11-25
// the upstream resources/unsubscribe goes when the last cancels; under
// 2026-07-28 the upstream subscription is kept (an unsubscribe there ends
// a subscriptions/listen stream, and the MCP Go SDK v1.8.0 server then
// drops the session's list_changed subscriptions too), so a resource the
// server adds afterwards still reaches the Manager's list: after its
// notifications/resources/list_changed, the Manager's subscribers are
// told and Passthru lists it; so is a prompt it adds
// (notifications/prompts/list_changed).
func TestPassthruSubscriptionsAndListChanged(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(map[bool]string{true: "2025-11-25", false: "2026-07-28"}[legacy], func(t *testing.T) {
			m := connect(t, nil, passthruServer("a", legacy))
			ctx := context.Background()
			got1, got2 := make(chan struct{}, 4), make(chan struct{}, 4)
			cancel1, err := m.SubscribeResource(ctx, "a", "test://a/r1", func() { got1 <- struct{}{} })
			if err != nil {
				t.Fatal(err)
			}
			cancel2, err := m.SubscribeResource(ctx, "a", "test://a/r1", func() { got2 <- struct{}{} })
			if err != nil {
				t.Fatal(err)
			}
			if s := ptCall(t, m, "a__subs", `{}`); s != "1/0" {
				t.Errorf("after two subscribers: subscribe/unsubscribe requests %s, want 1/0", s)
			}
			ptCall(t, m, "a__touch", `{"uri":"test://a/r1"}`)
			for i, ch := range []chan struct{}{got1, got2} {
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Fatalf("subscriber %d got no update", i+1)
				}
			}
			cancel1()
			cancel1() // idempotent
			if s := ptCall(t, m, "a__subs", `{}`); s != "1/0" {
				t.Errorf("after one of two cancelled: %s, want 1/0", s)
			}
			cancel2()
			want := "1/1" // resources/unsubscribe answered before cancel returns
			if !legacy {
				want = "1/0"
			}
			if s := ptCall(t, m, "a__subs", `{}`); s != want {
				t.Errorf("after both cancelled: %s, want %s", s, want)
			}

			changed := make(chan struct{}, 1)
			stop := m.Subscribe(func() {
				select {
				case changed <- struct{}{}:
				default:
				}
			})
			defer stop()
			ptCall(t, m, "a__add", `{"uri":"test://a/new"}`)
			deadline := time.After(10 * time.Second)
			for !slices.Contains(hostURIs(m.Passthru("")), "test://a/new") {
				select {
				case <-changed:
				case <-deadline:
					t.Fatalf("the added resource never appeared: %v", hostURIs(m.Passthru("")))
				}
			}
			promptNames := func() []string {
				var out []string
				for _, p := range m.Passthru("").Prompts {
					out = append(out, p.Prompt.Name)
				}
				return out
			}
			ptCall(t, m, "a__addprompt", `{"uri":"late"}`)
			for !slices.Contains(promptNames(), "late") {
				select {
				case <-changed:
				case <-deadline:
					t.Fatalf("the added prompt never appeared: %v", promptNames())
				}
			}
		})
	}
}

// TestPassthruConcurrentSubscribersWaitForOne: subscribers of one URI
// arriving together make one upstream subscription, and none returns
// before the server has it (2026-07-28: its subscriptions/listen stream
// acknowledged), so the server's count is 1 the moment they all returned,
// and an update reaches each.
func TestPassthruConcurrentSubscribersWaitForOne(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(map[bool]string{true: "2025-11-25", false: "2026-07-28"}[legacy], func(t *testing.T) {
			m := connect(t, nil, passthruServer("a", legacy))
			const n = 4
			got := make(chan int, n)
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cancel, err := m.SubscribeResource(context.Background(), "a", "test://a/r2", func() { got <- i })
					if err != nil {
						errs <- err
						return
					}
					t.Cleanup(cancel)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if s := ptCall(t, m, "a__subs", `{}`); s != "1/0" {
				t.Errorf("after %d concurrent subscribers returned: subscribe/unsubscribe requests %s, want 1/0", n, s)
			}
			ptCall(t, m, "a__touch", `{"uri":"test://a/r2"}`)
			seen := map[int]bool{}
			for len(seen) < n {
				select {
				case i := <-got:
					seen[i] = true
				case <-time.After(10 * time.Second):
					t.Fatalf("updates reached subscribers %v of %d", seen, n)
				}
			}
		})
	}
}

func TestNamespacedURI(t *testing.T) {
	u := mcpclient.NamespacedURI("my docs", "file:///a b")
	if u != "aibuddy://my%20docs/file:///a b" {
		t.Errorf("NamespacedURI = %q", u)
	}
	s, o, ok := mcpclient.SplitNamespacedURI(u)
	if !ok || s != "my docs" || o != "file:///a b" {
		t.Errorf("SplitNamespacedURI(%q) = %q %q %v", u, s, o, ok)
	}
	if _, _, ok := mcpclient.SplitNamespacedURI("file:///x"); ok {
		t.Error("a URI without the prefix split")
	}
}

// A resource URI or URI template that two connected servers both offer is
// namespaced with its server; SplitNamespacedURI gives the original back.
func ExampleNamespacedURI() {
	u := mcpclient.NamespacedURI("docs", "file:///README.md")
	fmt.Println(u)
	server, orig, _ := mcpclient.SplitNamespacedURI(u)
	fmt.Println(server, orig)
	// Output:
	// aibuddy://docs/file:///README.md
	// docs file:///README.md
}
