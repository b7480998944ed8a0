package hooks_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aibuddy/aibuddy/hooks"
)

// BenchmarkPreToolUse is what one matching hook adds to a call: a shell
// started in the sandbox, the input on its stdin, exit 0. Confined (the
// default) and unconfined.
func BenchmarkPreToolUse(b *testing.B) {
	for _, mode := range []string{"workspace-write", "off"} {
		b.Run(mode, func(b *testing.B) {
			sb, _ := newSandbox(b, mode)
			m, _ := hooks.ParseMatcher("execute")
			r := hooks.New([]hooks.Hook{{Event: hooks.PreToolUse, Matcher: m, Command: "cat >/dev/null"}}, hooks.Options{Sandbox: sb})
			call := hooks.Call{ToolName: "execute", ToolInput: json.RawMessage(`{"command":"ls"}`)}
			b.ResetTimer()
			for b.Loop() {
				if out := r.Run(context.Background(), hooks.PreToolUse, call); out.Err != nil {
					b.Fatal(out.Err)
				}
			}
		})
	}
}
