package sandboxtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

// NewFunc opens the adapter under test on workspace, an existing empty
// local folder. It registers its own cleanup with t.
type NewFunc func(t *testing.T, workspace string) sandbox.Sandbox

// Options declare how the suite reaches the adapter's workspace and what
// the adapter cannot offer, each with the reason the suite reports when
// it skips the subtests that need it.
type Options struct {
	// Fixtures is how files are prepared and inspected: FixturesLocal
	// (default) or FixturesThroughSandbox.
	Fixtures Fixtures
	// NoHandleOpen, when set, says the adapter cannot open an object and
	// judge it as one handle (a path-based remote protocol such as
	// envd's: Deny is judged on the path resolved just before the
	// transfer), so the swap-race subtests are skipped with this reason.
	NoHandleOpen string
	// NoLocalWorkspace, when set, says the workspace is not a folder on
	// this machine, so the subtests that make FIFOs, sockets, devices,
	// sparse files and swap races with system calls on it (Objects) are
	// skipped with this reason.
	NoLocalWorkspace string
}

// suite is one run's constructor and options.
type suite struct {
	newSandbox NewFunc
	opts       Options
}

// Run runs the whole suite against the adapter newSandbox opens, with
// the fixtures made on the local folder.
func Run(t *testing.T, newSandbox NewFunc) { RunWith(t, newSandbox, Options{}) }

// RunWith runs the whole suite as opts says.
func RunWith(t *testing.T, newSandbox NewFunc, opts Options) {
	s := suite{newSandbox: newSandbox, opts: opts}
	t.Run("Confinement", func(t *testing.T) { runConfinement(t, s) })
	t.Run("List", func(t *testing.T) { runList(t, s) })
	t.Run("Read", func(t *testing.T) { runRead(t, s) })
	t.Run("Write", func(t *testing.T) { runWrite(t, s) })
	t.Run("Edit", func(t *testing.T) { runEdit(t, s) })
	t.Run("Search", func(t *testing.T) { runSearch(t, s) })
	t.Run("Objects", func(t *testing.T) {
		if opts.NoLocalWorkspace != "" {
			t.Skip("the workspace is not a local folder: " + opts.NoLocalWorkspace)
		}
		runObjects(t, s)
	})
	t.Run("Exec", func(t *testing.T) { runExec(t, s) })
}

// env is one subtest's world: a workspace, a folder outside it, and the
// sandbox under test.
type env struct {
	t       *testing.T
	ws      string // workspace root (absolute, as the sandbox sees it)
	outside string // a folder that is not inside ws
	sb      sandbox.Sandbox
	fx      fixtures
	ctx     context.Context
}

func newEnv(t *testing.T, s suite) *env {
	t.Helper()
	ws := t.TempDir()
	sb := s.newSandbox(t, ws)
	var fx fixtures = localFixtures{t: t}
	if s.opts.Fixtures == FixturesThroughSandbox {
		fx = sandboxFixtures{t: t, sb: sb, ws: ws}
	}
	outside, err := fx.tempDir()
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ws: ws, outside: outside, sb: sb, fx: fx, ctx: context.Background()}
}

// write creates ws/rel (and its parents) with data.
func (e *env) write(rel string, data string) {
	e.t.Helper()
	if err := e.fx.writeFile(filepath.Join(e.ws, filepath.FromSlash(rel)), []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// writeOut creates outside/rel with data and returns its path.
func (e *env) writeOut(rel, data string) string {
	e.t.Helper()
	p := filepath.Join(e.outside, filepath.FromSlash(rel))
	if err := e.fx.writeFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// read returns the bytes of ws/rel.
func (e *env) read(rel string) string {
	e.t.Helper()
	return e.readAbs(filepath.Join(e.ws, filepath.FromSlash(rel)))
}

// readAbs returns the bytes at an absolute path ("" when unreadable).
func (e *env) readAbs(p string) string {
	e.t.Helper()
	b, err := e.fx.readFile(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// isLink reports whether the absolute path is a symlink.
func (e *env) isLink(p string) bool {
	st, err := e.fx.lstat(p)
	return err == nil && st.mode&fs.ModeSymlink != 0
}

// symlink makes ws/rel a symlink to target, skipping the test where the
// host cannot create symlinks.
func (e *env) symlink(target, rel string) {
	e.t.Helper()
	if err := e.fx.symlink(target, filepath.Join(e.ws, filepath.FromSlash(rel))); err != nil {
		e.t.Skipf("cannot create symlinks: %v", err)
	}
}

// snapshot records what a failed call must leave unchanged.
type snapshot struct {
	data    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
	names   []string // entries of the file's directory
}

func (e *env) snap(rel string) snapshot {
	e.t.Helper()
	p := filepath.Join(e.ws, filepath.FromSlash(rel))
	fi, err := e.fx.lstat(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return snapshot{data: e.read(rel), size: fi.size, mode: fi.mode, modTime: fi.modTime, names: e.names(filepath.Dir(p))}
}

func (e *env) names(dir string) []string {
	e.t.Helper()
	out, err := e.fx.readDir(dir)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// unchanged fails unless ws/rel still matches s byte for byte, with the
// same size, mode and modification time, and no new file (a temporary one)
// beside it.
func (e *env) unchanged(rel string, s snapshot) {
	e.t.Helper()
	now := e.snap(rel)
	if now.data != s.data {
		e.t.Errorf("%s changed: %q, want %q", rel, now.data, s.data)
	}
	if now.size != s.size || now.mode != s.mode || !now.modTime.Equal(s.modTime) {
		e.t.Errorf("%s metadata changed: size %d mode %v mtime %v, want %d %v %v", rel, now.size, now.mode, now.modTime, s.size, s.mode, s.modTime)
	}
	if strings.Join(now.names, "\n") != strings.Join(s.names, "\n") {
		e.t.Errorf("directory of %s now holds %q, want %q (temporary file left?)", rel, now.names, s.names)
	}
}

func sha(data string) string {
	s := sha256.Sum256([]byte(data))
	return hex.EncodeToString(s[:])
}

// wantErr fails unless err wraps target.
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want one wrapping %v", err, target)
	}
}

// wantOutside fails unless err is a *sandbox.PathError wrapping
// ErrOutsideWorkspace.
func wantOutside(t *testing.T, err error) *sandbox.PathError {
	t.Helper()
	wantErr(t, err, sandbox.ErrOutsideWorkspace)
	var pe *sandbox.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *sandbox.PathError", err)
	}
	return pe
}

// exists reports whether the absolute path exists (not following a link).
func (e *env) exists(p string) bool {
	_, err := e.fx.lstat(p)
	return err == nil
}

func noError(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func texts(lines []sandbox.Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Text)
	}
	return out
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

func hexBytes(b []byte) string {
	var sb bytes.Buffer
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	return sb.String()
}
