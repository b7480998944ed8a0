package hooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aibuddy/aibuddy/hooks"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// A PreToolUse hook that refuses rm: it reads the call on stdin and
// exits 2 with the reason on stderr.
func ExampleRunner_Run() {
	ws, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(ws)
	sb, _ := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true})
	defer sb.Close()
	m, _ := hooks.ParseMatcher("execute")
	r := hooks.New([]hooks.Hook{{Event: hooks.PreToolUse, Matcher: m, Where: "hooks.PreToolUse[0].hooks[0]",
		Command: `grep -q '"command":"rm ' && { echo "rm is not allowed; move files to trash/ instead" >&2; exit 2; }; exit 0`}},
		hooks.Options{Sandbox: sb})
	for _, cmd := range []string{"ls", "rm notes.txt"} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		out := r.Run(context.Background(), hooks.PreToolUse, hooks.Call{ToolName: "execute", ToolInput: in})
		fmt.Printf("%s: %q", cmd, out.Decision)
		if out.Reason != "" {
			fmt.Printf(" %s", out.Reason)
		}
		fmt.Println()
	}
	// Output:
	// ls: ""
	// rm notes.txt: "deny" rm is not allowed; move files to trash/ instead
}
