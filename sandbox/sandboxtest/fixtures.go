package sandboxtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

// Fixtures says how the suite prepares and inspects the workspace.
type Fixtures int

const (
	// FixturesLocal uses the os package on the workspace, a local folder
	// (the default; for adapters whose workspace is on this machine).
	FixturesLocal Fixtures = iota
	// FixturesThroughSandbox makes and inspects every fixture through
	// the Sandbox under test: Write for workspace files, Exec of POSIX
	// shell commands (mkdir, ln -s, base64, stat, ls, mktemp) for the
	// rest, so an adapter whose workspace is remote runs the suite. Paths
	// are then the sandbox's: the NewFunc must make the workspace path it
	// is given exist (empty) inside the sandbox, and the "outside" folder
	// is made with mktemp -d there. Needs Exec, base64 and GNU stat.
	FixturesThroughSandbox
)

// fileStat is what the suite compares of a file.
type fileStat struct {
	mode    fs.FileMode
	size    int64
	modTime time.Time
}

// fixtures is the suite's access to the world the sandbox sees, by
// absolute paths (the sandbox's own).
type fixtures interface {
	writeFile(abs string, data []byte, mode fs.FileMode) error
	readFile(abs string) ([]byte, error)
	symlink(target, abs string) error
	lstat(abs string) (fileStat, error)
	readDir(abs string) ([]string, error)
	chmod(abs string, mode fs.FileMode) error
	chtimes(abs string, t time.Time) error
	mkdirAll(abs string) error
	tempDir() (string, error)
}

type localFixtures struct{ t *testing.T }

func (localFixtures) writeFile(p string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, mode)
}
func (localFixtures) readFile(p string) ([]byte, error) { return os.ReadFile(p) }
func (localFixtures) symlink(target, p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, p)
}
func (localFixtures) lstat(p string) (fileStat, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileStat{}, err
	}
	return fileStat{mode: fi.Mode(), size: fi.Size(), modTime: fi.ModTime()}, nil
}
func (localFixtures) readDir(p string) ([]string, error) {
	ents, err := os.ReadDir(p)
	var out []string
	for _, d := range ents {
		out = append(out, d.Name())
	}
	return out, err
}
func (localFixtures) chmod(p string, m fs.FileMode) error { return os.Chmod(p, m) }
func (localFixtures) chtimes(p string, t time.Time) error { return os.Chtimes(p, t, t) }
func (localFixtures) mkdirAll(p string) error             { return os.MkdirAll(p, 0o755) }
func (f localFixtures) tempDir() (string, error)          { return f.t.TempDir(), nil }

// sandboxFixtures reaches the world through the Sandbox under test.
type sandboxFixtures struct {
	t  *testing.T
	sb sandbox.Sandbox
	ws string
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// sh runs a fixture command in the sandbox and returns its stdout.
func (f sandboxFixtures) sh(cmd string) ([]byte, error) {
	var out, errb bytes.Buffer
	res, err := f.sb.Exec(context.Background(), sandbox.ExecRequest{Command: "LC_ALL=C; export LC_ALL; " + cmd, Stdout: &out, Stderr: &errb, Timeout: hangBound})
	if err != nil {
		return nil, fmt.Errorf("fixture command %q: %w", cmd, err)
	}
	if res.ExitCode != 0 {
		if strings.Contains(errb.String(), "No such file") {
			return nil, fmt.Errorf("fixture command %q: %s: %w", cmd, strings.TrimSpace(errb.String()), fs.ErrNotExist)
		}
		return nil, fmt.Errorf("fixture command %q: exit %d: %s", cmd, res.ExitCode, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

func (f sandboxFixtures) writeFile(p string, data []byte, mode fs.FileMode) error {
	if rel, err := filepath.Rel(f.ws, p); err == nil && !strings.HasPrefix(rel, "..") && mode == 0o644 && strings.Count(rel, "/") < 200 {
		// A workspace file: one Write (created 0644 by the adapters);
		// paths deeper than adapters resolve go through the shell.
		_, err := f.sb.Write(context.Background(), sandbox.WriteRequest{Path: filepath.ToSlash(rel), Content: data})
		return err
	}
	if _, err := f.sh("mkdir -p -- " + shq(filepath.Dir(p)) + " && : > " + shq(p) + " && chmod " + strconv.FormatUint(uint64(mode.Perm()), 8) + " -- " + shq(p)); err != nil {
		return err
	}
	const chunk = 48 << 10 // base64 on a command line, a chunk at a time
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		if _, err := f.sh("printf %s " + shq(base64.StdEncoding.EncodeToString(data[off:end])) + " | base64 -d >> " + shq(p)); err != nil {
			return err
		}
	}
	return nil
}

func (f sandboxFixtures) readFile(p string) ([]byte, error) {
	out, err := f.sh("base64 < " + shq(p))
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(out)), ""))
}

func (f sandboxFixtures) symlink(target, p string) error {
	_, err := f.sh("mkdir -p -- " + shq(filepath.Dir(p)) + " && ln -s -- " + shq(target) + " " + shq(p))
	return err
}

func (f sandboxFixtures) lstat(p string) (fileStat, error) {
	out, err := f.sh("stat -c '%f %s %y' -- " + shq(p))
	if err != nil {
		return fileStat{}, err
	}
	fields := strings.SplitN(strings.TrimSpace(string(out)), " ", 3)
	if len(fields) != 3 {
		return fileStat{}, fmt.Errorf("stat of %s: %q", p, out)
	}
	raw, err1 := strconv.ParseUint(fields[0], 16, 32)
	size, err2 := strconv.ParseInt(fields[1], 10, 64)
	mt, err3 := time.Parse("2006-01-02 15:04:05.999999999 -0700", fields[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return fileStat{}, fmt.Errorf("stat of %s: %q", p, out)
	}
	mode := fs.FileMode(raw & 0o777)
	switch raw & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	return fileStat{mode: mode, size: size, modTime: mt}, nil
}

func (f sandboxFixtures) readDir(p string) ([]string, error) {
	out, err := f.sh("ls -A1 -- " + shq(p))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range strings.Split(string(out), "\n") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

func (f sandboxFixtures) chmod(p string, m fs.FileMode) error {
	_, err := f.sh("chmod " + strconv.FormatUint(uint64(m.Perm()), 8) + " -- " + shq(p))
	return err
}

func (f sandboxFixtures) chtimes(p string, t time.Time) error {
	_, err := f.sh("touch -h -d " + shq(t.UTC().Format("2006-01-02 15:04:05.000000000 +0000")) + " -- " + shq(p))
	return err
}

func (f sandboxFixtures) mkdirAll(p string) error {
	_, err := f.sh("mkdir -p -- " + shq(p))
	return err
}

func (f sandboxFixtures) tempDir() (string, error) {
	out, err := f.sh("mktemp -d")
	if err != nil {
		return "", err
	}
	d := strings.TrimSpace(string(out))
	f.t.Cleanup(func() { _, _ = f.sh("rm -rf -- " + shq(d)) })
	return d, nil
}
