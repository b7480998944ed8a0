package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/tool"
)

func execCall(cmd string) *tool.Call {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return &tool.Call{ID: "c", Name: "execute", Input: in}
}

// builtins are stand-ins of the built-in tools with the access their
// groups declare (coretools): the policy decides on that, not on names.
var builtins = func() map[string]*tool.Tool {
	noop := func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("ran"), nil }
	obj := json.RawMessage(`{"type":"object"}`)
	m := map[string]*tool.Tool{}
	for name, acc := range map[string]tool.AccessFunc{
		"read_file": tool.PathAccess(tool.AccessRead, "path"), "grep": tool.PathAccess(tool.AccessRead, "path"),
		"write_file": tool.PathAccess(tool.AccessEdit, "path"),
		"execute": func(in json.RawMessage) (tool.Access, error) {
			var v struct{ Command string }
			err := json.Unmarshal(in, &v)
			return tool.Access{Kind: tool.AccessBash, Command: v.Command}, err
		},
	} {
		m[name] = tool.MustDefine(tool.Spec{Name: name, InputSchema: obj, Handler: noop, Access: acc})
	}
	return m
}()

func lookup(name string) (*tool.Tool, string, bool) {
	t, ok := builtins[name]
	return t, "", ok
}

// builtin is the subject of a call of a built-in tool.
func builtin(c *tool.Call) approval.Subject { return approval.Subject{Tool: builtins[c.Name], Call: c} }

func TestPolicyCheck(t *testing.T) {
	p := approval.DefaultPolicy()
	yes := true
	destructive := tool.MustDefine(tool.Spec{Name: "gh__delete_repo", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &tool.Annotations{DestructiveHint: &yes},
		Handler:     func(context.Context, *tool.Call) (*tool.Result, error) { return nil, nil }})
	plain := tool.MustDefine(tool.Spec{Name: "gh__get_repo", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return nil, nil }})
	cases := []struct {
		name string
		s    approval.Subject
		want approval.Verdict
	}{
		// BH-059: the first three forms never run without confirmation.
		{"cat .env", builtin(execCall("cat .env")), approval.Confirm},
		{"grep KEY .env", builtin(execCall("grep KEY .env")), approval.Confirm},
		{"sed -n 1p .env", builtin(execCall("sed -n 1p .env")), approval.Confirm},
		{"cat ./config/.env.local", builtin(execCall("cat ./config/.env.local")), approval.Confirm},
		{"--env-file=.env", builtin(execCall("docker run --env-file=.env img")), approval.Confirm},
		// Documented limit: a name built at run time is not seen.
		{"python builds the name", builtin(execCall(`python3 -c "print(open('.e'+'nv').read())"`)), approval.Allow},
		{"ls", builtin(execCall("ls -la")), approval.Allow},
		{".envrc is not .env", builtin(execCall("cat .envrc")), approval.Allow},
		{"rm -rf", builtin(execCall("rm -rf build")), approval.Confirm},
		{"git push --force", builtin(execCall("git push origin main --force")), approval.Confirm},
		{"read_file .env denied", builtin(&tool.Call{Name: "read_file", Input: json.RawMessage(`{"path":".env"}`)}), approval.Deny},
		{"grep in .env.production denied", builtin(&tool.Call{Name: "grep", Input: json.RawMessage(`{"pattern":"KEY","path":"app/.env.production"}`)}), approval.Deny},
		{"read_file README", builtin(&tool.Call{Name: "read_file", Input: json.RawMessage(`{"path":"README.md"}`)}), approval.Allow},
		{"write_file not configured", builtin(&tool.Call{Name: "write_file", Input: json.RawMessage(`{"path":"a","content":"b"}`)}), approval.Allow},
		{"MCP destructiveHint", approval.Subject{Tool: destructive, Server: "gh", Call: &tool.Call{Name: "gh__delete_repo", Input: json.RawMessage(`{}`)}}, approval.Confirm},
		{"MCP unannotated", approval.Subject{Tool: plain, Server: "gh", Call: &tool.Call{Name: "gh__get_repo", Input: json.RawMessage(`{}`)}}, approval.Allow},
		{"not an object", builtin(&tool.Call{Name: "execute", Input: json.RawMessage(`[1]`)}), approval.Allow},
	}
	for _, c := range cases {
		got, act := p.Check(c.s)
		if got != c.want {
			t.Errorf("%s: verdict %d, want %d (reasons %v)", c.name, got, c.want, act.Reasons)
		}
	}
	byTool := &approval.Policy{Tools: []string{"write_file"}, Unannotated: true}
	if v, _ := byTool.Check(builtin(&tool.Call{Name: "write_file", Input: json.RawMessage(`{"path":"a","content":"b"}`)})); v != approval.Confirm {
		t.Error("a tool configured by name is not confirmed")
	}
	if v, _ := byTool.Check(approval.Subject{Tool: plain, Server: "gh", Call: &tool.Call{Name: "gh__get_repo"}}); v != approval.Confirm {
		t.Error("Unannotated does not confirm an unannotated MCP tool")
	}
}

func TestActionKeyNormalizesInput(t *testing.T) {
	p := approval.DefaultPolicy()
	_, a1 := p.Check(builtin(&tool.Call{Name: "execute", Input: json.RawMessage(`{"command":"rm -rf b","timeout_ms":1000}`)}))
	_, a2 := p.Check(builtin(&tool.Call{Name: "execute", Input: json.RawMessage(`{ "timeout_ms": 1000, "command": "rm -rf b" }`)}))
	_, a3 := p.Check(builtin(&tool.Call{Name: "execute", Input: json.RawMessage(`{"command":"rm -rf c","timeout_ms":1000}`)}))
	if a1.Key() != a2.Key() || a1.Key() == a3.Key() {
		t.Errorf("keys: %s %s %s", a1.Key(), a2.Key(), a3.Key())
	}
}

func TestGateAsksEveryTimeAndRunsTheExactInput(t *testing.T) {
	var ran []string
	next := func(ctx context.Context, call *tool.Call) *tool.Result {
		ran = append(ran, string(call.Input))
		return tool.Text("ran")
	}
	var asked atomic.Int32
	var decisions []approval.Exchange
	answers := []bool{true, false, true}
	g := &approval.Gate{
		Policy: approval.DefaultPolicy(),
		Lookup: lookup,
		Confirmer: approval.ConfirmerFunc(func(ctx context.Context, a approval.Action) (approval.Decision, error) {
			n := asked.Add(1)
			return approval.Decision{Approved: answers[n-1]}, nil
		}),
		OnDecision: func(ctx context.Context, e approval.Exchange) { decisions = append(decisions, e) },
	}
	h := g.Wrap(next)
	for i := 0; i < 3; i++ {
		call := execCall("rm -rf build")
		res := h(context.Background(), call)
		if want := answers[i]; res.IsError == want {
			t.Errorf("call %d: %+v", i, res)
		}
		if !answers[i] && (res.Stage != tool.Authorization || !strings.Contains(res.AllText(), "rejected")) {
			t.Errorf("rejection: %+v", res)
		}
	}
	if asked.Load() != 3 || len(ran) != 2 || len(decisions) != 3 {
		t.Errorf("asked %d, ran %d, decisions %d", asked.Load(), len(ran), len(decisions))
	}
	if decisions[1].Text() != "Rejected: "+decisions[1].Action.Summary() || !strings.HasPrefix(decisions[0].Text(), "Approved: execute `rm -rf build`") {
		t.Errorf("texts: %q / %q", decisions[0].Text(), decisions[1].Text())
	}

	// The input changed while the person was deciding: the approved one runs.
	ran = nil
	var call *tool.Call
	g2 := &approval.Gate{Policy: approval.DefaultPolicy(), Lookup: lookup, Confirmer: approval.ConfirmerFunc(func(ctx context.Context, a approval.Action) (approval.Decision, error) {
		call.Input = json.RawMessage(`{"command":"rm -rf /"}`)
		return approval.Decision{Approved: true}, nil
	})}
	call = execCall("rm -rf build")
	g2.Wrap(next)(context.Background(), call)
	if len(ran) != 1 || ran[0] != `{"command":"rm -rf build"}` {
		t.Errorf("ran %q", ran)
	}
}

func TestGateNeverProceedsUnasked(t *testing.T) {
	next := func(ctx context.Context, call *tool.Call) *tool.Result { t.Error("ran unasked"); return tool.Text("") }
	res := (&approval.Gate{Policy: approval.DefaultPolicy(), Lookup: lookup}).Wrap(next)(context.Background(), execCall("sudo reboot"))
	if !res.IsError || res.Stage != tool.Authorization {
		t.Errorf("no confirmer: %+v", res)
	}
	failing := approval.ConfirmerFunc(func(ctx context.Context, a approval.Action) (approval.Decision, error) {
		return approval.Decision{Approved: true}, errors.New("terminal gone")
	})
	res = (&approval.Gate{Policy: approval.DefaultPolicy(), Lookup: lookup, Confirmer: failing}).Wrap(next)(context.Background(), execCall("sudo reboot"))
	if !res.IsError || res.Stage != tool.Authorization {
		t.Errorf("confirmer error: %+v", res)
	}
	res = (&approval.Gate{Policy: approval.DefaultPolicy(), Lookup: lookup}).Wrap(next)(context.Background(),
		&tool.Call{Name: "read_file", Input: json.RawMessage(`{"path":".env"}`)})
	if !res.IsError || res.Stage != tool.Authorization || !strings.Contains(res.AllText(), "denied by policy") {
		t.Errorf("denied path: %+v", res)
	}
}

func TestGateChecksParametersBeforeAsking(t *testing.T) {
	ex := tool.MustDefine(tool.Spec{Name: "execute",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","minLength":1}},"required":["command"],"additionalProperties":false}`),
		Handler:     func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("ran"), nil }})
	g := &approval.Gate{
		Policy: approval.DefaultPolicy(),
		Lookup: func(string) (*tool.Tool, string, bool) { return ex, "", true },
		Confirmer: approval.ConfirmerFunc(func(ctx context.Context, a approval.Action) (approval.Decision, error) {
			t.Error("asked about an invalid call")
			return approval.Decision{}, nil
		}),
	}
	res := g.Wrap(ex.Call)(context.Background(), &tool.Call{Name: "execute", Input: json.RawMessage(`{"command":"rm -rf x","bogus":1}`)})
	if res.Stage != tool.Parameters {
		t.Errorf("got %+v", res)
	}
}

func TestTerminal(t *testing.T) {
	var out strings.Builder
	term := approval.NewTerminal(strings.NewReader("y\nn use staging\n2\n\n"), &out)
	ctx := context.Background()
	act := approval.Action{Tool: "execute", Target: "`rm -rf build`", Scope: "workspace shell", Consequence: "deletes build", Reasons: []string{"command matches rm"}}
	if d, err := term.Confirm(ctx, act); err != nil || !d.Approved {
		t.Errorf("y: %+v %v", d, err)
	}
	if d, err := term.Confirm(ctx, act); err != nil || d.Approved || d.Note != "use staging" {
		t.Errorf("n: %+v %v", d, err)
	}
	if a, err := term.Ask(ctx, approval.Question{Text: "Where?", Options: []string{"staging", "prod"}}); err != nil || a.Text != "prod" {
		t.Errorf("ask: %+v %v", a, err)
	}
	if a, err := term.Ask(ctx, approval.Question{Text: "Name?"}); err != nil || !a.Declined {
		t.Errorf("decline: %+v %v", a, err)
	}
	if _, err := term.Confirm(ctx, act); !errors.Is(err, approval.ErrNoAnswer) {
		t.Errorf("after EOF: %v", err)
	}
	for _, want := range []string{"target:      `rm -rf build`", "consequence: deletes build", "why asked:   command matches rm", "2) prod"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("prompt lacks %q:\n%s", want, out.String())
		}
	}
	// A prompt returns when ctx is done even while the read blocks. In a
	// synctest bubble, synctest.Wait returns once the prompt is blocked on
	// the read: the cancel comes then, never before the read began.
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		blocked := approval.NewTerminal(pr, io.Discard)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { _, err := blocked.Confirm(cctx, act); done <- err }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the prompt returned with no input and ctx live: %v", err)
		default:
		}
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled prompt: %v", err)
			}
		default:
			t.Fatal("the prompt did not return after its context ended")
		}
	})
}
