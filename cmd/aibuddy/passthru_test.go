package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/tool"
)

// hostEvents are the notifications a host session received.
type hostEvents struct {
	updated     chan string
	listChanged chan struct{}
}

// connectHost starts `aibuddy mcp` over stdio with cfg, as a host would,
// with handlers for the resource notifications.
func connectHost(t *testing.T, ctx context.Context, ws, cfg string) (*mcp.ClientSession, hostEvents) {
	t.Helper()
	ev := hostEvents{updated: make(chan string, 64), listChanged: make(chan struct{}, 64)}
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg)
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			ev.updated <- r.Params.URI
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			ev.listChanged <- struct{}{}
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, ev
}

func resourceURIs(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.URI)
	}
	return out
}

func promptText(res *mcp.GetPromptResult) string {
	var b strings.Builder
	for _, m := range res.Messages {
		if tc, ok := m.Content.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestPassthroughWithServerEverything drives `aibuddy mcp` as a host
// would, with the reference server-everything (npm) behind it: its
// resources, templates, prompts and completions reach the host under their
// own names (one upstream server: nothing collides), reads and prompts go
// to it, a subscription gets its notifications/resources/updated, and a
// resource the server adds reaches the host with
// notifications/resources/list_changed.
func TestPassthroughWithServerEverything(t *testing.T) {
	ws := t.TempDir()
	cfg := settings(t, ws, []string{"everything"}, map[string]any{"discovery": map[string]any{"perServer": 100, "total": 100}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, ev := connectHost(t, ctx, ws, cfg)

	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged || caps.Prompts == nil || caps.Completions == nil {
		t.Fatalf("capabilities %+v: want resources (subscribe, listChanged), prompts and completions, as the upstream server has them", caps)
	}

	uris := resourceURIs(t, ctx, cs)
	if !slices.Contains(uris, "demo://resource/static/document/features.md") {
		t.Errorf("resources/list = %v; want the server's demo://resource/static/document/features.md", uris)
	}
	var templates []string
	for tpl, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, tpl.URITemplate)
	}
	if !slices.Contains(templates, "demo://resource/dynamic/text/{resourceId}") || !slices.Contains(templates, "demo://resource/dynamic/blob/{resourceId}") {
		t.Errorf("resources/templates/list = %v; want the dynamic text and blob templates", templates)
	}

	doc, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/features.md"})
	if err != nil || len(doc.Contents) != 1 || !strings.Contains(doc.Contents[0].Text, "Everything Server - Features") {
		t.Fatalf("read features.md: %v %+v", err, doc)
	}
	txt, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/7"})
	if err != nil || len(txt.Contents) != 1 || txt.Contents[0].URI != "demo://resource/dynamic/text/7" || !strings.Contains(txt.Contents[0].Text, "7") {
		t.Fatalf("read a templated text resource: %v %+v", err, txt)
	}
	blob, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/blob/3"})
	if err != nil || len(blob.Contents) != 1 || len(blob.Contents[0].Blob) == 0 {
		t.Fatalf("read a templated blob resource: %v %+v", err, blob)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "nowhere://x"}); err == nil {
		t.Errorf("reading a URI no server offers succeeded")
	}

	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	for _, want := range []string{"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} {
		if !slices.Contains(prompts, want) {
			t.Errorf("prompts/list = %v; want %s", prompts, want)
		}
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Lisbon"}})
	if err != nil || !strings.Contains(promptText(gp), "Lisbon") {
		t.Fatalf("prompts/get args-prompt: %v %+v", err, gp)
	}

	comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "department", Value: "Eng"}})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"Engineering"}) {
		t.Fatalf("completion of a prompt argument: %v %+v", err, comp)
	}
	comp, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "demo://resource/dynamic/text/{resourceId}"},
		Argument: mcp.CompleteParamsArgument{Name: "resourceId", Value: "4"}})
	if err != nil || !slices.Contains(comp.Completion.Values, "4") {
		t.Fatalf("completion of a template argument: %v %+v", err, comp)
	}

	// A subscription: the server sends updates for subscribed URIs every
	// 5 s once its toggle-subscriber-updates tool is called.
	const watched = "demo://resource/dynamic/text/1"
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: watched}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	res := callTool(t, ctx, cs, "everything__toggle-subscriber-updates", map[string]any{})
	mustOK(t, "toggle-subscriber-updates", res)
	select {
	case got := <-ev.updated:
		if got != watched {
			t.Errorf("notifications/resources/updated for %q; want %q", got, watched)
		}
	case <-ctx.Done():
		t.Fatalf("no notifications/resources/updated for the subscribed %s", watched)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: watched}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}

	// A resource the server adds (gzip-file-as-resource registers a
	// session resource) reaches the host with a list change.
	for len(ev.listChanged) > 0 {
		<-ev.listChanged
	}
	res = callTool(t, ctx, cs, "everything__gzip-file-as-resource", map[string]any{
		"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8gd29ybGQ=", "outputType": "resourceLink"})
	mustOK(t, "gzip-file-as-resource", res)
	const added = "demo://resource/session/hello.txt.gz"
	for !slices.Contains(resourceURIs(t, ctx, cs), added) {
		select {
		case <-ev.listChanged:
		case <-ctx.Done():
			t.Fatalf("the resource the server added, %s, never reached the host's resources/list", added)
		}
	}
	gz, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: added})
	if err != nil || len(gz.Contents) != 1 || len(gz.Contents[0].Blob) == 0 || gz.Contents[0].MIMEType != "application/gzip" {
		t.Fatalf("read the added resource: %v %+v", err, gz)
	}
}

// TestPassthroughNamespacesAndBounds: two upstream servers offering the
// same resources and prompts (two server-everything) get them namespaced,
// both of them (aibuddy://<server>/<uri>, <server>__<prompt>), and reads,
// prompts and completions route to the right one; a text resource over
// limits.resultMaxChars keeps its head and tail under the cut notice, a
// blob over mcp.passthroughMaxBlobBytes is replaced by a note.
func TestPassthroughNamespacesAndBounds(t *testing.T) {
	ws := t.TempDir()
	cfg := settings(t, ws, []string{"everything"}, map[string]any{
		"limits": map[string]any{"resultMaxChars": 1000},
		"mcp":    map[string]any{"initTimeout": "20s", "startupWait": "20s", "passthroughMaxBlobBytes": 16},
	})
	addSecondEverything(t, cfg, "other")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, _ := connectHost(t, ctx, ws, cfg)

	uris := resourceURIs(t, ctx, cs)
	for _, want := range []string{"aibuddy://everything/demo://resource/static/document/features.md", "aibuddy://other/demo://resource/static/document/features.md"} {
		if !slices.Contains(uris, want) {
			t.Errorf("resources/list = %v; want %s", uris, want)
		}
	}
	if slices.Contains(uris, "demo://resource/static/document/features.md") {
		t.Errorf("resources/list keeps the colliding URI as is: %v", uris)
	}
	doc, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "aibuddy://other/demo://resource/static/document/features.md"})
	if err != nil || len(doc.Contents) != 1 {
		t.Fatalf("read: %v %+v", err, doc)
	}
	text := doc.Contents[0].Text
	first, _, _ := strings.Cut(text, "\n")
	if _, ok := tool.ParseCut(first); !ok || !strings.Contains(text, "Everything Server - Features") || !strings.Contains(text, "characters omitted") {
		t.Errorf("a 9,889-byte resource over the 1,000-character bound: want the cut notice, the head and the omission marker; got %q", text)
	}
	if doc.Contents[0].URI != "aibuddy://other/demo://resource/static/document/features.md" {
		t.Errorf("contents URI %q; want the namespaced URI", doc.Contents[0].URI)
	}
	blob, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "aibuddy://everything/demo://resource/dynamic/blob/2"})
	if err != nil || len(blob.Contents) != 1 || len(blob.Contents[0].Blob) != 0 || !strings.Contains(blob.Contents[0].Text, "mcp.passthroughMaxBlobBytes") {
		t.Fatalf("a blob over the 16-byte bound: want a note naming the bound; got %v %+v", err, blob)
	}

	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(prompts, "everything__args-prompt") || !slices.Contains(prompts, "other__args-prompt") || slices.Contains(prompts, "args-prompt") {
		t.Errorf("prompts/list = %v; want both servers' args-prompt namespaced", prompts)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "other__args-prompt", Arguments: map[string]string{"city": "Porto"}})
	if err != nil || !strings.Contains(promptText(gp), "Porto") {
		t.Fatalf("prompts/get other__args-prompt: %v %+v", err, gp)
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "everything__completable-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "department", Value: "Sa"}})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"Sales"}) {
		t.Fatalf("completion through a namespaced prompt: %v %+v", err, comp)
	}
}

// addSecondEverything adds another server-everything, named name, to the
// settings file cfg.
func addSecondEverything(t *testing.T, cfg, name string) {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["mcpServers"].(map[string]any)[name] = map[string]any{"command": npmServer(t, "mcp-server-everything")}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
