package cli

import (
	"fmt"
	"os"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/hooks"
)

// hooks is the runner of the settings' "hooks" block (nil without one):
// run in the command's sandbox, with execute's environment
// (limits.execEnv) and the limits.hookTimeout and
// limits.hookMaxOutputBytes bounds. Every entry point's pipeline gets it
// (run.pipeline), so aibuddy mcp, run and call run the same hooks.
func (r *run) hooks() *hooks.Runner {
	h := r.cfg.Hooks
	if h == nil || len(h.PreToolUse)+len(h.PostToolUse) == 0 {
		return nil
	}
	file := r.settingsFile
	if file == "" {
		file = "the settings"
	}
	var list []hooks.Hook
	for _, ev := range []struct {
		event  hooks.Event
		groups []config.HookMatcher
	}{{hooks.PreToolUse, h.PreToolUse}, {hooks.PostToolUse, h.PostToolUse}} {
		for i, g := range ev.groups {
			m, err := hooks.ParseMatcher(g.Matcher)
			if err != nil {
				continue // config.Check refused it at load
			}
			for j, c := range g.Hooks {
				list = append(list, hooks.Hook{Event: ev.event, Matcher: m, Command: c.Command, Timeout: c.Timeout.D(),
					Where: fmt.Sprintf("hooks.%s[%d].hooks[%d] in %s", ev.event, i, j, file)})
			}
		}
	}
	return hooks.New(list, hooks.Options{Sandbox: r.sandbox, Env: r.cfg.Limits.ExecEnv, ProjectDir: r.sandbox.Workspace(),
		DefaultTimeout: r.cfg.Limits.HookTimeout.D(), MaxOutputBytes: r.cfg.Limits.HookMaxOutputBytes})
}

// settingsPath is the settings file loadConfig reads: --config, else
// $AIBUDDY_CONFIG.
func (c *common) settingsPath() string {
	if c.config != "" {
		return c.config
	}
	return os.Getenv("AIBUDDY_CONFIG")
}
