package confine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Mode is the filesystem confinement of a command (setting
// sandbox.confinement).
type Mode string

// Modes.
const (
	// WorkspaceWrite: the filesystem is read-only except the workspace, a
	// private temp folder and sandbox.writablePaths.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly: the filesystem is read-only except the private temp folder.
	ReadOnly Mode = "read-only"
	// Off: no confinement; the command runs with the user's rights. Only
	// a person's setting turns it off, never a tool argument.
	Off Mode = "off"
)

// Network is the network policy of a confined command (setting
// sandbox.network).
type Network string

// Network policies.
const (
	// NetworkOff: an empty network namespace (loopback only).
	NetworkOff Network = "off"
	// NetworkLimited: loopback only, plus the plane's egress proxy and
	// resolver, which allow only sandbox.allowedDomains.
	NetworkLimited Network = "limited"
	// NetworkOn: the host's network.
	NetworkOn Network = "on"
)

// DefaultMode is the mode when none is configured: workspace-write on Linux,
// where the driver exists; off elsewhere (no driver; said so in reports).
func DefaultMode() Mode {
	if runtime.GOOS == "linux" {
		return WorkspaceWrite
	}
	return Off
}

// DefaultDenyRead are the user's credential folders and files that a
// confined command cannot read (setting sandbox.denyRead; "~" is the home
// folder).
var DefaultDenyRead = []string{
	"~/.ssh", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.netrc", "~/.docker", "~/.kube",
	"~/.gnupg", "~/.git-credentials", "~/.config/gh", "~/.password-store", "~/.local/share/keyrings",
	"~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.pypirc",
}

// DefaultReadOnlyPaths stay read-only inside the writable workspace
// (setting sandbox.readOnlyPaths; workspace-relative).
var DefaultReadOnlyPaths = []string{".git", ".aibuddy"}

// DefaultDenyPatterns are the workspace's denied paths when none are
// given: the default of approval.deniedPaths (a test checks they agree).
var DefaultDenyPatterns = []string{".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519", ".netrc", ".npmrc", "credentials.json"}

// Settings are the configured confinement of one kind of process (execute,
// or one stdio MCP server). A nil list means its default; an empty non-nil
// list means none.
type Settings struct {
	// Confinement is "workspace-write", "read-only" or "off"; "" means
	// DefaultMode.
	Confinement string
	// Network is "off", "limited" or "on"; "" means "limited" when
	// AllowedDomains is set, else "off".
	Network string
	// AllowedDomains are the hosts the egress proxy lets through with the
	// network limited: "example.com" (that host), "*.example.com" (its
	// subdomains, not itself), "example.com:8080" (one port), an IP
	// address; without a port any port is allowed.
	AllowedDomains []string
	// DenyRead are paths that cannot be read ("~/" is the home folder);
	// nil means DefaultDenyRead.
	DenyRead []string
	// DenyPatterns are the workspace's denied paths (path.Match patterns
	// matched against each workspace-relative path and its base name, as
	// approval.deniedPaths); nil means DefaultDenyPatterns.
	DenyPatterns []string
	// ReadOnlyPaths are workspace-relative paths kept read-only; nil means
	// DefaultReadOnlyPaths.
	ReadOnlyPaths []string
	// WritablePaths are further folders a workspace-write command may
	// write ("~/" is the home folder), e.g. a build cache. Default none.
	WritablePaths []string
}

// Policy is a resolved confinement for one workspace: absolute paths, a
// known mode and network. Build it with [NewPolicy].
type Policy struct {
	Mode           Mode
	Network        Network
	AllowedDomains []string
	Workspace      string   // absolute, symlinks resolved
	Home           string   // the home folder "~" stands for ("" when unknown)
	DenyRead       []string // absolute
	DenyPatterns   []string
	ReadOnlyPaths  []string // workspace-relative, slash-separated
	WritablePaths  []string // absolute
}

// ErrSettings is wrapped by NewPolicy's errors: a setting that is not valid.
var ErrSettings = errors.New("invalid confinement settings")

// NewPolicy resolves s for the workspace folder ws (made absolute, symlinks
// resolved). home is what "~" stands for; "" means os.UserHomeDir. Errors
// wrap ErrSettings and name the setting (sandbox.confinement,
// sandbox.network, sandbox.allowedDomains, sandbox.readOnlyPaths,
// sandbox.writablePaths).
func NewPolicy(s Settings, ws, home string) (*Policy, error) {
	bad := func(format string, args ...any) (*Policy, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrSettings}, args...)...)
	}
	p := &Policy{}
	switch m := Mode(s.Confinement); m {
	case "":
		p.Mode = DefaultMode()
	case WorkspaceWrite, ReadOnly, Off:
		p.Mode = m
	default:
		return bad("sandbox.confinement %q (want workspace-write, read-only or off)", s.Confinement)
	}
	switch n := Network(s.Network); n {
	case "":
		p.Network = NetworkOff
		if len(s.AllowedDomains) > 0 {
			p.Network = NetworkLimited
		}
	case NetworkOff, NetworkOn, NetworkLimited:
		p.Network = n
		if n != NetworkLimited && len(s.AllowedDomains) > 0 {
			return bad("sandbox.allowedDomains is set but sandbox.network is %q; set network to \"limited\" (or leave it out) for the domains to apply", n)
		}
	default:
		return bad("sandbox.network %q (want off, limited or on)", s.Network)
	}
	for i, d := range s.AllowedDomains {
		if err := ValidDomain(d); err != nil {
			return bad("sandbox.allowedDomains[%d]: %v", i, err)
		}
	}
	p.AllowedDomains = slices.Clone(s.AllowedDomains)
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	p.Home = home
	if p.Mode == Off {
		return p, nil
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return bad("workspace %q: %v", ws, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	p.Workspace = abs
	expand := func(setting string, list []string) ([]string, error) {
		var out []string
		for i, x := range list {
			switch {
			case x == "~" || strings.HasPrefix(x, "~/"):
				if home == "" {
					continue // no home: nothing of it to name
				}
				x = filepath.Join(home, x[1:])
			case !filepath.IsAbs(x):
				return nil, fmt.Errorf("%w: %s[%d] %q: want an absolute path or one starting with ~/", ErrSettings, setting, i, x)
			}
			out = append(out, filepath.Clean(x))
		}
		return out, nil
	}
	deny := s.DenyRead
	if deny == nil {
		deny = DefaultDenyRead
	}
	if p.DenyRead, err = expand("sandbox.denyRead", deny); err != nil {
		return nil, err
	}
	if p.WritablePaths, err = expand("sandbox.writablePaths", s.WritablePaths); err != nil {
		return nil, err
	}
	p.DenyPatterns = s.DenyPatterns
	if p.DenyPatterns == nil {
		p.DenyPatterns = DefaultDenyPatterns
	}
	p.DenyPatterns = slices.Clone(p.DenyPatterns)
	ro := s.ReadOnlyPaths
	if ro == nil {
		ro = DefaultReadOnlyPaths
	}
	for i, r := range ro {
		c := filepath.ToSlash(filepath.Clean(r))
		if !filepath.IsLocal(c) {
			return bad("sandbox.readOnlyPaths[%d] %q: want a path inside the workspace, relative to it", i, r)
		}
		p.ReadOnlyPaths = append(p.ReadOnlyPaths, c)
	}
	return p, nil
}

// ValidDomain checks one sandbox.allowedDomains entry: a host name, a
// "*." wildcard over a domain's subdomains, or an IP address, each with an
// optional ":port".
func ValidDomain(d string) error {
	host := d
	if h, port, err := net.SplitHostPort(d); err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not a number from 1 to 65535", d, port)
		}
		host = h
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	name := strings.TrimPrefix(host, "*.")
	if name == "" || strings.ContainsAny(name, "*/ :@") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, "..") {
		return fmt.Errorf("%q is not a host name, *.domain or IP address (with an optional :port)", d)
	}
	return nil
}

// Display shows an absolute path the way the settings name it: "~/.ssh"
// under the home folder, workspace-relative inside the workspace.
func (p *Policy) Display(abs string) string {
	if p.Workspace != "" {
		if r, err := filepath.Rel(p.Workspace, abs); err == nil && filepath.IsLocal(r) {
			return filepath.ToSlash(r)
		}
	}
	if p.Home != "" {
		if r, err := filepath.Rel(p.Home, abs); err == nil && filepath.IsLocal(r) {
			return "~/" + filepath.ToSlash(r)
		}
	}
	return abs
}
