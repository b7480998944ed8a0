//go:build linux

package mcpclient_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// A stdio server with a "sandbox" runs confined: it works as a server, and
// it cannot write outside the workspace.
func TestConfinedStdioServer(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	inside, out := filepath.Join(ws, "made-by-server"), filepath.Join(outside, "escaped")
	sc := scriptedServer("boxed", "scripted", `[{"name":"ping","inputSchema":{"type":"object"}}]`,
		"MCPCLIENT_WRITE_AT_START", inside+":"+out)
	sc.Sandbox = &mcpclient.Sandbox{Confinement: "workspace-write"}
	var asked []string
	m := connect(t, &mcpclient.Options{Confine: func(sc mcpclient.ServerConfig) (*confine.Policy, error) {
		asked = append(asked, sc.Name)
		return confine.NewPolicy(confine.Settings{Confinement: sc.Sandbox.Confinement}, ws, t.TempDir())
	}}, sc)
	st := m.Servers()[0]
	if st.State != mcpclient.StateConnected || len(m.Tools()["boxed"]) != 1 {
		t.Fatalf("the confined server did not connect: %+v", st)
	}
	if _, err := os.Stat(inside); err != nil {
		t.Errorf("the server could not write in the workspace: %v (stderr %q)", err, st.StderrTail)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the confined server wrote outside the workspace")
	}
	if len(asked) != 1 {
		t.Errorf("Confine asked for %v", asked)
	}
}

// A server whose confinement cannot be enforced is not started: it fails
// with the reason, never runs unconfined.
func TestConfinedStdioServerFailsClosed(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	out := filepath.Join(outside, "escaped")
	sc := scriptedServer("boxed", "scripted", `[{"name":"ping","inputSchema":{"type":"object"}}]`, "MCPCLIENT_WRITE_AT_START", out)
	m := connect(t, &mcpclient.Options{
		Confine: func(mcpclient.ServerConfig) (*confine.Policy, error) {
			return confine.NewPolicy(confine.Settings{}, ws, t.TempDir())
		},
		ConfineDriver: confine.NewDriver(&confine.Options{InitPath: filepath.Join(t.TempDir(), "missing")}),
	}, sc)
	st := m.Servers()[0]
	if st.State != mcpclient.StateFailed || !strings.Contains(st.Error, "cannot be enforced") || !strings.Contains(st.Error, "fix:") {
		t.Fatalf("want a failed server naming the confinement and the fix: %+v", st)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the server ran unconfined")
	}
}
