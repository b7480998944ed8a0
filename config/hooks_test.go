package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/config"
)

func TestHooksSettings(t *testing.T) {
	c, err := config.Parse([]byte(`{"hooks": {
	  "PreToolUse": [{"matcher": "execute|edit_file", "hooks": [{"type": "command", "command": "./policy.sh", "timeout": 30}]}],
	  "PostToolUse": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./fmt.sh", "timeout": "1.5s", "statusMessage": "formatting"},
	                                                   {"type": "command", "command": "./lint.sh", "timeout": 0.25}]}]},
	  "limits": {"hookTimeout": "90s", "hookMaxOutputBytes": 1024}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := c.Hooks
	if len(h.PreToolUse) != 1 || h.PreToolUse[0].Matcher != "execute|edit_file" || h.PreToolUse[0].Hooks[0].Timeout.D() != 30*time.Second {
		t.Errorf("PreToolUse %+v", h.PreToolUse)
	}
	if p := h.PostToolUse[0].Hooks; len(p) != 2 || p[0].Timeout.D() != 1500*time.Millisecond || p[1].Timeout.D() != 250*time.Millisecond {
		t.Errorf("PostToolUse %+v", h.PostToolUse)
	}
	if c.Limits.HookTimeout.D() != 90*time.Second || c.Limits.HookMaxOutputBytes != 1024 {
		t.Errorf("limits %+v", c.Limits)
	}
	for doc, want := range map[string]string{
		`{"hooks": {"Stop": []}}`:       "hooks.Stop: aibuddy runs only PreToolUse and PostToolUse hooks",
		`{"hooks": {"preToolUse": []}}`: `did you mean "hooks.PreToolUse"`,
		`{"hooks": {"OnEdit": []}}`:     "hooks.OnEdit: not a hook event",
		`{"hooks": {"PreToolUse": [{"matcher": "a(", "hooks": [{"type": "command", "command": "x"}]}]}}`: `hooks.PreToolUse[0].matcher "a(" is not a regular expression`,
		`{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}`:                   `hooks.PreToolUse[0].hooks[0].type "prompt": aibuddy runs only "command" hooks`,
		`{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": " "}]}]}}`:                 "hooks.PostToolUse[0].hooks[0].command is empty",
		`{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "x", "async": true}]}]}}`:  `unknown key "async"`,
		`{"hooks": {"PostToolUse": [{"matcher": "*", "hooks": []}]}}`:                                    "hooks.PostToolUse[0].hooks is empty",
		`{"limits": {"hookTimeout": -1}}`:                                                                "limits.hookTimeout",
	} {
		if _, err := config.Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
