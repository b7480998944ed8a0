package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/hooks"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// Hook scripts of these tests: plain sh, reading the call on stdin.
const (
	// noRm refuses an execute whose command runs rm.
	noRm = `grep -q '"command":"rm ' && { echo "rm is not allowed here; move files to trash/ instead" >&2; exit 2; }; exit 0`
	// trimFmt strips trailing blanks from the file write_file wrote and
	// says so to the model.
	trimFmt = `p=$(sed -n 's/.*"tool_input":{"path":"\([^"]*\)".*/\1/p'); sed -i 's/[[:blank:]]*$//' "$p" || exit 1; ` +
		`printf '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted %s"}}' "$p"`
)

type hookRig struct {
	ws  string
	st  *sqlitestore.Store
	h   pipeline.Handler
	sb  *localsandbox.Sandbox
	set *capability.Set
}

func newHookRig(t *testing.T, hs []hooks.Hook, confirm approval.Confirmer) *hookRig {
	t.Helper()
	ws := t.TempDir()
	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	reg := registry.New(coretools.Groups(nil, nil), coretools.Metas, nil)
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p := pipeline.New(&pipeline.Options{Store: st, Workspace: ws, Confirmer: confirm, Hooks: hooks.New(hs, hooks.Options{Sandbox: sb})})
	return &hookRig{ws: ws, st: st, sb: sb, set: set, h: p.Handler(pipeline.Run{TaskID: "task_h", Tools: pipeline.Fixed(set, nil)})}
}

func mkHook(t *testing.T, ev hooks.Event, matcher, cmd string) hooks.Hook {
	t.Helper()
	m, err := hooks.ParseMatcher(matcher)
	if err != nil {
		t.Fatal(err)
	}
	return hooks.Hook{Event: ev, Matcher: m, Command: cmd, Where: "hooks." + string(ev) + "[0].hooks[0] in settings.json"}
}

func textOf(res *tool.Result) string {
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text + "\n")
	}
	return b.String()
}

// TestPreToolUseBlocksRm: the PreToolUse hook refuses `rm` at the
// Authorization stage, naming the hook and its reason; the file stays;
// other commands run; the record carries the stage.
func TestPreToolUseBlocksRm(t *testing.T) {
	r := newHookRig(t, []hooks.Hook{mkHook(t, hooks.PreToolUse, "execute", noRm)}, nil)
	if err := os.WriteFile(filepath.Join(r.ws, "victim.txt"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.h(context.Background(), &tool.Call{ID: "c_rm", Name: "execute", Input: json.RawMessage(`{"command":"rm victim.txt"}`)})
	if !res.IsError || res.Stage != tool.Authorization {
		t.Fatalf("rm: %+v", res)
	}
	for _, want := range []string{"blocked by PreToolUse hook", "rm is not allowed here; move files to trash/ instead",
		`matcher "execute"`, "hooks.PreToolUse[0].hooks[0] in settings.json"} {
		if !strings.Contains(textOf(res), want) {
			t.Errorf("result lacks %q:\n%s", want, textOf(res))
		}
	}
	if _, err := os.Stat(filepath.Join(r.ws, "victim.txt")); err != nil {
		t.Errorf("victim.txt is gone: %v", err)
	}
	rec, err := r.st.Get(context.Background(), "c_rm")
	if err != nil || rec.Stage != string(tool.Authorization) {
		t.Errorf("record %+v %v", rec, err)
	}
	res = r.h(context.Background(), &tool.Call{ID: "c_ls", Name: "execute", Input: json.RawMessage(`{"command":"cat victim.txt"}`)})
	if res.IsError || !strings.Contains(textOf(res), "keep me") {
		t.Errorf("cat: %s", textOf(res))
	}
	if ev, _ := res.Evidence[pipeline.EvidenceHooks].([]map[string]any); len(ev) != 1 || ev[0]["decision"] != "proceed" {
		t.Errorf("hooks evidence %v", res.Evidence[pipeline.EvidenceHooks])
	}
}

// TestPostToolUseFormatsAfterWrite: the PostToolUse hook formats the file
// write_file wrote; write_file's own Verification passed first (its
// read-back is of the bytes it wrote), the model sees the hook's
// additionalContext, the record keeps it.
func TestPostToolUseFormatsAfterWrite(t *testing.T) {
	r := newHookRig(t, []hooks.Hook{mkHook(t, hooks.PostToolUse, "write_file|edit_file", trimFmt)}, nil)
	res := r.h(context.Background(), &tool.Call{ID: "c_w", Name: "write_file", Input: json.RawMessage(`{"path":"notes.txt","content":"a  \nb\t\n"}`)})
	if res.IsError {
		t.Fatalf("write: %s", textOf(res))
	}
	if b, _ := os.ReadFile(filepath.Join(r.ws, "notes.txt")); string(b) != "a\nb\n" {
		t.Errorf("notes.txt %q, want the formatted a\\nb\\n", b)
	}
	if res.Evidence[tool.EvidenceVerified] != true {
		t.Errorf("not verified: %v", res.Evidence)
	}
	if !strings.Contains(textOf(res), "formatted notes.txt") {
		t.Errorf("the model does not see the hook's context:\n%s", textOf(res))
	}
	rec, _ := r.st.Get(context.Background(), "c_w")
	if !strings.Contains(string(rec.Model), "formatted notes.txt") || !strings.Contains(string(rec.Output), "formatted notes.txt") {
		t.Errorf("the record lacks the hook's context: %s", rec.Model)
	}
	// A read is not matched: no hook runs, no evidence.
	res = r.h(context.Background(), &tool.Call{ID: "c_r", Name: "read_file", Input: json.RawMessage(`{"path":"notes.txt"}`)})
	if _, ok := res.Evidence[pipeline.EvidenceHooks]; ok || res.IsError {
		t.Errorf("read_file ran hooks: %v", res.Evidence)
	}
}

// TestPostToolUseBlockAndFailure: a block (exit 2) and a failing hook
// make the result a Verification error that keeps the tool's text; the
// effect stands.
func TestPostToolUseBlockAndFailure(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{`echo "line 1: trailing blank" >&2; exit 2`, "blocked by PostToolUse hook"},
		{`exit 3`, "exited 3"},
	} {
		r := newHookRig(t, []hooks.Hook{mkHook(t, hooks.PostToolUse, "write_file", c.cmd)}, nil)
		res := r.h(context.Background(), &tool.Call{ID: "c", Name: "write_file", Input: json.RawMessage(`{"path":"x.txt","content":"x \n"}`)})
		if !res.IsError || res.Stage != tool.Verification || !strings.Contains(textOf(res), c.want) || !strings.Contains(textOf(res), "effect stands") {
			t.Errorf("%s: %+v\n%s", c.cmd, res, textOf(res))
		}
		if !strings.Contains(textOf(res), "x.txt") {
			t.Errorf("the tool's own text is gone:\n%s", textOf(res))
		}
		if b, _ := os.ReadFile(filepath.Join(r.ws, "x.txt")); string(b) != "x \n" {
			t.Errorf("x.txt %q", b)
		}
	}
}

// TestPreToolUseFailsClosed: a PreToolUse hook that crashes refuses the
// call; one that asks puts it to the Confirmer, and a refusal stops it.
func TestPreToolUseFailsClosedAndAsks(t *testing.T) {
	r := newHookRig(t, []hooks.Hook{mkHook(t, hooks.PreToolUse, "*", `echo boom >&2; exit 1`)}, nil)
	res := r.h(context.Background(), &tool.Call{ID: "c", Name: "write_file", Input: json.RawMessage(`{"path":"y.txt","content":"y"}`)})
	if !res.IsError || res.Stage != tool.Authorization || !strings.Contains(textOf(res), "fail closed") || !strings.Contains(textOf(res), "boom") {
		t.Errorf("crashing hook: %s", textOf(res))
	}
	if _, err := os.Stat(filepath.Join(r.ws, "y.txt")); err == nil {
		t.Error("y.txt written past a failing hook")
	}

	var asked []approval.Action
	answer := false
	confirm := approval.ConfirmerFunc(func(_ context.Context, a approval.Action) (approval.Decision, error) {
		asked = append(asked, a)
		return approval.Decision{Approved: answer}, nil
	})
	ask := `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"writes outside src/"}}'`
	r = newHookRig(t, []hooks.Hook{mkHook(t, hooks.PreToolUse, "write_file", ask)}, confirm)
	res = r.h(context.Background(), &tool.Call{ID: "c1", Name: "write_file", Input: json.RawMessage(`{"path":"y.txt","content":"y"}`)})
	if !res.IsError || res.Stage != tool.Authorization || len(asked) != 1 || !strings.Contains(asked[0].Reasons[0], "writes outside src/") {
		t.Errorf("rejected ask: %s (asked %+v)", textOf(res), asked)
	}
	if rec, err := r.st.Get(context.Background(), "c1"+pipeline.HookAskRecordSuffix); err != nil || rec.Outcome != "ok" {
		t.Errorf("ask record %+v %v", rec, err)
	}
	answer = true
	res = r.h(context.Background(), &tool.Call{ID: "c2", Name: "write_file", Input: json.RawMessage(`{"path":"y.txt","content":"y"}`)})
	if res.IsError || len(asked) != 2 {
		t.Errorf("approved ask: %s", textOf(res))
	}
	if b, _ := os.ReadFile(filepath.Join(r.ws, "y.txt")); string(b) != "y" {
		t.Errorf("y.txt %q", b)
	}
}

// TestPreToolUseUpdatedInput: a hook's updatedInput replaces the input
// (checked against the schema again) and the model is told.
func TestPreToolUseUpdatedInput(t *testing.T) {
	up := `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo rewritten"}}}'`
	r := newHookRig(t, []hooks.Hook{mkHook(t, hooks.PreToolUse, "execute", up)}, nil)
	res := r.h(context.Background(), &tool.Call{ID: "c", Name: "execute", Input: json.RawMessage(`{"command":"echo original"}`)})
	if res.IsError || !strings.Contains(textOf(res), "rewritten") || strings.Contains(textOf(res), "original\n") ||
		!strings.Contains(textOf(res), "replaced the input") {
		t.Errorf("updatedInput: %s", textOf(res))
	}
	bad := `echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"nope":1}}}'`
	r = newHookRig(t, []hooks.Hook{mkHook(t, hooks.PreToolUse, "execute", bad)}, nil)
	res = r.h(context.Background(), &tool.Call{ID: "c", Name: "execute", Input: json.RawMessage(`{"command":"echo original"}`)})
	if !res.IsError || res.Stage != tool.Authorization || !strings.Contains(textOf(res), "schema refuses") {
		t.Errorf("bad updatedInput: %s", textOf(res))
	}
}

// TestHooksMatchMCPToolsByClaudeCodeName: an MCP tool (server__tool) is
// matched by Claude Code's mcp__server__tool too, and both events' hooks
// are in the evidence, in the order they ran.
func TestHooksMatchMCPToolsByClaudeCodeName(t *testing.T) {
	ws := t.TempDir()
	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	issue := tool.MustDefine(tool.Spec{Name: "github__create_issue", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("issue #7 created"), nil }})
	set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{MCP: []capability.MCPServer{{Name: "github", Connected: true, Tools: []*tool.Tool{issue}}}})
	if err != nil {
		t.Fatal(err)
	}
	log := `cat >> "$CLAUDE_PROJECT_DIR/log.jsonl"`
	hs := []hooks.Hook{mkHook(t, hooks.PreToolUse, "mcp__github__.*", log), mkHook(t, hooks.PostToolUse, "github__create_issue", log+"; echo '{\"hookSpecificOutput\":{\"additionalContext\":\"logged\"}}'")}
	h := pipeline.New(&pipeline.Options{Hooks: hooks.New(hs, hooks.Options{Sandbox: sb})}).Handler(pipeline.Run{TaskID: "t", Tools: pipeline.Fixed(set, nil)})
	res := h(context.Background(), &tool.Call{ID: "c", Name: "github__create_issue", Input: json.RawMessage(`{"title":"x"}`)})
	if res.IsError || !strings.Contains(textOf(res), "logged") {
		t.Fatalf("%s", textOf(res))
	}
	b, _ := os.ReadFile(filepath.Join(ws, "log.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"hook_event_name":"PreToolUse","tool_name":"github__create_issue"`) ||
		!strings.Contains(lines[1], `"tool_response":{"evidence":null,"text":"issue #7 created"}`) {
		t.Errorf("hook inputs:\n%s", b)
	}
	ev, _ := res.Evidence[pipeline.EvidenceHooks].([]map[string]any)
	if len(ev) != 2 || ev[0]["event"] != "PreToolUse" || ev[1]["event"] != "PostToolUse" {
		t.Errorf("hooks evidence %v", ev)
	}
}
