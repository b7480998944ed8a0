package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The two hooks of issue 14's done-when line, as shell scripts a team
// would keep beside its settings: a PreToolUse policy that blocks
// `execute` of rm, and a PostToolUse formatter after write_file (strips
// trailing blanks, tells the model).
const (
	noRmScript = `#!/bin/sh
in=$(cat)
case "$in" in
*'"command":"rm '*) echo "rm is not allowed in this repository; move files to trash/ instead" >&2; exit 2 ;;
esac
exit 0
`
	fmtScript = `#!/bin/sh
p=$(sed -n 's/.*"tool_input":{"path":"\([^"]*\)".*/\1/p')
[ -n "$p" ] || { echo "no path in the input" >&2; exit 1; }
sed -i 's/[[:blank:]]*$//' "$CLAUDE_PROJECT_DIR/$p" || exit 1
printf '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted %s (trailing blanks removed)"}}\n' "$p"
`
)

// hookRig is a workspace with victim.txt and the settings file naming
// the two hooks.
type hookRig struct{ ws, cfg string }

func newHookSettings(t *testing.T) hookRig {
	t.Helper()
	ws, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "victim.txt"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"no-rm.sh": noRmScript, "fmt.sh": fmtScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	settings := fmt.Sprintf(`{"hooks": {
	  "PreToolUse":  [{"matcher": "execute", "hooks": [{"type": "command", "command": "sh '%s/no-rm.sh'", "timeout": 30}]}],
	  "PostToolUse": [{"matcher": "write_file|edit_file", "hooks": [{"type": "command", "command": "sh '%s/fmt.sh'"}]}]}}`, dir, dir)
	cfg := filepath.Join(dir, "aibuddy.json")
	if err := os.WriteFile(cfg, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	return hookRig{ws: ws, cfg: cfg}
}

// check asserts the effects on disk: victim.txt kept, notes.txt formatted.
func (h hookRig) check(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(h.ws, "victim.txt")); err != nil || string(b) != "keep me\n" {
		t.Errorf("victim.txt: %q %v (the rm hook did not hold)", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(h.ws, "notes.txt")); err != nil || string(b) != "a\nb\n" {
		t.Errorf("notes.txt: %q %v, want the formatted \"a\\nb\\n\"", b, err)
	}
}

const (
	rmInput    = `{"command":"rm victim.txt"}`
	writeInput = `{"path":"notes.txt","content":"a  \nb\t\n"}`
	rmReason   = "rm is not allowed in this repository; move files to trash/ instead"
	fmtContext = "formatted notes.txt (trailing blanks removed)"
)

// TestHooksThroughEveryEntryPoint is issue 14's done-when line for hooks:
// a hook that blocks `execute` of rm and one that formats after
// write_file, through aibuddy mcp, aibuddy run (a replayed chat
// completions provider) and aibuddy call, from one settings file.
func TestHooksThroughEveryEntryPoint(t *testing.T) {
	t.Run("mcp", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		h := newHookSettings(t)
		cs := connect(t, ctx, h.ws, "--config", h.cfg, "--data-dir", t.TempDir())
		res := callTool(t, ctx, cs, "execute", json.RawMessage(rmInput))
		if !res.IsError || !strings.Contains(text(res), rmReason) || !strings.Contains(text(res), "Authorization") ||
			!strings.Contains(text(res), "hooks.PreToolUse[0].hooks[0] in "+h.cfg) {
			t.Errorf("mcp rm: isError %v: %s", res.IsError, text(res))
		}
		res = callTool(t, ctx, cs, "write_file", json.RawMessage(writeInput))
		if res.IsError || !strings.Contains(text(res), fmtContext) {
			t.Errorf("mcp write_file: isError %v: %s", res.IsError, text(res))
		}
		h.check(t)
	})

	t.Run("call", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		h := newHookSettings(t)
		data := t.TempDir()
		out, err := exec.CommandContext(ctx, bin, "call", "--workspace", h.ws, "--config", h.cfg, "--data-dir", data, "execute", rmInput).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), rmReason) {
			t.Errorf("aibuddy call execute rm: %v\n%s", err, out)
		}
		out, err = exec.CommandContext(ctx, bin, "call", "--workspace", h.ws, "--config", h.cfg, "--data-dir", data, "write_file", writeInput).CombinedOutput()
		if err != nil || !strings.Contains(string(out), fmtContext) {
			t.Errorf("aibuddy call write_file: %v\n%s", err, out)
		}
		h.check(t)
	})

	t.Run("run", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		h := newHookSettings(t)
		var mu sync.Mutex
		var bodies []string
		chunk := func(c string) string {
			return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"local","choices":[` + c + `]}` + "\n\n"
		}
		toolCall := func(id, name, input string) string {
			args, _ := json.Marshal(input)
			return chunk(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}`, id, name, args)) +
				chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`) + "data: [DONE]\n\n"
		}
		replies := []string{toolCall("call_rm", "execute", rmInput), toolCall("call_w", "write_file", writeInput),
			chunk(`{"index":0,"delta":{"role":"assistant","content":"done"},"finish_reason":null}`) + chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`) + "data: [DONE]\n\n"}
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			n := len(bodies)
			bodies = append(bodies, string(b))
			mu.Unlock()
			if n >= len(replies) {
				http.Error(w, `{"error":{"message":"unexpected request"}}`, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, replies[n])
		}))
		defer ts.Close()
		cmd := exec.CommandContext(ctx, bin, "run", "--provider", "openai-chat", "--model", "local", "--base-url", ts.URL+"/v1",
			"--workspace", h.ws, "--config", h.cfg, "--data-dir", t.TempDir(), "clean up and write notes")
		cmd.Env = append(cmd.Environ(), "OPENAI_API_KEY=test-key")
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("aibuddy run: %v\n%s", err, out)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 3 {
			t.Fatalf("%d model requests, want 3:\n%s", len(bodies), out)
		}
		// What the model was shown of each call: the tool message that
		// answers it in the next request.
		shown := func(body, id string) string {
			var req struct {
				Messages []struct {
					Role       string `json:"role"`
					ToolCallID string `json:"tool_call_id"`
					Content    any    `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal([]byte(body), &req); err != nil {
				t.Fatal(err)
			}
			for _, m := range req.Messages {
				if m.Role == "tool" && m.ToolCallID == id {
					b, _ := json.Marshal(m.Content)
					return string(b)
				}
			}
			return ""
		}
		if s := shown(bodies[1], "call_rm"); !strings.Contains(s, rmReason) || !strings.Contains(s, "Authorization") {
			t.Errorf("the model was shown for rm: %s", s)
		}
		if s := shown(bodies[2], "call_w"); !strings.Contains(s, fmtContext) {
			t.Errorf("the model was shown for write_file: %s", s)
		}
		h.check(t)
	})
}
