package localsandbox

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// TestExecStdin: ExecRequest.Stdin reaches the command, confined (the
// default) and unconfined; a large input the command reads whole arrives
// whole, and one the command never reads does not hold the call.
func TestExecStdin(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: more than a pipe holds
	for _, mode := range []string{"workspace-write", "off"} {
		t.Run(mode, func(t *testing.T) {
			sb, _ := newExecSandbox(t, &Options{Confinement: &confine.Settings{Confinement: mode}})
			r := runExec(t, context.Background(), sb, sandbox.ExecRequest{Command: `read x; echo "got $x"`,
				Stdin: strings.NewReader("{\"tool_name\":\"execute\"}\n")})
			if r.err != nil || strings.TrimSpace(r.out) != `got {"tool_name":"execute"}` {
				t.Errorf("read from Stdin: %q %v", r.out, r.err)
			}
			r = runExec(t, context.Background(), sb, sandbox.ExecRequest{Command: `wc -c`, Stdin: bytes.NewReader(big)})
			if r.err != nil || strings.TrimSpace(r.out) != "1048576" {
				t.Errorf("1 MiB on Stdin: wc -c says %q %v", r.out, r.err)
			}
			r = runExec(t, context.Background(), sb, sandbox.ExecRequest{Command: `echo unread`, Stdin: bytes.NewReader(big)})
			if r.err != nil || strings.TrimSpace(r.out) != "unread" || r.res.ExitCode != 0 {
				t.Errorf("unread Stdin: %q %v", r.out, r.err)
			}
		})
	}
}
