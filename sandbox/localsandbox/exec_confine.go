package localsandbox

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// confinement is the OS confinement of one sandbox's commands: the
// resolved policy, the driver, the caches of its scans and the session's
// private temp folder.
type confinement struct {
	policy *confine.Policy
	driver *confine.Driver
	deny   *confine.Scanner // the workspace's denied files
	socks  *confine.Scanner // host unix sockets

	mu     sync.Mutex
	tmpDir string // created on first use, removed by close
}

// newConfinement resolves opts' confinement for the workspace dir.
func newConfinement(dir string, opts *Options) (*confinement, error) {
	var set confine.Settings
	if opts.Confinement != nil {
		set = *opts.Confinement
	}
	pol, err := confine.NewPolicy(set, dir, "")
	if err != nil {
		return nil, err
	}
	c := &confinement{policy: pol, driver: opts.Driver}
	if pol.Mode == confine.Off {
		return c, nil
	}
	if c.driver == nil {
		c.driver = confine.NewDriver(nil)
	}
	c.deny = confine.DenyScanner(pol.DenyPatterns)
	c.socks = confine.SocketScanner()
	return c, nil
}

// on reports whether commands run confined.
func (c *confinement) on() bool { return c != nil && c.policy.Mode != confine.Off }

// check says why the policy cannot be enforced here (wrapping
// sandbox.ErrConfinement), or nil.
func (c *confinement) check() error {
	if !c.on() {
		return nil
	}
	if err := c.driver.Check(c.policy); err != nil {
		return fmt.Errorf("localsandbox: exec: %w: %w", sandbox.ErrConfinement, err)
	}
	return nil
}

// tempDir returns the session's private temp folder, made on first use.
func (c *confinement) tempDir() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tmpDir == "" {
		d, err := os.MkdirTemp("", "aibuddy-tmp-")
		if err != nil {
			return "", fmt.Errorf("localsandbox: exec: the private temp folder: %w", err)
		}
		c.tmpDir = d
	}
	return c.tmpDir, nil
}

func (c *confinement) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tmpDir != "" {
		_ = os.RemoveAll(c.tmpDir)
		c.tmpDir = ""
	}
}

// denied are the refusals of one call: the egress proxy's, then what the
// command's error output shows.
func (c *confinement) denied(p execProc, kept *denialLines) []string {
	var out []string
	if cp, ok := p.(interface{ denials() []string }); ok {
		out = append(out, cp.denials()...)
	}
	if kept != nil {
		out = append(out, c.policy.Explain(kept.String(), 5)...)
	}
	return out
}

// CheckOp implements [sandbox.OpChecker]: Exec cannot run when the
// configured confinement cannot be enforced on this machine.
func (s *Sandbox) CheckOp(op sandbox.Op) error {
	if op == sandbox.OpExec {
		return s.conf.check()
	}
	if !s.Supports(op) {
		return sandbox.ErrUnsupported
	}
	return nil
}

// Confinement implements [sandbox.ConfinementReporter]: what the driver
// enforces for this sandbox's commands.
func (s *Sandbox) Confinement() sandbox.Confinement {
	c := s.conf
	d := c.driver
	if d == nil {
		d = confine.NewDriver(nil) // mode off: the report probes nothing
	}
	r := d.Report(c.policy)
	return sandbox.Confinement{Driver: r.Driver, Mode: string(r.Mode), Network: string(r.Network), Enforced: r.Enforced,
		Unavailable: r.Unavailable, Layers: r.Layers, Rules: r.Rules, Summary: r.Summary()}
}

// ConfinementPolicy is the resolved policy of this sandbox's commands.
func (s *Sandbox) ConfinementPolicy() *confine.Policy { return s.conf.policy }

// maxDenialLines bounds the stderr lines kept for explaining denials, and
// maxDenialLine the bytes kept of one.
const (
	maxDenialLines = 64
	maxDenialLine  = 512
)

// denialMarkers are the byte strings a stderr line must hold to be kept.
var denialMarkers = [][]byte{[]byte("denied"), []byte("Read-only"), []byte("read-only"), []byte("ermission"), []byte("not permitted"),
	[]byte("nreachable"), []byte("resolve"), []byte("efused"), []byte("Name or service"), []byte("no such host"), []byte("getaddrinfo"), []byte("EROFS"), []byte("EACCES"), []byte("EPERM"), []byte("cross-device"), []byte("connect")}

// denialLines keeps the stderr lines that may show a denial (bounded).
type denialLines struct {
	partial []byte
	lines   []string
}

func (d *denialLines) Write(p []byte) (int, error) {
	if len(d.lines) >= maxDenialLines {
		return len(p), nil
	}
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(d.partial) < maxDenialLine {
				d.partial = append(d.partial, rest[:min(len(rest), maxDenialLine-len(d.partial))]...)
			}
			break
		}
		line := rest[:i]
		if len(d.partial) > 0 {
			line = append(d.partial, line[:min(len(line), max(0, maxDenialLine-len(d.partial)))]...)
			d.partial = d.partial[:0]
		}
		d.keep(line)
		rest = rest[i+1:]
	}
	return len(p), nil
}

func (d *denialLines) keep(line []byte) {
	if len(d.lines) >= maxDenialLines {
		return
	}
	for _, m := range denialMarkers {
		if bytes.Contains(line, m) {
			d.lines = append(d.lines, string(line[:min(len(line), maxDenialLine)]))
			return
		}
	}
}

// String returns the kept lines (and a last unterminated one).
func (d *denialLines) String() string {
	if len(d.partial) > 0 {
		d.keep(d.partial)
		d.partial = nil
	}
	var b bytes.Buffer
	for _, l := range d.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// teeWriter writes to w (until its first error) and to kept.
type teeWriter struct {
	w    io.Writer
	kept *denialLines
}

func (t teeWriter) Write(p []byte) (int, error) {
	_, _ = t.kept.Write(p)
	if t.w == nil {
		return len(p), nil
	}
	n, err := t.w.Write(p)
	if err != nil {
		return n, err
	}
	return len(p), nil
}
