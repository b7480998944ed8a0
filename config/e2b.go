package config

import (
	"fmt"
	"net/url"
	"path"
	"strings"
)

// E2B configures the "e2b" sandbox kind (sandbox.e2b): either an existing
// sandbox's envd (EnvdURL, AccessToken) or, with E2B_API_KEY in the
// environment, one the E2B API creates from Template, keeps alive and
// kills at the end. sandbox.workspace is then the absolute workspace path
// inside the sandbox. The defaults are package e2bsandbox's.
type E2B struct {
	// EnvdURL is an existing sandbox's envd base URL (E2B:
	// "https://49983-<sandboxID>.e2b.app"; self-hosted, a Kubernetes
	// agent-sandbox pod, a tunnel). When set, the API is not used.
	EnvdURL string `json:"envdURL,omitempty"`
	// AccessToken is sent as X-Access-Token to a secured envd. Keep it
	// out of shared files: E2B_ACCESS_TOKEN in the environment is used
	// when this is empty.
	AccessToken string `json:"accessToken,omitempty"`
	// APIURL is the E2B control-plane API; default https://api.e2b.dev
	// (a self-hosted control plane's URL here).
	APIURL string `json:"apiURL,omitempty"`
	// Template is the template the API creates the sandbox from; default
	// "base".
	Template string `json:"template,omitempty"`
	// Timeout is a created sandbox's time to live, refreshed every third
	// of it while aibuddy runs; a duration, default 5 min.
	Timeout Duration `json:"timeout,omitempty"`
	// EnvdURLTemplate makes a created sandbox's envd URL from {port},
	// {sandboxID} and {domain}; default
	// "https://{port}-{sandboxID}.{domain}".
	EnvdURLTemplate string `json:"envdURLTemplate,omitempty"`
	// Domain is used when the API names none; default "e2b.app".
	Domain string `json:"domain,omitempty"`
	// User is the sandbox user calls run as; default "user".
	User string `json:"user,omitempty"`
	// Keepalive is the interval of envd's keepalive events on a running
	// command's stream (whole seconds); a duration, default 30 s.
	Keepalive Duration `json:"keepalive,omitempty"`
	// RequestTimeout bounds one envd call or file transfer; a duration,
	// default 60 s.
	RequestTimeout Duration `json:"requestTimeout,omitempty"`
	// MaxSearchBytes and MaxSearchFiles bound what one grep fetches from
	// the sandbox; defaults 268,435,456 bytes (256 MiB) and 20,000 files.
	MaxSearchBytes int64 `json:"maxSearchBytes,omitempty"`
	MaxSearchFiles int   `json:"maxSearchFiles,omitempty"`
	// ReattachRetries is how many times a command whose output stream
	// broke is re-attached to (envd's Process.Connect) before it is given
	// up; default 5, -1 turns re-attach (and its output spool) off.
	ReattachRetries int `json:"reattachRetries,omitempty"`
	// ReattachBackoff is the wait before the first re-attach, doubled
	// before each further one; a duration, default 100 ms.
	ReattachBackoff Duration `json:"reattachBackoff,omitempty"`
}

// checkE2B validates sandbox.e2b and, for kind "e2b", sandbox.workspace.
func (c *Config) checkE2B() error {
	e := c.Sandbox.E2B
	for k, u := range map[string]string{"sandbox.e2b.envdURL": e.EnvdURL, "sandbox.e2b.apiURL": e.APIURL} {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%s %q: want an http(s) URL", k, u)
		}
	}
	if t := e.EnvdURLTemplate; t != "" && !strings.HasPrefix(t, "http://") && !strings.HasPrefix(t, "https://") {
		return fmt.Errorf("sandbox.e2b.envdURLTemplate %q: want an http(s) URL with {port}, {sandboxID}, {domain}", t)
	}
	for k, v := range map[string]int64{"sandbox.e2b.timeout": int64(e.Timeout), "sandbox.e2b.keepalive": int64(e.Keepalive),
		"sandbox.e2b.requestTimeout": int64(e.RequestTimeout), "sandbox.e2b.maxSearchBytes": e.MaxSearchBytes, "sandbox.e2b.maxSearchFiles": int64(e.MaxSearchFiles),
		"sandbox.e2b.reattachBackoff": int64(e.ReattachBackoff)} {
		if v < 0 {
			return fmt.Errorf("%s: %d is negative (0 or unset means the default)", k, v)
		}
	}
	if e.ReattachRetries < -1 {
		return fmt.Errorf("sandbox.e2b.reattachRetries: %d; want a count, 0 or unset for the default (5), or -1 to turn re-attach off", e.ReattachRetries)
	}
	if c.Sandbox.Kind == "e2b" && c.Sandbox.Workspace != "" && !path.IsAbs(c.Sandbox.Workspace) {
		return fmt.Errorf("sandbox.workspace %q: with sandbox.kind \"e2b\" it is the absolute workspace path inside the sandbox (e.g. /workspace/project), or unset for the sandbox user's home", c.Sandbox.Workspace)
	}
	return nil
}
