package confine

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aibuddy/aibuddy/sandbox/confine/confineinit"
	"github.com/aibuddy/aibuddy/sandbox/confine/egress"
)

// seccompDenied names what the filter denies, for reports.
const seccompDenied = "ptrace and process_vm_*, mount and the new mount API, unshare/setns and clone into new namespaces, keyctl, bpf, perf_event_open, module loading, io_uring"

// InitArg is the first argument with which the driver re-executes the
// running binary as the sandbox's init (package confineinit, which every
// binary linking this package links, dispatches it).
const InitArg = confineinit.Arg

// DriverName names the Linux driver in reports.
const DriverName = "linux-namespaces"

// ErrUnavailable is wrapped by every error that says a policy cannot be
// enforced here (inspect with errors.Is; the *UnavailableError says why).
var ErrUnavailable = errors.New("confinement unavailable")

// UnavailableError says which piece of the confinement is missing on this
// machine, what the kernel or system answered, and the fix.
type UnavailableError struct {
	Mode  Mode   // the configured mode that cannot be enforced
	Piece string // e.g. "user namespaces", "the sandbox's init", "seccomp"
	Cause string // what failed, e.g. "clone: no space left on device"
	Fix   string // what a person can do
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("confinement %s cannot be enforced: %s unavailable: %s (fix: %s)", e.Mode, e.Piece, e.Cause, e.Fix)
}

func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// Options configures a [Driver]. A nil *Options means the defaults.
type Options struct {
	// InitPath is the binary re-executed as the sandbox's init with
	// [InitArg]; it must link this package. Default "/proc/self/exe" (the
	// running binary). A path that is missing or not such a binary makes
	// the driver unavailable, reported by [Driver.Check].
	InitPath string
	// Egress configures the egress proxy and resolver of a limited
	// network (resolution and dialling of allowed hosts); its OnDeny is
	// set per process. nil means the host's resolver and dialler.
	Egress *egress.Options
	// StartTimeout bounds how long Start waits for the init to set the
	// sandbox up. Default 10 s.
	StartTimeout time.Duration
}

// Driver runs commands under a Policy. One driver serves a whole program;
// its probe runs once, on first use. It is safe for concurrent use.
type Driver struct {
	opts Options

	once  sync.Once
	probe Probe

	filterOnce sync.Once
	filterProg [][4]uint32 // the seccomp program (Linux), assembled once
	filterErr  error
}

// Probe is what the driver found it can enforce on this machine, by
// running a sandbox once and checking its rules from inside (a write
// outside must fail, a masked file must not open, a new user namespace
// must be refused...), not by looking up feature flags.
type Probe struct {
	// Err is nil when the driver works here; else an *UnavailableError.
	Err error
	// LandlockABI is the Landlock ABI enforced; 0 when the kernel has none
	// (the read-only mounts still hold the write rules).
	LandlockABI int
	// Checks are the behavioural checks that passed.
	Checks []string
	// Took is how long the probe ran.
	Took time.Duration
}

// NewDriver returns a driver for this machine.
func NewDriver(o *Options) *Driver {
	d := &Driver{}
	if o != nil {
		d.opts = *o
	}
	if d.opts.InitPath == "" {
		d.opts.InitPath = "/proc/self/exe"
	}
	if d.opts.StartTimeout <= 0 {
		d.opts.StartTimeout = 10 * time.Second
	}
	return d
}

// Probe runs the probe once and returns its result.
func (d *Driver) Probe() Probe {
	d.once.Do(func() {
		start := time.Now()
		d.probe = d.runProbe()
		d.probe.Took = time.Since(start)
	})
	return d.probe
}

// Check reports whether p can be enforced here: nil for mode off or when
// the probe passed; otherwise an *UnavailableError naming the mode, the
// missing piece and the fix.
func (d *Driver) Check(p *Policy) error {
	if p == nil || p.Mode == Off {
		return nil
	}
	pr := d.Probe()
	if pr.Err != nil {
		var ue *UnavailableError
		if errors.As(pr.Err, &ue) {
			c := *ue
			c.Mode = p.Mode
			return &c
		}
		return pr.Err
	}
	return nil
}

// Report describes what a command run under p gets: driver, mode,
// network, the layers in force and every rule that holds. An unavailable
// confinement is reported as such, with the cause and the fix.
func (d *Driver) Report(p *Policy) *Report {
	r := &Report{Mode: p.Mode, Network: p.Network}
	if p.Mode == Off {
		r.Rules = []string{"none: commands run with your user's rights (sandbox.confinement is \"off\")"}
		return r
	}
	r.Driver = DriverName
	if err := d.Check(p); err != nil {
		r.Unavailable = err.Error()
		return r
	}
	pr := d.Probe()
	r.Enforced = true
	ns := "user, mount, PID, IPC and UTS namespaces"
	if p.Network != NetworkOn {
		ns = "user, mount, PID, network, IPC and UTS namespaces"
	}
	r.Layers = append(r.Layers, ns+" (aibuddy re-executed as the sandbox's init)")
	if pr.LandlockABI > 0 {
		r.Layers = append(r.Layers, fmt.Sprintf("Landlock ABI %d", pr.LandlockABI))
	} else {
		r.Layers = append(r.Layers, "Landlock: not in this kernel (the read-only mounts alone hold the write rules)")
	}
	r.Layers = append(r.Layers, "seccomp filter", "no_new_privs", "no capabilities")
	var writable []string
	if p.Mode == WorkspaceWrite {
		writable = append(writable, "the workspace")
	}
	writable = append(writable, "a private temp folder ($TMPDIR, kept for the session)")
	for _, w := range p.WritablePaths {
		writable = append(writable, p.Display(w)+" (sandbox.writablePaths)")
	}
	r.Rules = append(r.Rules, fmt.Sprintf("files: writable only %s; everything else is read-only (sandbox.confinement: %s)", strings.Join(writable, ", "), p.Mode))
	if p.Mode == WorkspaceWrite && len(p.ReadOnlyPaths) > 0 {
		r.Rules = append(r.Rules, "read-only inside the workspace, renames and links into them included: "+strings.Join(p.ReadOnlyPaths, ", ")+" (sandbox.readOnlyPaths)")
	}
	if len(p.DenyRead) > 0 {
		var names []string
		for _, x := range p.DenyRead {
			names = append(names, p.Display(x))
		}
		r.Rules = append(r.Rules, "unreadable: "+strings.Join(names, ", ")+" (sandbox.denyRead)")
	}
	if len(p.DenyPatterns) > 0 {
		r.Rules = append(r.Rules, "unreadable in the workspace: "+strings.Join(p.DenyPatterns, ", ")+" (approval.deniedPaths)")
	}
	switch p.Network {
	case NetworkOff:
		r.Rules = append(r.Rules, "network: off, loopback only (sandbox.network)")
	case NetworkLimited:
		r.Rules = append(r.Rules, "network: only "+strings.Join(p.AllowedDomains, ", ")+" through the plane's egress proxy ($HTTPS_PROXY) and resolver; no other route out (sandbox.network: limited, sandbox.allowedDomains)")
	case NetworkOn:
		r.Rules = append(r.Rules, "network: on, the host's network (sandbox.network)")
	}
	r.Rules = append(r.Rules,
		"processes: every process of a command (background jobs, setsid, daemons) ends with it (PID namespace)",
		"privileges: no_new_privs, no capabilities; denied: "+seccompDenied+"; no signals to processes outside",
		"host unix sockets under /run and /tmp are masked")
	return r
}

// Report is what a confinement enforces, for `aibuddy tools` and tool
// descriptions.
type Report struct {
	Driver      string   `json:"driver,omitempty"` // DriverName; empty when off
	Mode        Mode     `json:"mode"`
	Network     Network  `json:"network"`
	Enforced    bool     `json:"enforced"`              // every rule below holds
	Unavailable string   `json:"unavailable,omitempty"` // why the configured policy cannot be enforced, with the fix
	Layers      []string `json:"layers,omitempty"`      // the mechanisms in force
	Rules       []string `json:"rules,omitempty"`       // one line per rule, naming its setting
}

// Summary is the report as one paragraph for a tool description: what
// commands can and cannot do, and that a denial is policy.
func (r *Report) Summary() string {
	switch {
	case r.Mode == Off:
		return "Commands are not confined by the operating system (sandbox.confinement is \"off\"): they run with the user's rights."
	case !r.Enforced:
		return "Confinement is configured but cannot be enforced here: " + r.Unavailable
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Commands run confined by the operating system (driver %s, sandbox.confinement %s, sandbox.network %s): ", r.Driver, r.Mode, r.Network)
	for i, rule := range r.Rules {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(rule)
	}
	b.WriteString(". A denial (read-only file system, permission denied, denied by egress policy) is this policy, not a fault: retrying or working around it will not help; say which setting would allow it.")
	return b.String()
}

// Command is one process to run confined.
type Command struct {
	Path string   // absolute path of the program (resolved before)
	Args []string // argv, Args[0] included
	Dir  string   // working directory, absolute
	Env  []string // the whole environment
	// Stdin, Stdout and Stderr are the process's stdio; nil is the null
	// device.
	Stdin, Stdout, Stderr *os.File
	// TempDir is the private temp folder: bound writable and set as
	// TMPDIR. Required.
	TempDir string
	// Deny is the scanner of the workspace's denied files (its cache
	// speeds up later starts); nil scans without a cache.
	Deny *Scanner
	// Sockets is the scanner of host unix sockets to mask; nil scans
	// without a cache.
	Sockets *Scanner
	// ExitWithMain ends the sandbox as soon as the main process exits
	// (a stdio MCP server); otherwise the sandbox lives until
	// [Process.Kill] (execute, whose drain grace lets descendants finish
	// writing).
	ExitWithMain bool
}
