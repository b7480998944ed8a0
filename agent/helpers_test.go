package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// scripted is a test double of the MODEL only: it replays a fixed
// sequence of turns (text and tool calls). A turn is a function of the
// request so a test can look at what the model was sent (tools,
// rebuilt messages). Everything else in these tests is real: the tools on
// a local sandbox in t.TempDir(), discovery, processes.
type scripted struct {
	strategy provider.Strategy
	turns    []func(req *provider.Request) []provider.Block

	mu   sync.Mutex
	reqs []*provider.Request
}

func (m *scripted) Strategy() provider.Strategy {
	if m.strategy == "" {
		return provider.ActiveTools
	}
	return m.strategy
}

func (m *scripted) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		m.mu.Lock()
		cp := *req
		// What a provider receives: its own ids (an adapter's WireIDs).
		cp.Messages = provider.WireIDs(append([]provider.Message(nil), req.Messages...))
		cp.Tools = append([]provider.Tool(nil), req.Tools...)
		m.reqs = append(m.reqs, &cp)
		i := len(m.reqs) - 1
		m.mu.Unlock()
		var blocks []provider.Block
		if i < len(m.turns) {
			blocks = m.turns[i](&cp)
		} else {
			blocks = []provider.Block{say("(script ended)")}
		}
		stop := "end_turn"
		for _, b := range blocks {
			if ctx.Err() != nil {
				yield(provider.Event{}, ctx.Err())
				return
			}
			switch b.Type {
			case provider.Text:
				if !yield(provider.Event{Kind: provider.EventText, Text: b.Text}, nil) {
					return
				}
			case provider.ToolUse:
				stop = "tool_use"
				bb := b
				if !yield(provider.Event{Kind: provider.EventToolUse, Block: &bb}, nil) {
					return
				}
			}
		}
		yield(provider.Event{Kind: provider.EventDone, StopReason: stop, Usage: provider.Usage{InputTokens: 10, OutputTokens: 5},
			Message: &provider.Message{Role: provider.Assistant, Blocks: blocks}}, nil)
	}
}

func (m *scripted) requests() []*provider.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*provider.Request(nil), m.reqs...)
}

func say(text string) provider.Block { return provider.Block{Type: provider.Text, Text: text} }

func use(id, name, input string) provider.Block {
	return provider.Block{Type: provider.ToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

// static is a turn that ignores the request.
func static(blocks ...provider.Block) func(*provider.Request) []provider.Block {
	return func(*provider.Request) []provider.Block { return blocks }
}

// tracker is an MCP server as a run sees it: 12 tools, so the per-server
// gate (10) defers all of them. Calls are kept for assertions.
type tracker struct {
	mu    sync.Mutex
	calls []string // "name input"
}

var trackerTools = []struct{ name, desc string }{
	{"create_issue", "Create a new issue in the tracker with a title and body."},
	{"close_issue", "Close an issue by number."},
	{"get_issue", "Get one issue by number."},
	{"list_issues", "List open issues."},
	{"comment_issue", "Add a comment to an issue."},
	{"label_issue", "Add a label to an issue."},
	{"assign_issue", "Assign an issue to a person."},
	{"search_issues", "Search issues by words."},
	{"create_milestone", "Create a milestone."},
	{"list_milestones", "List milestones."},
	{"lock_issue", "Lock the conversation of an issue."},
	{"delete_issue", "Delete an issue for good."},
}

func (tr *tracker) server() capability.MCPServer {
	var tools []*tool.Tool
	for _, d := range trackerTools {
		spec := tool.Spec{
			Name:        "tracker__" + d.name,
			Description: d.desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"number":{"type":"integer"}},"additionalProperties":false}`),
			Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
				tr.mu.Lock()
				tr.calls = append(tr.calls, call.Name+" "+string(call.Input))
				tr.mu.Unlock()
				return tool.Text("ok: " + call.Name), nil
			},
		}
		if d.name == "delete_issue" {
			t := true
			spec.Annotations = &tool.Annotations{DestructiveHint: &t}
		}
		tools = append(tools, tool.MustDefine(spec))
	}
	return capability.MCPServer{Name: "tracker", Connected: true, Tools: tools}
}

func (tr *tracker) got() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.calls...)
}

// env is a real tool set: the built-in filesystem and execute groups on a
// local sandbox in a temp folder, ask_user_question with asker, and the
// tracker MCP tools.
func newSet(t *testing.T, ws string, asker approval.Asker, tr *tracker) *capability.Set {
	t.Helper()
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	groups := append(coretools.Groups(nil, nil), approval.Group())
	metas := append(append([]registry.Meta(nil), coretools.Metas...), approval.Meta)
	reg := registry.New(groups, metas, nil)
	if err := reg.AssertConsistent(); err != nil {
		t.Fatal(err)
	}
	spec := capability.RunSpec{Sandbox: sb, Services: map[string]any{}}
	if asker != nil {
		spec.Services[approval.ServiceUserInput] = asker
	}
	if tr != nil {
		spec.MCP = []capability.MCPServer{tr.server()}
	}
	set, _, err := capability.Resolve(reg, spec)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// confirmer answers confirmations from a script and records the actions.
type confirmer struct {
	mu      sync.Mutex
	answers []bool
	actions []approval.Action
}

func (c *confirmer) Confirm(ctx context.Context, a approval.Action) (approval.Decision, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := len(c.actions)
	c.actions = append(c.actions, a)
	if i >= len(c.answers) {
		return approval.Decision{}, fmt.Errorf("unexpected confirmation %d: %s", i, a.Summary())
	}
	return approval.Decision{Approved: c.answers[i]}, nil
}

func toolNames(req *provider.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}

func has(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// allText joins every text in msgs (results included).
func allText(msgs []provider.Message) string {
	var b strings.Builder
	var walk func(bs []provider.Block)
	walk = func(bs []provider.Block) {
		for _, x := range bs {
			b.WriteString(x.Text)
			b.WriteString("\n")
			walk(x.Content)
		}
	}
	for _, m := range msgs {
		walk(m.Blocks)
	}
	return b.String()
}

// ourID is aibuddy's toolCallId of the call the model gave providerID in
// transcript (the first such call).
func ourID(t *testing.T, transcript []provider.Message, providerID string) string {
	t.Helper()
	for _, m := range transcript {
		for _, b := range m.Blocks {
			if b.Type == provider.ToolUse && b.ProviderID == providerID {
				return b.ID
			}
		}
	}
	t.Fatalf("no call with provider id %q in the transcript", providerID)
	return ""
}
