package cli

import (
	"os"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/sandbox/e2bsandbox"
	"github.com/aibuddy/aibuddy/sandbox/sandboxes"
)

// e2bSandboxOptions fills the e2b parts of the sandbox factory's options
// from sandbox.e2b, sandbox.workspace, sandbox.killDelay,
// sandbox.drainGrace, sandbox.maxReadBytes and the environment
// (E2B_API_KEY; E2B_ACCESS_TOKEN when sandbox.e2b.accessToken is empty).
func e2bSandboxOptions(cfg *config.Config, o *sandboxes.Options) {
	if cfg.Sandbox.Kind != "e2b" {
		return
	}
	e := cfg.Sandbox.E2B
	ws := cfg.Sandbox.Workspace // "": the sandbox user's home, as envd resolves it
	token := e.AccessToken
	if token == "" {
		token = os.Getenv("E2B_ACCESS_TOKEN")
	}
	o.Workspace = ws
	o.E2B = &e2bsandbox.Options{
		EnvdURL: e.EnvdURL, AccessToken: token, Workspace: ws, User: e.User,
		KillDelay: cfg.Sandbox.KillDelay.D(), DrainGrace: cfg.Sandbox.DrainGrace.D(),
		Keepalive: e.Keepalive.D(), RequestTimeout: e.RequestTimeout.D(),
		MaxReadBytes: cfg.Sandbox.MaxReadBytes, MaxSearchBytes: e.MaxSearchBytes, MaxSearchFiles: e.MaxSearchFiles,
		ReattachRetries: e.ReattachRetries, ReattachBackoff: e.ReattachBackoff.D(),
	}
	o.E2BAPI = &e2bsandbox.APIOptions{
		APIKey: os.Getenv("E2B_API_KEY"), APIURL: e.APIURL, Template: e.Template, Timeout: e.Timeout.D(),
		EnvdURLTemplate: e.EnvdURLTemplate, Domain: e.Domain,
	}
}
