package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

func oneGroupSet(t testing.TB, tools ...*tool.Tool) *capability.Set {
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	reg := registry.New([]registry.Group{{Key: "demo", Names: names,
		Build: func(registry.Env) ([]*tool.Tool, error) { return tools, nil }, Instructions: "Demo tools."}},
		[]registry.Meta{{Key: "demo"}}, nil)
	if err := reg.AssertConsistent(); err != nil {
		t.Fatal(err)
	}
	set, _, err := capability.Resolve(reg, capability.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func connectInMemory(t testing.TB, set *capability.Set, copts *mcp.ClientOptions) *mcp.ClientSession {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	srv := mcpserver.New(set, &mcpserver.Options{NewCallID: func() string { return "call-1" }})
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestResultMapping(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	tools := []*tool.Tool{
		tool.MustDefine(tool.Spec{Name: "picture", InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, *tool.Call) (*tool.Result, error) {
				return &tool.Result{Content: []tool.Content{{Type: tool.ImageContent, Data: png, MIMEType: "image/png"}},
					Evidence: tool.Evidence{"bytes": len(png)}}, nil
			}}),
		tool.MustDefine(tool.Spec{Name: "deny", InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, *tool.Call) (*tool.Result, error) {
				return nil, tool.Errorf(tool.Authorization, "not here")
			}}),
	}
	cs := connectInMemory(t, oneGroupSet(t, tools...), nil)
	defer cs.Close()
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "picture", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	img, ok := res.Content[0].(*mcp.ImageContent)
	if !ok || string(img.Data) != string(png) || img.MIMEType != "image/png" {
		t.Errorf("image content: %#v", res.Content[0])
	}
	if ev, _ := json.Marshal(res.Meta[mcpserver.MetaEvidence]); string(ev) != `{"bytes":12}` || res.Meta[mcpserver.MetaToolCallID] != "call-1" {
		t.Errorf("meta: %v", res.Meta)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "deny", Arguments: map[string]any{}})
	if err != nil || !res.IsError || res.Meta[mcpserver.MetaStage] != "authorization" {
		t.Errorf("deny: %v %+v", err, res)
	}
}

// An upstream tool's small structuredContent is passed through as
// structuredContent (not copied into _meta); a large one and large
// evidence stay out of the frame.
func TestStructuredContentAndEvidenceBounds(t *testing.T) {
	big := strings.Repeat("x", mcpserver.MaxStructuredBytes)
	mk := func(name string, ev tool.Evidence) *tool.Tool {
		return tool.MustDefine(tool.Spec{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, *tool.Call) (*tool.Result, error) {
				r := tool.Text("text form")
				r.Evidence = ev
				return r, nil
			}})
	}
	cs := connectInMemory(t, oneGroupSet(t,
		mk("small", tool.Evidence{"structured_content": map[string]any{"n": 1}, "server": "up"}),
		mk("large", tool.Evidence{"structured_content": map[string]any{"s": big}, "blob": big}),
	), nil)
	defer cs.Close()
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "small", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"n":1}` {
		t.Errorf("structuredContent %s", sc)
	}
	if ev, _ := json.Marshal(res.Meta[mcpserver.MetaEvidence]); string(ev) != `{"server":"up"}` {
		t.Errorf("evidence meta %s", ev)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "large", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := res.Meta[mcpserver.MetaEvidence].(string)
	if res.StructuredContent != nil || !strings.Contains(ev, "omitted") {
		t.Errorf("large: structuredContent %v, evidence %q", res.StructuredContent != nil, ev)
	}
}

func TestProgressNotificationsCarryEventsNotResults(t *testing.T) {
	chatty := tool.MustDefine(tool.Spec{Name: "chatty", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			c.Emit(tool.Event{Kind: tool.EventHeartbeat})
			c.Emit(tool.Event{Kind: tool.EventStdout, Data: []byte("line one\n")})
			c.Emit(tool.Event{Kind: tool.EventHeartbeat})
			return tool.Text("done"), nil
		}})
	var mu sync.Mutex
	var msgs []string
	cs := connectInMemory(t, oneGroupSet(t, chatty), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			msgs = append(msgs, fmt.Sprintf("%v:%s", req.Params.Progress, req.Params.Message))
			mu.Unlock()
		}})
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "chatty", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "done" {
		t.Errorf("result text %q: events must not enter the result", got)
	}
	// The client handles notifications asynchronously: wait (bounded) for
	// the three, then compare them in progress order.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(msgs)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(msgs)
	want := []string{"1:running", "2:line one\n", "3:running"}
	if fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Errorf("progress notifications %q, want %q", msgs, want)
	}
}

func ExampleNew() {
	greet := tool.MustDefine(tool.Spec{
		Name:        "greet",
		Description: "Greets someone.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			in, err := tool.Decode[struct{ Name string }](c)
			if err != nil {
				return nil, err
			}
			return tool.Text("hello, " + in.Name), nil
		},
	})
	reg := registry.New([]registry.Group{{Key: "hello", Names: []string{"greet"},
		Build: func(registry.Env) ([]*tool.Tool, error) { return []*tool.Tool{greet}, nil }}},
		[]registry.Meta{{Key: "hello", DisplayName: "Hello"}}, nil)
	set, _, _ := capability.Resolve(reg, capability.RunSpec{})

	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := mcpserver.New(set, nil).Connect(ctx, serverT, nil); err != nil {
		panic(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
	fmt.Println(res.IsError, res.Meta[mcpserver.MetaStage])
	// Output:
	// hello, Ada
	// true parameters
}

func TestAskUserQuestionOverElicitation(t *testing.T) {
	ask := approval.AskUserQuestion(mcpserver.ElicitAsker{})
	set := oneGroupSet(t, ask)
	// A host with elicitation answers through it.
	var asked string
	cs := connectInMemory(t, set, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "staging"}}, nil
		}})
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question",
		Arguments: map[string]any{"question": "Deploy where?", "options": []string{"staging", "prod"}}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "The user answered: staging" || asked != "Deploy where?" {
		t.Fatalf("with elicitation: %v %+v asked %q text %q", err, res, asked, res.Content[0].(*mcp.TextContent).Text)
	}
	// A host without elicitation: refused at Authorization, never answered.
	cs2 := connectInMemory(t, set, nil)
	defer cs2.Close()
	res, err = cs2.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question",
		Arguments: map[string]any{"question": "Deploy where?"}})
	if err != nil || !res.IsError || res.Meta[mcpserver.MetaStage] != "authorization" {
		t.Fatalf("without elicitation: %v %+v", err, res)
	}
}

// A call to a name that is not listed is a Discovery-stage tool error with a
// next step, not a bare JSON-RPC error.
func TestUnlistedToolIsADiscoveryError(t *testing.T) {
	cs := connectInMemory(t, oneGroupSet(t, tool.MustDefine(tool.Spec{Name: "greet", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("hi"), nil }})), nil)
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "gret", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("protocol error: %v", err)
	}
	if !res.IsError || res.Meta[mcpserver.MetaStage] != "discovery" || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `no tool named "gret"`) {
		t.Errorf("got %+v: %s", res, res.Content[0].(*mcp.TextContent).Text)
	}
}
