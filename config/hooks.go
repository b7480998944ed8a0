package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/hooks"
)

// Hooks is the settings' "hooks" block in Claude Code's shape: for each
// event a list of matcher groups, each with the commands to run
// (package hooks runs them; its doc gives the input, the output and the
// exit codes):
//
//	"hooks": {
//	  "PreToolUse":  [{"matcher": "execute", "hooks": [{"type": "command", "command": "./policy.sh", "timeout": 30}]}],
//	  "PostToolUse": [{"matcher": "write_file|edit_file", "hooks": [{"type": "command", "command": "./fmt.sh"}]}]}
//
// Only the tool events PreToolUse and PostToolUse exist here; Claude
// Code's other events (Stop, SessionStart, UserPromptSubmit, ...) have no
// counterpart in a tool plane and are refused by name, so a block copied
// from Claude Code never loses a hook silently.
type Hooks struct {
	PreToolUse  []HookMatcher `json:"PreToolUse,omitempty"`
	PostToolUse []HookMatcher `json:"PostToolUse,omitempty"`
}

// HookMatcher is one matcher group: Matcher chooses the tools by name
// ("" or "*" every tool; only letters, digits, "_" and "|": exactly
// those names; otherwise an RE2 regular expression found anywhere in the
// name, as Claude Code reads it), Hooks are run for each call it matches.
type HookMatcher struct {
	Matcher string        `json:"matcher,omitempty"`
	Hooks   []HookCommand `json:"hooks"`
}

// HookCommand is one hook: Type "command" (the only type here; Claude
// Code's "prompt", "agent", "http" and "mcp_tool" are refused), the shell
// Command, and Timeout in seconds as Claude Code writes it (60, 0.5), or
// a Go duration string ("90s"). Omitted: limits.hookTimeout (default 60
// s, Claude Code's).
type HookCommand struct {
	Type    string      `json:"type"`
	Command string      `json:"command"`
	Timeout HookTimeout `json:"timeout,omitempty"`
	// StatusMessage is Claude Code's spinner text; accepted and unused
	// (aibuddy shows no spinner).
	StatusMessage string `json:"statusMessage,omitempty"`
}

// HookTimeout is a hook's timeout: a JSON number of seconds (Claude
// Code's unit) or a Go duration string.
type HookTimeout time.Duration

// UnmarshalJSON accepts 60, 0.5 or "90s".
func (h *HookTimeout) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("timeout %q: want seconds (60) or a Go duration (\"90s\")", s)
		}
		*h = HookTimeout(d)
		return nil
	}
	sec, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("timeout %s: want seconds (60) or a Go duration (\"90s\")", b)
	}
	*h = HookTimeout(time.Duration(sec * float64(time.Second)))
	return nil
}

// MarshalJSON writes the Go duration string.
func (h HookTimeout) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(h).String()) }

// D returns the time.Duration.
func (h HookTimeout) D() time.Duration { return time.Duration(h) }

// Defaults of the hook limits (limits.hookTimeout, limits.hookMaxOutputBytes).
const (
	// DefaultHookTimeout is Claude Code's default hook timeout.
	DefaultHookTimeout = 60 * time.Second
	// DefaultHookMaxOutputBytes bounds what is kept of one hook's stdout,
	// and of its stderr, in bytes.
	DefaultHookMaxOutputBytes = 64 << 10
)

// claudeEvents are Claude Code's hook events that have no counterpart
// here (its hooks reference).
var claudeEvents = []string{"PermissionRequest", "PermissionDenied", "PostToolUseFailure", "Notification",
	"UserPromptSubmit", "Stop", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
	"SessionStart", "SessionEnd", "Setup"}

// UnmarshalJSON decodes the block strictly, naming what it refuses.
func (h *Hooks) UnmarshalJSON(b []byte) error {
	var events map[string]json.RawMessage
	if err := json.Unmarshal(b, &events); err != nil {
		return fmt.Errorf("hooks: want an object of events (\"PreToolUse\", \"PostToolUse\"): %v", err)
	}
	var out Hooks
	for name, raw := range events {
		var dst *[]HookMatcher
		switch name {
		case "PreToolUse":
			dst = &out.PreToolUse
		case "PostToolUse":
			dst = &out.PostToolUse
		default:
			for _, e := range claudeEvents {
				if e == name {
					return fmt.Errorf("hooks.%s: aibuddy runs only PreToolUse and PostToolUse hooks (a tool plane has no %s); remove it", name, name)
				}
			}
			return fmt.Errorf("hooks.%s: not a hook event (want PreToolUse or PostToolUse; names are case-sensitive)", name)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(dst); err != nil {
			msg := err.Error()
			if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
				msg = "unknown key " + rest + " (a hook has type, command, timeout and statusMessage; a group matcher and hooks)"
			}
			return fmt.Errorf("hooks.%s: %s", name, msg)
		}
	}
	*h = out
	return nil
}

// Check validates the block: every matcher compiles, every hook is a
// command with a command line, timeouts are not negative.
func (h *Hooks) Check() error {
	if h == nil {
		return nil
	}
	for _, ev := range []struct {
		name   string
		groups []HookMatcher
	}{{"PreToolUse", h.PreToolUse}, {"PostToolUse", h.PostToolUse}} {
		for i, g := range ev.groups {
			at := fmt.Sprintf("hooks.%s[%d]", ev.name, i)
			if _, err := hooks.ParseMatcher(g.Matcher); err != nil {
				return fmt.Errorf("%s.matcher %q is not a regular expression (RE2): %v; fix it, or use \"*\" for every tool", at, g.Matcher, err)
			}
			if len(g.Hooks) == 0 {
				return fmt.Errorf("%s.hooks is empty; add a hook or remove the group", at)
			}
			for j, c := range g.Hooks {
				at := fmt.Sprintf("%s.hooks[%d]", at, j)
				switch c.Type {
				case "command":
				case "":
					return fmt.Errorf("%s.type is missing; set it to \"command\"", at)
				default:
					return fmt.Errorf("%s.type %q: aibuddy runs only \"command\" hooks; rewrite it as a command or remove it", at, c.Type)
				}
				if strings.TrimSpace(c.Command) == "" {
					return fmt.Errorf("%s.command is empty", at)
				}
				if c.Timeout < 0 {
					return fmt.Errorf("%s.timeout is negative; omit it for limits.hookTimeout", at)
				}
			}
		}
	}
	return nil
}

// checkHooks validates limits.hookTimeout and
// limits.hookMaxOutputBytes (config.validate's one call).
func (c *Config) checkHooks() error {
	if c.Limits.HookTimeout < 0 || c.Limits.HookMaxOutputBytes < 0 {
		return fmt.Errorf("negative values for limits.hookTimeout or limits.hookMaxOutputBytes (omit a key or use 0 for its default)")
	}
	return c.Hooks.Check()
}
