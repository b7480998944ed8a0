package capability_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// noExec is a real local sandbox that declares it cannot run commands, as a
// file-only host would.
type noExec struct{ *localsandbox.Sandbox }

func (noExec) Supports(op sandbox.Op) bool { return op != sandbox.OpExec }

func mk(name string) *tool.Tool {
	return tool.MustDefine(tool.Spec{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text(name + " ran"), nil }})
}

func testRegistry() *registry.Registry {
	b := func(names ...string) func(registry.Env) ([]*tool.Tool, error) {
		return func(registry.Env) ([]*tool.Tool, error) {
			var out []*tool.Tool
			for _, n := range names {
				out = append(out, mk(n))
			}
			return out, nil
		}
	}
	return registry.New([]registry.Group{
		{Key: "filesystem", Names: []string{"ls", "read_file"}, Build: b("ls", "read_file"),
			Requires: registry.Requirements{SandboxOps: []sandbox.Op{sandbox.OpList, sandbox.OpRead}}, Instructions: "Use ls."},
		{Key: "execute", Names: []string{"execute"}, Build: b("execute"),
			Requires: registry.Requirements{SandboxOps: []sandbox.Op{sandbox.OpExec}}},
		{Key: "ask", Names: []string{"ask_user_question"}, Build: b("ask_user_question"),
			Requires: registry.Requirements{Services: []string{"user_input"}}},
		{Key: "github", Names: []string{"github__create_issue"}, Build: b("github__create_issue"),
			Requires: registry.Requirements{MCPServers: []string{"github"}}},
		{Key: "team", Names: []string{"send_message"}, Build: b("send_message"),
			Requires: registry.Requirements{Prerequisites: []string{"team"}},
			Hooks: registry.Hooks{OnResult: func(ctx context.Context, c *tool.Call, r *tool.Result) *tool.Result {
				return tool.Text("hooked: " + r.AllText())
			}}},
	}, []registry.Meta{{Key: "filesystem"}, {Key: "execute"}, {Key: "ask"}, {Key: "github"}, {Key: "team"}}, nil)
}

func TestResolveIntersection(t *testing.T) {
	ls, err := localsandbox.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	set, ex, err := capability.Resolve(testRegistry(), capability.RunSpec{
		ToolKeys: []string{"filesystem", "execute", "ask", "github", "team", "browser"},
		Sandbox:  noExec{ls},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "ls,read_file" {
		t.Errorf("set = %s, want ls,read_file", got)
	}
	want := map[string]capability.Reason{
		"execute":              capability.SandboxUnsupported,
		"ask_user_question":    capability.MissingService,
		"github__create_issue": capability.MCPNotConnected,
		"send_message":         capability.MissingPrereq,
		"(key browser)":        capability.UnknownKey,
	}
	got := map[string]capability.Reason{}
	for _, e := range ex {
		name := e.Tool
		if name == "" {
			name = "(key " + e.Group + ")"
		}
		got[name] = e.Reason
		if e.Detail == "" {
			t.Errorf("%s excluded without detail", name)
		}
	}
	for k, r := range want {
		if got[k] != r {
			t.Errorf("%s: reason %q, want %q", k, got[k], r)
		}
	}
	if len(got) != len(want) {
		t.Errorf("exclusions %v, want %v", got, want)
	}
	if set.Instructions() != "Use ls." {
		t.Errorf("instructions %q", set.Instructions())
	}
}

func TestResolveAllDependenciesPresent(t *testing.T) {
	ls, err := localsandbox.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	set, ex, err := capability.Resolve(testRegistry(), capability.RunSpec{
		Sandbox:       ls,
		Services:      map[string]any{"user_input": struct{}{}},
		MCP:           []capability.MCPServer{{Name: "github", Connected: true}},
		Prerequisites: []string{"team"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 0 || len(set.Tools()) != 6 {
		t.Fatalf("nil ToolKeys with every dependency should give all 6 tools, got %v excluded %v", set.Names(), ex)
	}
	res := set.Call(context.Background(), &tool.Call{Name: "send_message"})
	if res.AllText() != "hooked: send_message ran" {
		t.Errorf("group hook not applied: %q", res.AllText())
	}
	res = set.Call(context.Background(), &tool.Call{Name: "web_fetch"})
	if !res.IsError || res.Stage != tool.Discovery {
		t.Errorf("unknown tool: %+v", res)
	}
}

func TestResolveMissingEverythingIsEmptyNotBroken(t *testing.T) {
	set, ex, err := capability.Resolve(testRegistry(), capability.RunSpec{ToolKeys: []string{"filesystem", "execute", "ask"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Tools()) != 0 {
		t.Errorf("no sandbox and no services must give an empty set, got %v", set.Names())
	}
	if len(ex) != 6 {
		t.Errorf("want 6 exclusions (4 unmet, 2 not configured), got %d: %v", len(ex), ex)
	}
}

func TestResolveMCPServers(t *testing.T) {
	set, ex, err := capability.Resolve(testRegistry(), capability.RunSpec{
		ToolKeys: []string{"github"},
		MCP: []capability.MCPServer{
			{Name: "github", Connected: true, Tools: []*tool.Tool{mk("github__list_issues")},
				Quarantined: []capability.Quarantined{{Tool: "bad", Reason: `server "github" tool "bad": input schema top level must be type object, got string`}}},
			{Name: "slow", Error: "initialize timed out after 2s"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "github__create_issue,github__list_issues" {
		t.Errorf("set = %s", got)
	}
	if srv, ok := set.Server("github__list_issues"); !ok || srv != "github" {
		t.Errorf("Server = %q %v", srv, ok)
	}
	if _, ok := set.Server("github__create_issue"); ok {
		t.Error("a registry group's tool reported as an MCP tool")
	}
	var reasons []string
	for _, e := range ex {
		if e.Reason == capability.ServerFailed || e.Reason == capability.SchemaUnusable {
			reasons = append(reasons, e.String())
		}
	}
	want := `bad: server "github" tool "bad": input schema top level must be type object, got string|(mcp:slow): MCP server "slow" is not connected: initialize timed out after 2s`
	if strings.Join(reasons, "|") != want {
		t.Errorf("exclusions %q", reasons)
	}
	if res := set.Call(context.Background(), &tool.Call{Name: "github__list_issues"}); res.AllText() != "github__list_issues ran" {
		t.Errorf("MCP tool call: %q", res.AllText())
	}
	_, _, err = capability.Resolve(testRegistry(), capability.RunSpec{ToolKeys: []string{},
		MCP: []capability.MCPServer{{Name: "a", Connected: true, Tools: []*tool.Tool{mk("x__y")}},
			{Name: "b", Connected: true, Tools: []*tool.Tool{mk("x__y")}}}})
	if err == nil {
		t.Error("two servers offering one name must be an error, never a silent overwrite")
	}
}

func TestResolveReusesBuiltToolsAcrossAnMCPRefresh(t *testing.T) {
	ls, err := localsandbox.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	spec := capability.RunSpec{ToolKeys: []string{"filesystem"}, Sandbox: ls,
		MCP: []capability.MCPServer{{Name: "a", Connected: true, Tools: []*tool.Tool{mk("a__one")}}}}
	first, _, err := capability.Resolve(testRegistry(), spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Reuse = first
	spec.MCP = []capability.MCPServer{{Name: "a", Connected: true, Tools: []*tool.Tool{mk("a__two")}}}
	second, _, err := capability.Resolve(testRegistry(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(second.Names(), ","); got != "ls,read_file,a__two" {
		t.Fatalf("refreshed set %s", got)
	}
	t1, _ := first.Tool("read_file")
	t2, _ := second.Tool("read_file")
	if t1 != t2 {
		t.Error("the built-in tools were built again: their per-run state is lost")
	}
}
