package localsandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// Options configures a local sandbox. A nil *Options means the defaults.
type Options struct {
	// Shell runs commands as Shell -c COMMAND. Default "/bin/sh"; "bash" when
	// found on PATH is a common choice.
	Shell string

	// MaxEditBytes is the largest file, in bytes, that Edit loads.
	// Default 64 MiB; a larger file fails with sandbox.ErrUnsupported.
	MaxEditBytes int64
	// MaxCountBytes bounds, in bytes, how far Read keeps counting lines
	// after the requested window (for TotalLines). Past it TotalLines is
	// -1; the SHA-256 still covers what MaxReadBytes allows. Default 64 MiB.
	MaxCountBytes int64
	// MaxReadBytes bounds the bytes one Read reads of a file: the window,
	// the line count and the SHA-256 come from at most this many bytes
	// from its start, so a huge (or sparse) file costs at most this much
	// work; past it ReadResult.Truncated is set and HashedBytes says what
	// the digest covers. Default 64 MiB (MaxEditBytes' default, so any
	// file Edit takes is hashed whole).
	MaxReadBytes int64
	// MaxPathDepth bounds the components of a path, as requested and as
	// its links expand: a deeper one fails at once with
	// sandbox.ErrTooDeep, and List and Search do not descend below it.
	// Default 256 components.
	MaxPathDepth int
	// MaxPathBytes bounds the bytes of a path, as requested and as its
	// links expand (sandbox.ErrTooDeep). Default 4,096 (Linux's PATH_MAX).
	MaxPathBytes int
	// MaxSearchLineBytes is the window, in bytes, in which grep matches one
	// line; a longer line is matched window by window with a 4 KiB overlap
	// (a regexp match longer than the overlap that straddles two windows
	// can be missed). Default 1 MiB.
	MaxSearchLineBytes int
	// KillDelay is how long Exec waits after SIGTERM to the command's
	// process group (on timeout or cancellation) before sending SIGKILL.
	// Default 2 s.
	KillDelay time.Duration
	// NoTempSweep turns off the background sweep New starts, which removes
	// the temporary files of Write and Edit left by a process that was
	// killed mid-write (see tempfiles.go). Default false: the sweep runs.
	NoTempSweep bool
	// DrainGrace bounds how long Exec keeps reading output after the shell
	// has exited while descendants still hold the output pipes open: until
	// the command has run DrainGrace in all, and at least DrainGrace/4
	// after the shell's exit (for a forwarder such as a process
	// substitution's tee to deliver what it holds); then it kills the rest
	// of the group and reports Lingering. A command whose shell exits at
	// once returns after DrainGrace; one whose foreground runs longer
	// returns DrainGrace/4 after its exit. Default 1 s. When no process of
	// the command is left (only what it wrote before it ended is still in
	// the pipes, behind a slow reader), reading goes on to the end of the
	// output instead, for at most 10 s more.
	DrainGrace time.Duration
	// Confinement is the OS confinement of Exec (settings
	// sandbox.confinement, sandbox.network, sandbox.allowedDomains,
	// sandbox.denyRead, sandbox.readOnlyPaths, sandbox.writablePaths and
	// approval.deniedPaths). nil means the defaults of confine.Settings:
	// workspace-write with the network off on Linux. A policy the machine
	// cannot enforce makes Exec fail (and Supports(OpExec) false) with
	// the reason; it never runs unconfined.
	Confinement *confine.Settings
	// Driver runs confined commands; nil means confine.NewDriver(nil).
	// Sharing one driver shares its probe.
	Driver *confine.Driver
}

// Sandbox is a sandbox.Sandbox rooted at a local folder.
type Sandbox struct {
	dir    string   // absolute, symlinks resolved
	root   *os.Root // the workspace for Exec's checks and the temporary file sweep
	rootFd dirH     // the root directory every path walk starts from (confine.go)
	opts   Options

	given string // absolute as given to New, before resolving symlinks
	// renameSem serializes the last step of Write and Edit (Edit's check
	// that the file is unchanged, then the rename over it), so two edits
	// in this process never lose one another's change. It is held only
	// around metadata calls that cannot block, and taken with the call's
	// context (a waiting call can be stopped).
	renameSem chan struct{}
	noOpenat2 atomic.Bool // openat2(2) is missing or refused here (openat2_linux.go)

	lineByLine  bool // grep never scans whole buffers (tests compare both ways)
	noPrefilter bool // grep matches every line with the regexp (tests compare both ways)

	// The stale temporary file sweep (tempfiles.go); sweepDone is nil
	// when it was not started.
	sweepStop  context.CancelFunc
	sweepDone  chan struct{}
	sweptTemps []string
	sweepErr   error

	trace func(execTrace) // Exec's stop mechanism, for tests; nil in use

	conf *confinement // the OS confinement of Exec
}

// execTrace is one step of Exec's stop mechanism: what happened, when, and
// for a timer that was armed, when it is due.
type execTrace struct {
	what    string // "start", "exited", "drain-armed", "drain-fired", "kill-armed", "kill-fired", "drained", "returned"
	at, due time.Time
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// New opens a sandbox rooted at dir, which must be an existing directory.
// The root is resolved once (symlinks in dir itself are followed here, so a
// workspace may live behind a link); everything below it is confined.
// Unless opts.NoTempSweep, New starts a background sweep that removes the
// temporary files of writes killed mid-way ([Sandbox.StaleTemps] waits for
// it; Close stops it).
func New(dir string, opts *Options) (*Sandbox, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localsandbox: workspace %q: %w", dir, err)
	}
	given := abs
	abs, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("localsandbox: workspace %q: %w", dir, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("localsandbox: workspace %q: %w", dir, err)
	}
	rootFd, err := openDirRoot(abs)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("localsandbox: workspace %q: %w", dir, err)
	}
	s := &Sandbox{dir: abs, root: root, rootFd: rootFd, given: given, renameSem: make(chan struct{}, 1)}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Shell == "" {
		s.opts.Shell = "/bin/sh"
	}
	if s.conf, err = newConfinement(abs, &s.opts); err != nil {
		root.Close()
		return nil, fmt.Errorf("localsandbox: %w", err)
	}
	if !s.opts.NoTempSweep {
		s.startTempSweep()
	}
	return s, nil
}

// Kind is sandbox.KindLocal.
func (s *Sandbox) Kind() sandbox.Kind { return sandbox.KindLocal }

// Workspace is the absolute path of the root folder.
func (s *Sandbox) Workspace() string { return s.dir }

// Supports reports true for every operation, except OpExec when the
// configured confinement cannot be enforced here (CheckOp says why).
func (s *Sandbox) Supports(op sandbox.Op) bool {
	switch op {
	case sandbox.OpList, sandbox.OpRead, sandbox.OpWrite, sandbox.OpEdit, sandbox.OpSearch:
		return true
	case sandbox.OpExec:
		return s.conf.check() == nil
	}
	return false
}

// Close stops the temporary file sweep and releases the root handles. It
// does not wait for the sweep: a healthy one ends at its next entry, and
// one stuck in a system call on a hung filesystem in the workspace must not
// hold Close (and the process stopping) with it; it touches nothing after
// the handles are closed.
func (s *Sandbox) Close() error {
	if s.sweepDone != nil {
		s.sweepStop()
	}
	closeDir(s.rootFd)
	s.conf.close()
	return s.root.Close()
}
