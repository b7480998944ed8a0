package hooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/hooks"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// newSandbox is a real local sandbox over a fresh workspace, confined as
// execute is by default (workspace-write).
func newSandbox(t testing.TB, mode string) (*localsandbox.Sandbox, string) {
	t.Helper()
	ws := t.TempDir()
	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true, Confinement: &confine.Settings{Confinement: mode}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, ws
}

// script writes an executable shell script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func hook(t *testing.T, ev hooks.Event, matcher, command string) hooks.Hook {
	t.Helper()
	m, err := hooks.ParseMatcher(matcher)
	if err != nil {
		t.Fatal(err)
	}
	return hooks.Hook{Event: ev, Matcher: m, Command: command, Where: "hooks." + string(ev) + "[0].hooks[0] in test"}
}

func TestMatcher(t *testing.T) {
	for _, c := range []struct {
		m    string
		name string
		want bool
	}{
		{"", "execute", true}, {"*", "anything", true},
		{"execute|edit_file", "execute", true}, {"execute|edit_file", "edit_file", true},
		{"execute|edit_file", "write_file", false}, {"edit", "edit_file", false}, // exact names, not substrings
		{"edit.*", "edit_file", true}, {"^read_", "read_file", true}, {"^read_", "thread_x", false},
		{"mcp__github__.*", "mcp__github__create_issue", true},
	} {
		m, err := hooks.ParseMatcher(c.m)
		if err != nil {
			t.Fatalf("%q: %v", c.m, err)
		}
		if got := m.Match(c.name); got != c.want {
			t.Errorf("matcher %q on %q: %v, want %v", c.m, c.name, got, c.want)
		}
	}
	if _, err := hooks.ParseMatcher("a("); err == nil {
		t.Error("a( compiled")
	}
}

// TestInputOnStdin: a hook reads Claude Code's fields on stdin and runs in
// the workspace with CLAUDE_PROJECT_DIR set.
func TestInputOnStdin(t *testing.T) {
	sb, ws := newSandbox(t, "workspace-write")
	dump := script(t, t.TempDir(), "dump.sh", `cat > "$CLAUDE_PROJECT_DIR/input.json"; pwd > "$AIBUDDY_PROJECT_DIR/cwd.txt"; echo "$AIBUDDY_HOOK_EVENT" >> cwd.txt`)
	r := hooks.New([]hooks.Hook{hook(t, hooks.PostToolUse, "write_file", dump)}, hooks.Options{Sandbox: sb})
	out := r.Run(context.Background(), hooks.PostToolUse, hooks.Call{SessionID: "task_1", ToolUseID: "call_1", ToolName: "write_file",
		ToolInput: json.RawMessage(`{"path":"a.txt","content":"x"}`), ToolResponse: json.RawMessage(`{"text":"wrote 1 byte"}`)})
	if out.Err != nil || len(out.Ran) != 1 || out.Decision != hooks.Proceed {
		t.Fatalf("outcome %+v", out)
	}
	b, err := os.ReadFile(filepath.Join(ws, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := map[string]any{"session_id": "task_1", "cwd": ws, "hook_event_name": "PostToolUse", "tool_name": "write_file",
		"tool_use_id": "call_1"}
	for k, v := range want {
		if in[k] != v {
			t.Errorf("input %s = %v, want %v", k, in[k], v)
		}
	}
	if ti, _ := in["tool_input"].(map[string]any); ti["path"] != "a.txt" {
		t.Errorf("tool_input %v", in["tool_input"])
	}
	if tr, _ := in["tool_response"].(map[string]any); tr["text"] != "wrote 1 byte" {
		t.Errorf("tool_response %v", in["tool_response"])
	}
	cwd, _ := os.ReadFile(filepath.Join(ws, "cwd.txt"))
	if real, _ := filepath.EvalSymlinks(ws); strings.TrimSpace(string(cwd)) != real+"\nPostToolUse" {
		t.Errorf("cwd.txt %q, want the workspace %s and the event", cwd, real)
	}
}

// TestPreToolUseDecisions: exit 2, decision block, permissionDecision
// deny/ask/allow, updatedInput, and the order: a deny stops the hooks
// after it, an ask is kept while later hooks run.
func TestPreToolUseDecisions(t *testing.T) {
	sb, ws := newSandbox(t, "workspace-write")
	dir := t.TempDir()
	exit2 := script(t, dir, "exit2.sh", `echo "rm is not allowed here" >&2; exit 2`)
	block := script(t, dir, "block.sh", `echo '{"decision":"block","reason":"policy says no"}'`)
	deny := script(t, dir, "deny.sh", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not on Fridays"}}'`)
	ask := script(t, dir, "ask.sh", `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"looks risky"}}'`)
	allow := script(t, dir, "allow.sh", `echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"echo safer"},"additionalContext":"rewritten"}}'`)
	mark := script(t, dir, "mark.sh", `cat > "$CLAUDE_PROJECT_DIR/later.json"`)
	call := hooks.Call{ToolName: "execute", ToolInput: json.RawMessage(`{"command":"rm x"}`)}
	for _, c := range []struct {
		name     string
		commands []string
		decision hooks.Decision
		reason   string
		by       string
		later    bool // mark.sh ran
	}{
		{"exit 2", []string{exit2, mark}, hooks.Deny, "rm is not allowed here", exit2, false},
		{"decision block", []string{block}, hooks.Deny, "policy says no", block, false},
		{"permissionDecision deny", []string{deny}, hooks.Deny, "not on Fridays", deny, false},
		{"ask then later hooks", []string{ask, mark}, hooks.Ask, "looks risky", ask, true},
		{"ask then deny", []string{ask, deny}, hooks.Deny, "not on Fridays", deny, false},
		{"allow", []string{allow, mark}, hooks.Allow, "", allow, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(filepath.Join(ws, "later.json"))
			var hs []hooks.Hook
			for _, cmd := range c.commands {
				hs = append(hs, hook(t, hooks.PreToolUse, "execute", cmd))
			}
			out := hooks.New(hs, hooks.Options{Sandbox: sb}).Run(context.Background(), hooks.PreToolUse, call)
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if out.Decision != c.decision || out.Reason != c.reason || out.By == nil || out.By.Command != c.by {
				t.Errorf("decision %q reason %q by %v; want %q %q %s", out.Decision, out.Reason, out.By, c.decision, c.reason, c.by)
			}
			later, err := os.ReadFile(filepath.Join(ws, "later.json"))
			if (err == nil) != c.later {
				t.Errorf("the hook after ran: %v, want %v", err == nil, c.later)
			}
			if c.name == "allow" {
				if string(out.UpdatedInput) != `{"command":"echo safer"}` || len(out.Context) != 1 || out.Context[0].Text != "rewritten" {
					t.Errorf("updatedInput %s context %+v", out.UpdatedInput, out.Context)
				}
				if !strings.Contains(string(later), `"tool_input":{"command":"echo safer"}`) {
					t.Errorf("the later hook did not see the updated input: %s", later)
				}
			}
		})
	}
}

// TestFailuresAreErrors: a non-zero exit other than 2, a timeout, broken
// JSON and JSON over the output bound are failures naming the hook; a
// PreToolUse failure stops the hooks after it.
func TestFailuresAreErrors(t *testing.T) {
	sb, ws := newSandbox(t, "workspace-write")
	dir := t.TempDir()
	crash := script(t, dir, "crash.sh", `echo "jq: not found" >&2; exit 127`)
	broken := script(t, dir, "broken.sh", `echo '{"decision": '`)
	huge := script(t, dir, "huge.sh", `printf '{"reason":"'; head -c 200000 /dev/zero | tr '\0' a; echo '"}'`)
	mark := script(t, dir, "mark.sh", `touch "$CLAUDE_PROJECT_DIR/later"`)
	for _, c := range []struct {
		name, cmd, want string
	}{
		{"exit 127", crash, "exited 127"},
		{"broken JSON", broken, "not the hook output JSON"},
		{"over the bound", huge, "more than 65536 bytes of JSON (limits.hookMaxOutputBytes)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(filepath.Join(ws, "later"))
			r := hooks.New([]hooks.Hook{hook(t, hooks.PreToolUse, "", c.cmd), hook(t, hooks.PreToolUse, "", mark)}, hooks.Options{Sandbox: sb})
			out := r.Run(context.Background(), hooks.PreToolUse, hooks.Call{ToolName: "execute", ToolInput: json.RawMessage(`{}`)})
			var he *hooks.Error
			if !errors.As(out.Err, &he) || !strings.Contains(he.Error(), c.want) || !strings.Contains(he.Error(), c.cmd) ||
				!strings.Contains(he.Error(), "hooks.PreToolUse[0].hooks[0] in test") {
				t.Fatalf("error %v, want one naming the hook and %q", out.Err, c.want)
			}
			if !strings.Contains(he.Hint(), "fail closed") {
				t.Errorf("hint %q", he.Hint())
			}
			if _, err := os.Stat(filepath.Join(ws, "later")); err == nil {
				t.Error("the hook after a failing PreToolUse hook ran")
			}
		})
	}
	if out := hooks.New([]hooks.Hook{hook(t, hooks.PreToolUse, "", crash)}, hooks.Options{Sandbox: sb}).
		Run(context.Background(), hooks.PreToolUse, hooks.Call{ToolName: "x"}); out.Err == nil || !strings.Contains(out.Err.Error(), "jq: not found") {
		t.Errorf("stderr not in the error: %v", out.Err)
	}

	// A timeout: the hook sleeps past its own timeout, which the sandbox
	// enforces (the test itself waits on no clock).
	slow := hook(t, hooks.PreToolUse, "", "sleep 30")
	slow.Timeout = 50 * time.Millisecond
	out := hooks.New([]hooks.Hook{slow}, hooks.Options{Sandbox: sb}).Run(context.Background(), hooks.PreToolUse, hooks.Call{ToolName: "x"})
	if out.Err == nil || !strings.Contains(out.Err.Error(), "timed out after 50ms") {
		t.Errorf("timeout: %v", out.Err)
	}
}

// TestPostToolUseRunsAll: PostToolUse hooks all run in order, blocks and
// failures are collected, additionalContext kept.
func TestPostToolUseRunsAll(t *testing.T) {
	sb, ws := newSandbox(t, "workspace-write")
	dir := t.TempDir()
	first := script(t, dir, "first.sh", `echo one >> "$CLAUDE_PROJECT_DIR/order"; echo "line too long" >&2; exit 2`)
	crash := script(t, dir, "crash.sh", `echo two >> "$CLAUDE_PROJECT_DIR/order"; exit 1`)
	ctx := script(t, dir, "ctx.sh", `echo three >> "$CLAUDE_PROJECT_DIR/order"; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted"},"systemMessage":"hi person"}'`)
	r := hooks.New([]hooks.Hook{hook(t, hooks.PostToolUse, "write_file", first), hook(t, hooks.PostToolUse, "*", crash),
		hook(t, hooks.PostToolUse, "write_file", ctx), hook(t, hooks.PostToolUse, "write_file", ctx) /* once */},
		hooks.Options{Sandbox: sb})
	out := r.Run(context.Background(), hooks.PostToolUse, hooks.Call{ToolName: "write_file", ToolInput: json.RawMessage(`{}`)})
	if b, _ := os.ReadFile(filepath.Join(ws, "order")); string(b) != "one\ntwo\nthree\n" {
		t.Errorf("order %q", b)
	}
	if out.Decision != hooks.Block || out.Reason != "line too long" || len(out.Blocks) != 1 {
		t.Errorf("block %q %q %+v", out.Decision, out.Reason, out.Blocks)
	}
	if len(out.Failed) != 1 || !strings.Contains(out.Failed[0].Error(), "exited 1") || !strings.Contains(out.Failed[0].Hint(), "effect stands") {
		t.Errorf("failures %v", out.Failed)
	}
	if len(out.Context) != 1 || out.Context[0].Text != "formatted" || len(out.Messages) != 1 || out.Messages[0].Text != "hi person" {
		t.Errorf("context %+v messages %+v", out.Context, out.Messages)
	}
}

// TestConfinedLikeExecute: under read-only confinement a hook cannot
// write the workspace, as execute cannot; the failure says what the
// sandbox refused.
func TestConfinedLikeExecute(t *testing.T) {
	sb, ws := newSandbox(t, "read-only")
	r := hooks.New([]hooks.Hook{hook(t, hooks.PostToolUse, "", `echo x > "$CLAUDE_PROJECT_DIR/f" || exit 1`)}, hooks.Options{Sandbox: sb})
	out := r.Run(context.Background(), hooks.PostToolUse, hooks.Call{ToolName: "write_file"})
	if out.Err == nil || !strings.Contains(out.Err.Error(), "exited 1") {
		t.Fatalf("a read-only confined hook's write: %v, want exit 1", out.Err)
	}
	if _, err := os.Stat(filepath.Join(ws, "f")); err == nil {
		t.Error("file written")
	}
	t.Log(out.Err)
	var _ sandbox.Sandbox = sb
}
