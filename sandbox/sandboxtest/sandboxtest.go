package sandboxtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

// NewFunc opens the adapter under test on workspace, an existing empty
// local folder. It registers its own cleanup with t.
type NewFunc func(t *testing.T, workspace string) sandbox.Sandbox

// Options declare what an adapter cannot offer, each with the reason the
// suite reports when it skips the subtests that need it.
type Options struct {
	// NoHandleOpen, when set, says the adapter cannot open an object and
	// judge it as one handle (a path-based remote protocol such as
	// envd's: Deny is judged on the path resolved just before the
	// transfer), so the swap-race subtests, which run a local swapper
	// against the workspace folder, are skipped with this reason.
	NoHandleOpen string
}

// Run runs the whole suite against the adapter newSandbox opens.
func Run(t *testing.T, newSandbox NewFunc) { RunWith(t, newSandbox, Options{}) }

// RunWith runs the whole suite, skipping what opts declares missing.
func RunWith(t *testing.T, newSandbox NewFunc, opts Options) {
	suiteOpts := opts
	t.Run("Confinement", func(t *testing.T) { runConfinement(t, newSandbox) })
	t.Run("List", func(t *testing.T) { runList(t, newSandbox) })
	t.Run("Read", func(t *testing.T) { runRead(t, newSandbox) })
	t.Run("Write", func(t *testing.T) { runWrite(t, newSandbox) })
	t.Run("Edit", func(t *testing.T) { runEdit(t, newSandbox) })
	t.Run("Search", func(t *testing.T) { runSearch(t, newSandbox) })
	t.Run("Objects", func(t *testing.T) { runObjects(t, newSandbox, suiteOpts) })
	t.Run("Exec", func(t *testing.T) { runExec(t, newSandbox) })
}

// env is one subtest's world: a workspace, a folder outside it, and the
// sandbox under test.
type env struct {
	t       *testing.T
	ws      string // workspace root (absolute)
	outside string // a folder that is not inside ws
	sb      sandbox.Sandbox
	ctx     context.Context
}

func newEnv(t *testing.T, newSandbox NewFunc) *env {
	t.Helper()
	ws := t.TempDir()
	outside := t.TempDir()
	return &env{t: t, ws: ws, outside: outside, sb: newSandbox(t, ws), ctx: context.Background()}
}

// write creates ws/rel (and its parents) with data.
func (e *env) write(rel string, data string) {
	e.t.Helper()
	p := filepath.Join(e.ws, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// writeOut creates outside/rel with data and returns its path.
func (e *env) writeOut(rel, data string) string {
	e.t.Helper()
	p := filepath.Join(e.outside, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// read returns the bytes of ws/rel.
func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, filepath.FromSlash(rel)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// symlink makes ws/rel a symlink to target, skipping the test where the
// host cannot create symlinks.
func (e *env) symlink(target, rel string) {
	e.t.Helper()
	p := filepath.Join(e.ws, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		e.t.Skipf("host cannot create symlinks: %v", err)
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
	fi, err := os.Lstat(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return snapshot{data: e.read(rel), size: fi.Size(), mode: fi.Mode(), modTime: fi.ModTime(), names: e.names(filepath.Dir(p))}
}

func (e *env) names(dir string) []string {
	e.t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range ents {
		out = append(out, d.Name())
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

func exists(p string) bool {
	_, err := os.Lstat(p)
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
