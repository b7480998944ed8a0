package localsandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/aibuddy/aibuddy/sandbox"
)

// Write replaces or creates req.Path atomically: the content goes to a
// temporary file in the same directory, is synced, and is renamed over the
// target, so a reader sees the old or the new bytes, never a mix, and no
// temporary file is left behind on any failure it sees; one left by a
// process killed mid-write (".aibuddy-tmp-<pid>-...") is removed by the
// next New on the workspace (tempfiles.go). An existing file keeps its
// permission bits; a new one gets 0666 minus the umask. Missing parent
// directories are created one component at a time through the root (unless
// req.NoCreateParents), after the whole path was checked, so nothing is
// created outside the workspace (BH-058).
//
// A final component that is a symlink is followed only when its target is
// inside the workspace and exists; a link leading outside or dangling fails
// with sandbox.ErrOutsideWorkspace and nothing is written (BH-057).
//
// The result's Bytes and SHA256 are read back from disk after the rename.
// Errors: *sandbox.PathError wrapping ErrOutsideWorkspace, ErrIsDir,
// ErrNotDir, ErrNotFound (a missing parent with NoCreateParents) or an OS
// error; ctx's error when ctx is done before the rename.
func (s *Sandbox) Write(ctx context.Context, req sandbox.WriteRequest) (*sandbox.WriteResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(sandbox.OpWrite, req.Path, err)
	}
	r, err := s.resolve(sandbox.OpWrite, req.Path, followFinalStrict)
	if err != nil {
		return nil, err
	}
	if r.rel == "." {
		return nil, &sandbox.PathError{Op: sandbox.OpWrite, Path: r.display, Err: sandbox.ErrIsDir}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	if err := s.makeParents(ctx, sandbox.OpWrite, r, !req.NoCreateParents); err != nil {
		return nil, err
	}
	mode, exists, err := s.targetMode(sandbox.OpWrite, r)
	if err != nil {
		return nil, err
	}
	if err := s.writeAtomic(ctx, sandbox.OpWrite, r, req.Content, mode, exists, nil); err != nil {
		return nil, err
	}
	n, sum, err := s.readBack(sandbox.OpWrite, r)
	if err != nil {
		return nil, err
	}
	return &sandbox.WriteResult{Path: r.display, Bytes: n, SHA256: sum, Created: !exists}, nil
}

// makeParents checks, and when create is set creates, the parent
// directories of r one component at a time through the root.
func (s *Sandbox) makeParents(ctx context.Context, op sandbox.Op, r resolved, create bool) error {
	dir := path.Dir(r.rel)
	if dir == "." {
		return nil
	}
	prefix := ""
	for _, c := range splitRel(dir) {
		if err := ctx.Err(); err != nil {
			return ctxErr(op, r.display, err)
		}
		prefix = path.Join(prefix, c)
		fi, err := s.root.Lstat(prefix)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !create {
				return &sandbox.PathError{Op: op, Path: r.display, Reason: "parent directory " + prefix + " does not exist", Err: notFound{}}
			}
			if err := s.root.Mkdir(prefix, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return s.pathErr(op, r.display, err)
			}
		case err != nil:
			return s.pathErr(op, r.display, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			// resolve removed links; one appeared since (a swap). Only
			// follow it if it stays inside and is a directory.
			st, err := s.root.Stat(prefix)
			if err != nil {
				return s.pathErr(op, r.display, err)
			}
			if !st.IsDir() {
				return &sandbox.PathError{Op: op, Path: r.display, Reason: prefix + " is not a directory", Err: sandbox.ErrNotDir}
			}
		case !fi.IsDir():
			return &sandbox.PathError{Op: op, Path: r.display, Reason: prefix + " is not a directory", Err: sandbox.ErrNotDir}
		}
	}
	return nil
}

// targetMode reports the permission bits of an existing target and whether
// it exists. A directory or a symlink (appeared since resolve) is refused.
func (s *Sandbox) targetMode(op sandbox.Op, r resolved) (fs.FileMode, bool, error) {
	fi, err := s.root.Lstat(r.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0o666, false, nil
	case err != nil:
		return 0, false, s.pathErr(op, r.display, err)
	case fi.IsDir():
		return 0, false, &sandbox.PathError{Op: op, Path: r.display, Err: sandbox.ErrIsDir}
	case fi.Mode()&fs.ModeSymlink != 0:
		// resolve followed every link; this one was swapped in since.
		return 0, false, &sandbox.PathError{Op: op, Path: r.display, Reason: "replaced by a symbolic link while it was being " + doneWord(op) + "; nothing was written; look at it again, then retry", Err: sandbox.ErrChanged}
	case !fi.Mode().IsRegular():
		return 0, false, &sandbox.PathError{Op: op, Path: r.display, Reason: "not a regular file", Err: sandbox.ErrUnsupported}
	}
	return fi.Mode().Perm(), true, nil
}

// writeAtomic writes data to a temporary file beside r.rel (named by
// tempName, so a sweep after a crash knows it) and renames it over r.rel. When exists, the temporary file gets mode exactly; otherwise
// mode minus the umask. beforeRename, when set, runs last and may veto.
// On any failure the temporary file is removed.
func (s *Sandbox) writeAtomic(ctx context.Context, op sandbox.Op, r resolved, data []byte, mode fs.FileMode, exists bool, beforeRename func() error) (err error) {
	tmp := tempName(r.rel)
	perm := mode
	if exists {
		perm = 0o600 // widened to mode below, after creation, regardless of umask
	}
	during, nothing := "while it was being "+doneWord(op), "nothing was written; look at it again, then retry"
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return &sandbox.PathError{Op: op, Path: r.display, Reason: "its directory was removed or replaced " + during + "; " + nothing, Err: sandbox.ErrChanged}
	}
	if err != nil {
		return s.pathErr(op, r.display, err)
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			s.root.Remove(tmp)
		}
	}()
	if exists {
		if err := f.Chmod(mode); err != nil {
			return s.pathErr(op, r.display, err)
		}
	}
	const chunk = 1 << 20
	for off := 0; off < len(data); off += chunk {
		if err := ctx.Err(); err != nil {
			return ctxErr(op, r.display, err)
		}
		if _, err := f.Write(data[off:min(off+chunk, len(data))]); err != nil {
			return s.pathErr(op, r.display, err)
		}
	}
	if err := f.Sync(); err != nil {
		return s.pathErr(op, r.display, err)
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return s.pathErr(op, r.display, cerr)
	}
	if err := ctx.Err(); err != nil {
		return ctxErr(op, r.display, err)
	}
	if beforeRename != nil {
		if err := beforeRename(); err != nil {
			return err
		}
	}
	if err := s.root.Rename(tmp, r.rel); err != nil {
		return s.raced(op, r.display, err, during, nothing)
	}
	return nil
}

// doneWord is what op does to a file, for messages: "written", "edited".
func doneWord(op sandbox.Op) string {
	if op == sandbox.OpEdit {
		return "edited"
	}
	return "written"
}

// readBack streams r.rel from disk and returns its size and hex SHA-256.
func (s *Sandbox) readBack(op sandbox.Op, r resolved) (int64, string, error) {
	const step, outcome = "right after it was written, before it could be read back", "the write happened but what is on disk now is unknown; look at it again"
	f, err := s.root.Open(r.rel)
	if err != nil {
		return 0, "", s.raced(op, r.display, err, step, outcome)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", s.raced(op, r.display, err, step, outcome)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
