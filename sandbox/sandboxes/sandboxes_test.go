package sandboxes_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxenvd"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/e2bsandbox"
	"github.com/aibuddy/aibuddy/sandbox/sandboxes"
)

func TestKinds(t *testing.T) {
	ws := t.TempDir()
	if _, err := sandboxes.New(sandbox.KindDaytona, sandboxes.Options{Workspace: ws}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("daytona: %v, want ErrUnavailable", err)
	}
	if _, err := sandboxes.New("nope", sandboxes.Options{Workspace: ws}); !errors.Is(err, sandbox.ErrUnknownKind) {
		t.Errorf("nope: %v, want ErrUnknownKind", err)
	}
	_, err := sandboxes.New(sandbox.KindE2B, sandboxes.Options{Workspace: ws})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "sandbox.e2b.envdURL") || !strings.Contains(err.Error(), "E2B_API_KEY") {
		t.Errorf("e2b without a sandbox: %v, want ErrUnavailable naming both ways", err)
	}
	srv := fxenvd.Start(t, fxenvd.Options{AccessToken: "tok", Home: ws})
	sb, err := sandboxes.New(sandbox.KindE2B, sandboxes.Options{Workspace: ws, E2B: &e2bsandbox.Options{EnvdURL: srv.URL, AccessToken: "tok"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if sb.Kind() != sandbox.KindE2B || sb.Workspace() != ws {
		t.Errorf("opened %s on %s, want e2b on %s", sb.Kind(), sb.Workspace(), ws)
	}
	local, err := sandboxes.New(sandbox.KindLocal, sandboxes.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if local.Kind() != sandbox.KindLocal {
		t.Errorf("local opened %s", local.Kind())
	}
}
