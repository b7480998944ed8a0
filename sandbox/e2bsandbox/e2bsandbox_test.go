package e2bsandbox_test

import (
	"context"
	"testing"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxenvd"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/e2bsandbox"
	"github.com/aibuddy/aibuddy/sandbox/sandboxtest"
)

const token = "test-envd-token"

// open starts a fixture envd and an adapter on workspace.
func open(t *testing.T, workspace string) (*e2bsandbox.Sandbox, *fxenvd.Server) {
	t.Helper()
	srv := fxenvd.Start(t, fxenvd.Options{AccessToken: token, Home: workspace})
	s, err := e2bsandbox.New(context.Background(), e2bsandbox.Options{EnvdURL: srv.URL, AccessToken: token, Workspace: workspace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, srv
}

func TestConformance(t *testing.T) {
	sandboxtest.RunWith(t, func(t *testing.T, workspace string) sandbox.Sandbox {
		s, _ := open(t, workspace)
		return s
	}, sandboxtest.Options{NoHandleOpen: "envd's Filesystem and /files calls take paths, so a link swapped in between the Stat walk and the transfer is not excluded"})
}
