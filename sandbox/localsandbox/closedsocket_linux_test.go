package localsandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// TestConfinedCommandBesideAClosedSocketFolder: a unix socket in another
// user's 0700 folder under /tmp (a throwaway PostgreSQL's, run as nobody)
// is among the host sockets the confinement masks, but the sandbox's
// init, real root outside yet no more than the folder's "other" inside
// its user namespace, cannot even look it up. The command cannot reach
// it either, so the mask is skipped and the command runs; before, every
// confined command failed closed with "mask …: permission denied".
func TestConfinedCommandBesideAClosedSocketFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the folder to another user (CI runs as root)")
	}
	dir, err := os.MkdirTemp("/tmp", "aibuddy-closed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sb, _ := newExecSandbox(t, &Options{Confinement: &confine.Settings{Confinement: "workspace-write"}})
	r := runExec(t, context.Background(), sb, sandbox.ExecRequest{Command: `echo ran; ls ` + dir + ` >/dev/null 2>&1 && echo reached || echo unreachable`})
	if r.err != nil || strings.TrimSpace(r.out) != "ran\nunreachable" {
		t.Errorf("confined command beside %s: %q %v; want it to run and not reach the folder", dir, r.out, r.err)
	}
}
