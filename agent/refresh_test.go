package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// sets resolves tool sets the way `aibuddy run` does after an MCP server
// changed: one registry and sandbox, each new set reusing the previous
// one's built-in tools.
type sets struct {
	t    *testing.T
	reg  *registry.Registry
	spec capability.RunSpec
	prev *capability.Set

	mu    sync.Mutex
	calls []string
}

func newSets(t *testing.T) *sets {
	sb, err := localsandbox.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	reg := registry.New(append(coretools.Groups(nil, nil), approval.Group()),
		append(append([]registry.Meta(nil), coretools.Metas...), approval.Meta), nil)
	return &sets{t: t, reg: reg, spec: capability.RunSpec{Sandbox: sb, Services: map[string]any{}}}
}

// server is an MCP server named "small" offering the named tools, each
// answering "<name> ran".
func (s *sets) server(names ...string) capability.MCPServer {
	var tools []*tool.Tool
	for _, n := range names {
		tools = append(tools, tool.MustDefine(tool.Spec{
			Name: "small__" + n, Description: "Do " + n + " in the small service.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Annotations: &tool.Annotations{ReadOnlyHint: true},
			Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
				s.mu.Lock()
				s.calls = append(s.calls, call.Name)
				s.mu.Unlock()
				return tool.Text(call.Name + " ran"), nil
			},
		}))
	}
	return capability.MCPServer{Name: "small", Connected: true, Tools: tools}
}

func (s *sets) resolve(servers ...capability.MCPServer) *capability.Set {
	spec := s.spec
	spec.MCP = servers
	spec.Reuse = s.prev
	set, _, err := capability.Resolve(s.reg, spec)
	if err != nil {
		s.t.Fatal(err)
	}
	s.prev = set
	return set
}

// TestRunPicksUpToolChanges: Options.CurrentSet gives a new set between
// steps, as `aibuddy run` does when an MCP server sends list_changed.
// Step 1 sees small__alpha and small__beta (2 tools: direct) and the
// deferred tracker tools; it loads tracker__create_issue with
// tool_search. Step 2's set has small__beta removed and small__gamma
// added: the request shows gamma, not beta, the activation is kept, and a
// call to gamma runs while one to beta is refused at Discovery. Step 3's
// set gives small 11 tools, over the per-server gate of 10: they are
// deferred now (but gamma, which a retained call references), and the
// tracker activation is still there.
func TestRunPicksUpToolChanges(t *testing.T) {
	s := newSets(t)
	tr := &tracker{}
	many := []string{"alpha", "gamma"}
	for i := 0; i < 9; i++ {
		many = append(many, fmt.Sprintf("extra%d", i))
	}
	var m *scripted
	byStep := []*capability.Set{
		s.resolve(tr.server(), s.server("alpha", "beta")),
		s.resolve(tr.server(), s.server("alpha", "gamma")),
		s.resolve(tr.server(), s.server(many...)),
	}
	current := func() *capability.Set { return byStep[min(len(m.requests()), len(byStep)-1)] }
	m = &scripted{turns: []func(*provider.Request) []provider.Block{
		func(req *provider.Request) []provider.Block {
			n := toolNames(req)
			if !has(n, "small__alpha") || !has(n, "small__beta") || has(n, "tracker__create_issue") {
				t.Errorf("step 1 tools: %v", n)
			}
			return []provider.Block{use("s1", "tool_search", `{"query":"select:tracker__create_issue"}`)}
		},
		func(req *provider.Request) []provider.Block {
			n := toolNames(req)
			if !has(n, "small__gamma") || has(n, "small__beta") || !has(n, "tracker__create_issue") {
				t.Errorf("step 2 tools: want small__gamma and tracker__create_issue, not small__beta: %v", n)
			}
			return []provider.Block{use("g1", "small__gamma", `{}`), use("b1", "small__beta", `{}`)}
		},
		func(req *provider.Request) []provider.Block {
			n := toolNames(req)
			// small__gamma stays: the retained call g1 references it.
			if has(n, "small__alpha") || has(n, "small__extra0") || !has(n, "small__gamma") || !has(n, "tool_search") || !has(n, "tracker__create_issue") {
				t.Errorf("step 3 tools: small's 11 tools must be deferred but the referenced gamma, the activation kept: %v", n)
			}
			return []provider.Block{use("c1", "tracker__create_issue", `{"title":"x"}`)}
		},
		static(say("done")),
	}}
	a := agent.New(agent.Options{Model: m, Set: byStep[0], CurrentSet: current, Policy: noConfirm()})
	evs, sum, err := drain(t, a.Run(context.Background(), "use the tools"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn {
		t.Fatalf("stop %s: %v", sum.Stop, err)
	}
	results := map[string]*tool.Result{}
	for _, ev := range evs {
		if ev.Kind == agent.EventToolResult {
			results[ev.ProviderCallID] = ev.Result
		}
	}
	if r := results["g1"]; r == nil || r.IsError || !strings.Contains(r.AllText(), "small__gamma ran") {
		t.Errorf("small__gamma: %+v", r)
	}
	if r := results["b1"]; r == nil || !r.IsError || r.Stage != tool.Discovery {
		t.Errorf("small__beta after its removal: want a Discovery error, got %+v", r)
	}
	if r := results["c1"]; r == nil || r.IsError {
		t.Errorf("tracker__create_issue after two refreshes: %+v", r)
	}
	if got := strings.Join(s.calls, ","); got != "small__gamma" {
		t.Errorf("small's handlers ran %q, want small__gamma only", got)
	}
	if got := tr.got(); len(got) != 1 || !strings.HasPrefix(got[0], "tracker__create_issue") {
		t.Errorf("tracker calls %v", got)
	}
	checkRequests(t, m)
}
