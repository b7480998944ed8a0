package e2bsandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxe2bapi"
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
	// Every fixture is made through the adapter (Write, Exec), as for a
	// sandbox on another machine; -short (the race pass) uses the local
	// folder the fixture envd serves, which is quicker.
	fixtures := sandboxtest.FixturesThroughSandbox
	if testing.Short() {
		fixtures = sandboxtest.FixturesLocal
	}
	sandboxtest.RunWith(t, func(t *testing.T, workspace string) sandbox.Sandbox {
		s, _ := open(t, workspace)
		return s
	}, sandboxtest.Options{
		Fixtures:     fixtures,
		NoHandleOpen: "envd's Filesystem and /files calls take paths, so a link swapped in between the Stat walk and the transfer is not excluded",
	})
}

func TestWrongTokenIsRefusedAtOpen(t *testing.T) {
	ws := t.TempDir()
	srv := fxenvd.Start(t, fxenvd.Options{AccessToken: token, Home: ws})
	_, err := e2bsandbox.New(context.Background(), e2bsandbox.Options{EnvdURL: srv.URL, AccessToken: "wrong", Workspace: ws})
	if err == nil || !strings.Contains(err.Error(), "sandbox.e2b.accessToken") || !strings.Contains(err.Error(), "Authorization") {
		t.Fatalf("error = %v, want an Authorization error naming sandbox.e2b.accessToken", err)
	}
}

func TestWorkspaceMustBeAbsoluteAndExist(t *testing.T) {
	ws := t.TempDir()
	srv := fxenvd.Start(t, fxenvd.Options{AccessToken: token, Home: ws})
	for _, w := range []string{"project", ws + "/missing"} {
		_, err := e2bsandbox.New(context.Background(), e2bsandbox.Options{EnvdURL: srv.URL, AccessToken: token, Workspace: w})
		if err == nil || !strings.Contains(err.Error(), "sandbox.workspace") {
			t.Errorf("workspace %q: error = %v, want one naming sandbox.workspace", w, err)
		}
	}
}

// A cancelled Exec reaches the sandbox: envd gets SendSignal SIGTERM for
// the command's pid (and the group is stopped, as the suite checks).
func TestCancelReachesEnvd(t *testing.T) {
	ws := t.TempDir()
	s, srv := open(t, ws)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := writerFunc(func(p []byte) (int, error) { cancel(); return len(p), nil })
	res, err := s.Exec(ctx, sandbox.ExecRequest{Command: "echo started; sleep 300", Stdout: w})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled {
		t.Fatalf("result %+v, want Cancelled", res)
	}
	sigs := srv.Signals()
	if len(sigs) == 0 || !strings.HasPrefix(sigs[0], "SIGTERM ") {
		t.Fatalf("envd received signals %q, want SIGTERM <pid> first", sigs)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// NewAPI creates the sandbox (POST /sandboxes with the template and
// timeout), talks to its envd with the returned token, refreshes the
// timeout while open and kills the sandbox at Close.
func TestAPICreateRefreshKill(t *testing.T) {
	root := t.TempDir()
	api := fxe2bapi.Start(t, "e2b_test_key", root)
	s, err := e2bsandbox.NewAPI(context.Background(), e2bsandbox.APIOptions{
		APIKey: "e2b_test_key", APIURL: api.URL, Template: "tpl-aibuddy", Timeout: 3 * time.Second,
		EnvdURLTemplate: "http://{domain}",
	}, e2bsandbox.Options{Workspace: root})
	if err != nil {
		t.Fatal(err)
	}
	c := api.Sandbox(s.SandboxID())
	if c == nil || c.Template != "tpl-aibuddy" || c.Timeout != 3 || !c.Secure || c.Token == "" || c.Metadata["createdBy"] != "aibuddy" {
		t.Fatalf("created %+v, want template tpl-aibuddy, timeout 3 s, secure (a token), metadata createdBy", c)
	}
	if _, err := s.Write(context.Background(), sandbox.WriteRequest{Path: "hello.txt", Content: []byte("hi\n")}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("the sandbox holds %q (%v)", b, err)
	}
	select { // the keep-alive fires after Timeout/3
	case id := <-api.Refreshed:
		if id != s.SandboxID() {
			t.Fatalf("refreshed %s, want %s", id, s.SandboxID())
		}
	case <-time.After(time.Minute):
		t.Fatal("no timeout refresh while the sandbox was open")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !api.Sandbox(s.SandboxID()).Killed {
		t.Fatalf("Close did not kill the sandbox; calls %q", api.Calls())
	}
}

func TestAPIBadKeyAndTemplate(t *testing.T) {
	root := t.TempDir()
	api := fxe2bapi.Start(t, "e2b_test_key", root)
	_, err := e2bsandbox.NewAPI(context.Background(), e2bsandbox.APIOptions{APIKey: "nope", APIURL: api.URL}, e2bsandbox.Options{Workspace: root})
	if err == nil || !strings.Contains(err.Error(), "E2B_API_KEY") {
		t.Errorf("bad key: %v, want one naming E2B_API_KEY", err)
	}
	_, err = e2bsandbox.NewAPI(context.Background(), e2bsandbox.APIOptions{APIKey: "e2b_test_key", APIURL: api.URL, Template: "missing"}, e2bsandbox.Options{Workspace: root})
	if err == nil || !strings.Contains(err.Error(), "sandbox.e2b.template") {
		t.Errorf("bad template: %v, want one naming sandbox.e2b.template", err)
	}
	// A sandbox whose envd cannot be opened is killed at once.
	_, err = e2bsandbox.NewAPI(context.Background(), e2bsandbox.APIOptions{APIKey: "e2b_test_key", APIURL: api.URL, EnvdURLTemplate: "http://{domain}"}, e2bsandbox.Options{Workspace: root + "/missing"})
	if err == nil {
		t.Fatal("opened a sandbox on a missing workspace")
	}
	var killed []string // the bad key and template created nothing; the third call did
	for _, c := range api.Calls() {
		if id, ok := strings.CutPrefix(c, "DELETE /sandboxes/"); ok {
			killed = append(killed, id)
		}
	}
	if len(killed) != 1 || api.Sandbox(killed[0]) == nil || !api.Sandbox(killed[0]).Killed {
		t.Errorf("calls %q: want the one created sandbox killed", api.Calls())
	}
}

// An unset workspace is the sandbox user's home, as envd resolves "".
func TestWorkspaceDefaultsToHome(t *testing.T) {
	home := t.TempDir()
	srv := fxenvd.Start(t, fxenvd.Options{AccessToken: token, Home: home})
	s, err := e2bsandbox.New(context.Background(), e2bsandbox.Options{EnvdURL: srv.URL, AccessToken: token})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Workspace() != home {
		t.Errorf("workspace %q, want the home %q", s.Workspace(), home)
	}
}
