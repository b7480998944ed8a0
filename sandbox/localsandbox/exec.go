package localsandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

// Defaults of the Exec-related Options fields.
const (
	// DefaultKillDelay is Options.KillDelay when unset: the wait between
	// SIGTERM and SIGKILL to a stopped command's process group.
	DefaultKillDelay = 2 * time.Second
	// DefaultDrainGrace is Options.DrainGrace when unset: output held open
	// by descendants after the shell exits is read until the command has
	// run this long, and at least a quarter of it after the exit.
	DefaultDrainGrace = 1 * time.Second
)

// Exec runs req.Command as Options.Shell -c COMMAND (seed: "Long-running
// execution combines heartbeats, cancellation, and output bounds"; cases
// BH-021, BH-022, BH-023, BH-025, BH-030).
//
//   - Working directory: req.Dir, workspace-relative ("" is the root); an
//     absolute Dir is accepted only inside the workspace. A Dir that
//     resolves outside (through "..", an absolute path or a symlink) fails
//     with a *sandbox.PathError wrapping sandbox.ErrOutsideWorkspace, one
//     that does not exist with sandbox.ErrNotFound, a file with
//     sandbox.ErrNotDir. Nothing is started then.
//   - The command runs in its own session (setsid): no controlling
//     terminal, and its own process group whose id is the shell's pid.
//     Stdin is req.Stdin, fed through a pipe while the command runs (the
//     pipe is closed at its end, or when the command ends), else
//     /dev/null, so a prompt for input fails at once.
//   - Environment: req.Env when non-nil, else [DefaultEnv] (never the
//     host's whole environment), plus AIBUDDY_EXEC_ID=<random id> (see
//     below).
//   - Output: every chunk read from the command's stdout and stderr pipes
//     is written to req.Stdout / req.Stderr as it arrives (nil discards).
//     Writes to the two writers are serialized, never concurrent, so they
//     may share state; a writer must not retain the slice. Exec holds no
//     output itself. A writer's error stops forwarding to that writer
//     only; the pipe is still drained. No write happens after Exec returns.
//   - Stopping: when req.Timeout passes (TimedOut) or ctx is done
//     (Cancelled), the whole process group gets SIGTERM, then SIGKILL after
//     Options.KillDelay (default 2 s).
//   - Lingering output: when the shell has exited but descendants still
//     hold the output pipes open (a background writer, a process
//     substitution's tee), output is read until the command has run
//     Options.DrainGrace (default 1 s) in all, and at least DrainGrace/4
//     after the exit; then the group is killed, reading stops and
//     Lingering is set. So "cmd &" alone returns after DrainGrace, and a
//     foreground that ran longer is not extended by a full DrainGrace
//     (BH-021: "(while :; do echo tick; sleep 0.1; done) & sleep 1" returns
//     after about 1.25 s, not 2 s). The grace cuts only output a process
//     can still add to: when every process of the command has ended (the
//     confinement's init says so; unconfined, no live process of the
//     group or with the marker below is left) and the pipes still hold
//     what they wrote, reading goes on to the end, for at most 10 s more
//     (a loaded machine's reader was seen 800 KB behind at the grace).
//   - When Exec returns, no process of the group is left running: the
//     group is sent SIGKILL after the shell exits, so background jobs do
//     not outlive the call. On Linux, a descendant that left the group
//     (its own setsid, a daemon) is found by the AIBUDDY_EXEC_ID=<id> entry
//     Exec adds to the environment it inherits and is killed too
//     (ExecResult.Escaped counts them); one that also cleared its
//     environment is not tracked, and reading from its pipes stops at the
//     drain grace.
//
// The result's ExitCode is the shell's exit status, -1 when it was ended by
// a signal; Duration is the wall time from start to the end of reading.
// Timeouts and cancellation are results, not errors. The error is non-nil
// only when nothing ran: ctx already done (wrapping ctx.Err()), a bad Dir,
// or the shell could not be started.
func (s *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (*sandbox.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("localsandbox: exec: %w", err)
	}
	dir, err := s.execDir(req.Dir)
	if err != nil {
		return nil, err
	}
	env := req.Env
	if env == nil {
		env = DefaultEnv(nil)
	}
	if err := s.conf.check(); err != nil {
		return nil, err // fail closed: never a weaker confinement than configured
	}
	killDelay, drainGrace := s.opts.KillDelay, s.opts.DrainGrace
	if killDelay <= 0 {
		killDelay = DefaultKillDelay
	}
	if drainGrace <= 0 {
		drainGrace = DefaultDrainGrace
	}
	return s.run(ctx, req, runSpec{dir: dir, env: env, killDelay: killDelay, drainGrace: drainGrace})
}

// runSpec is what Exec resolved before starting the platform runner.
type runSpec struct {
	dir        string // absolute, symlinks resolved, inside the workspace
	env        []string
	stdin      *os.File // read end of the pipe fed from req.Stdin; nil: the null device
	killDelay  time.Duration
	drainGrace time.Duration
}

// execDir resolves a workspace-relative (or absolute, inside) directory to
// an absolute host path for the command's working directory.
func (s *Sandbox) execDir(rel string) (string, error) {
	fail := func(reason string, err error) (string, error) {
		return "", &sandbox.PathError{Op: sandbox.OpExec, Path: rel, Reason: reason, Err: err}
	}
	p := filepath.FromSlash(rel)
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(s.dir, filepath.Clean(p))
		if err != nil {
			return fail("absolute path", sandbox.ErrOutsideWorkspace)
		}
		p = r
	}
	p = filepath.Clean(p)
	if p != "." && !filepath.IsLocal(p) {
		return fail("", sandbox.ErrOutsideWorkspace)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(s.dir, p))
	if err != nil {
		if os.IsNotExist(err) {
			return fail("", sandbox.ErrNotFound)
		}
		return fail("", err)
	}
	if r, err := filepath.Rel(s.dir, real); err != nil || (r != "." && !filepath.IsLocal(r)) {
		return fail("via symlink -> "+real, sandbox.ErrOutsideWorkspace)
	}
	// Confirm through the root handle as well: os.Root refuses any escape.
	fi, err := s.root.Stat(p)
	if err != nil {
		if os.IsNotExist(err) {
			return fail("", sandbox.ErrNotFound)
		}
		return fail(err.Error(), sandbox.ErrOutsideWorkspace)
	}
	if !fi.IsDir() {
		return fail("", sandbox.ErrNotDir)
	}
	return real, nil
}

// defaultEnvFixed are set in every default environment, whatever the host
// has (BH-025, BH-026). A command has no terminal and empty stdin, so every
// prompt, pager, editor and colour is turned off at the source; the list
// follows what coding agents set for their shells (Codex's exec
// environment: NO_COLOR, TERM=dumb, PAGER, GIT_PAGER, GH_PAGER and a CI
// marker; crush's background shells: the same pagers and colour):
//
//   - CI=1: the common "not interactive" signal (npm, yarn, pnpm, jest,
//     vitest, create-* scaffolders, many CLIs: no prompts, no watch mode,
//     no spinners);
//   - DEBIAN_FRONTEND=noninteractive: apt and dpkg never ask;
//   - GIT_TERMINAL_PROMPT=0, GH_PROMPT_DISABLED=1, PIP_NO_INPUT=1: git,
//     gh and pip fail instead of asking for credentials or confirmation;
//   - PAGER, GIT_PAGER, GH_PAGER, MANPAGER=cat: no pager waits for a key;
//   - GIT_EDITOR, EDITOR, VISUAL=true: an editor "succeeds" at once (git
//     commit without -m keeps the default message or aborts);
//   - NO_COLOR=1, TERM=dumb: no colour or cursor codes.
var defaultEnvFixed = []string{
	"CI=1",
	"DEBIAN_FRONTEND=noninteractive",
	"EDITOR=true",
	"GH_PAGER=cat",
	"GH_PROMPT_DISABLED=1",
	"GIT_EDITOR=true",
	"GIT_PAGER=cat",
	"GIT_TERMINAL_PROMPT=0",
	"MANPAGER=cat",
	"NO_COLOR=1",
	"PAGER=cat",
	"PIP_NO_INPUT=1",
	"TERM=dumb",
	"VISUAL=true",
}

// defaultEnvHost are taken from the host when set there.
var defaultEnvHost = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "SHELL"}

// DefaultEnv builds the safe default environment of a command, as
// KEY=VALUE sorted by key: PATH, HOME, LANG, LC_ALL, TMPDIR, USER and SHELL
// from the host when set there (PATH defaults to
// /usr/local/bin:/usr/bin:/bin, LANG to C.UTF-8 when neither LANG nor
// LC_ALL is set), plus the non-interactive set CI=1,
// DEBIAN_FRONTEND=noninteractive, EDITOR=true, GH_PAGER=cat,
// GH_PROMPT_DISABLED=1, GIT_EDITOR=true, GIT_PAGER=cat,
// GIT_TERMINAL_PROMPT=0, MANPAGER=cat, NO_COLOR=1, PAGER=cat,
// PIP_NO_INPUT=1, TERM=dumb and VISUAL=true (BH-025, BH-026). The host's
// other variables (tokens, keys) are never included.
//
// overrides (the operator's settings, limits.execEnv) are applied in
// order after the defaults, each one of:
//
//   - NAME: the host's NAME is copied when set there (e.g. GOPATH, a
//     proxy); it replaces the default, so a host PAGER wins when named;
//   - NAME=VALUE: NAME is set to VALUE (e.g. CI=0, or TERM=xterm);
//   - -NAME: NAME is removed (e.g. -CI: the command sees no CI at all).
//
// Malformed entries (empty, a name with '=' or spaces after '-') are
// ignored; [ValidEnvOverride] tells them apart for settings validation.
// lookup reads the host environment; nil means os.LookupEnv.
func DefaultEnv(lookup func(string) (string, bool), overrides ...string) []string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	m := map[string]string{}
	for _, kv := range defaultEnvFixed {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	for _, k := range defaultEnvHost {
		if v, ok := lookup(k); ok {
			m[k] = v
		}
	}
	if _, ok := m["PATH"]; !ok {
		m["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	if m["LANG"] == "" && m["LC_ALL"] == "" {
		m["LANG"] = "C.UTF-8"
	}
	for _, o := range overrides {
		if ValidEnvOverride(o) != nil {
			continue
		}
		switch k, v, set := strings.Cut(o, "="); {
		case set:
			m[k] = v
		case strings.HasPrefix(k, "-"):
			delete(m, k[1:])
		default:
			if v, ok := lookup(k); ok {
				m[k] = v
			}
		}
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// ValidEnvOverride is [sandbox.ValidEnvOverride], the rule DefaultEnv's
// overrides follow.
func ValidEnvOverride(o string) error { return sandbox.ValidEnvOverride(o) }

// ExecEnv is [DefaultEnv] over the host environment with the given
// overrides (NAME, NAME=VALUE, -NAME). Tool layers find it by type
// assertion to apply configured variables without knowing the adapter.
func (s *Sandbox) ExecEnv(overrides []string) []string {
	return DefaultEnv(nil, overrides...)
}

// execMarkerKey is the environment variable that marks a command's
// descendants (value: a random id per Exec).
const execMarkerKey = "AIBUDDY_EXEC_ID"

// newExecID returns 16 random hex digits.
func newExecID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
