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
// directories are created one component at a time, each relative to the
// descriptor of the one above (unless req.NoCreateParents), after the path
// the file will have was judged (inside, req.Deny, the depth bound), so
// nothing is created outside the workspace or under a denied folder
// (BH-058). The temporary file is created and renamed relative to the
// target directory's descriptor; renameat never follows a link at the
// name, so a link swapped in there is replaced, never written through.
//
// A final component that is a symlink is followed only when its target is
// inside the workspace and exists; a link leading outside or dangling fails
// with sandbox.ErrOutsideWorkspace and nothing is written (BH-057). req.Deny
// judges the real path the content lands on.
//
// The result's Bytes and SHA256 are read back from the renamed file, after
// the rename. Errors: *sandbox.PathError wrapping ErrOutsideWorkspace,
// ErrDenied, ErrSpecialFile, ErrTooDeep, ErrIsDir, ErrNotDir, ErrNotFound
// (a missing parent with NoCreateParents) or an OS error; ctx's error when
// ctx is done before the rename.
func (s *Sandbox) Write(ctx context.Context, req sandbox.WriteRequest) (*sandbox.WriteResult, error) {
	const op = sandbox.OpWrite
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, req.Path, err)
	}
	o := walkOpts{parents: parentsCreate, open: openNone, strict: true, deny: req.Deny}
	if req.NoCreateParents {
		o.parents = parentsMustExist
	}
	t, err := s.walkPath(op, req.Path, o)
	if err != nil {
		return nil, err
	}
	defer t.close()
	if t.real == "." || t.name == "." {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Err: sandbox.ErrIsDir}
	}
	mode := fs.FileMode(0o666)
	if t.exists {
		mode = t.st.mode.Perm()
	}
	f, err := s.writeAtomic(ctx, op, t, req.Content, mode, t.exists, nil)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, sum, err := readBack(f)
	if err != nil {
		const step, outcome = "right after it was written, before it could be read back", "the write happened but what is on disk now is unknown; look at it again"
		return nil, s.raced(op, t.display, err, step, outcome)
	}
	return &sandbox.WriteResult{Path: t.display, Bytes: n, SHA256: sum, Created: !t.exists}, nil
}

// lockRename takes renameSem, or fails with ctx's error while it waits.
func (s *Sandbox) lockRename(ctx context.Context, op sandbox.Op, display string) (unlock func(), err error) {
	select {
	case s.renameSem <- struct{}{}:
		return func() { <-s.renameSem }, nil
	case <-ctx.Done():
		return nil, ctxErr(op, display, ctx.Err())
	}
}

// writeAtomic writes data to a temporary file beside t's final object,
// in the same directory (t.dir; named by tempName, so a sweep after a
// crash knows it), syncs it and renames it over t.name. renameat(2) never
// follows a link at the name: an object swapped in there since the walk is
// replaced, never written through. When exists, the temporary file gets
// mode exactly; otherwise mode minus the umask. beforeRename, when set,
// runs last, under the rename lock, and may veto. On any failure the
// temporary file is removed. It returns the renamed file, open for
// reading back what is on disk; the caller closes it.
func (s *Sandbox) writeAtomic(ctx context.Context, op sandbox.Op, t *target, data []byte, mode fs.FileMode, exists bool, beforeRename func() error) (*os.File, error) {
	tmp := tempName(t.name)
	perm := mode
	if exists {
		perm = 0o600 // widened to mode below, after creation, regardless of umask
	}
	during, nothing := "while it was being "+doneWord(op), "nothing was written; look at it again, then retry"
	f, err := createAt(t.dir, tmp, perm)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: "its directory was removed or replaced " + during + "; " + nothing, Err: sandbox.ErrChanged}
	}
	if err != nil {
		return nil, s.pathErr(op, t.display, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			removeAt(t.dir, tmp)
		}
	}()
	if exists {
		if err := f.Chmod(mode); err != nil {
			return nil, s.pathErr(op, t.display, err)
		}
	}
	const chunk = 1 << 20
	for off := 0; off < len(data); off += chunk {
		if err := ctx.Err(); err != nil {
			return nil, ctxErr(op, t.display, err)
		}
		if _, err := f.Write(data[off:min(off+chunk, len(data))]); err != nil {
			return nil, s.pathErr(op, t.display, err)
		}
	}
	if err := f.Sync(); err != nil {
		return nil, s.pathErr(op, t.display, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, t.display, err)
	}
	unlock, err := s.lockRename(ctx, op, t.display)
	if err != nil {
		return nil, err
	}
	if beforeRename != nil {
		if err := beforeRename(); err != nil {
			unlock()
			return nil, err
		}
	}
	err = renameAt(t.dir, tmp, t.name)
	unlock()
	if err != nil {
		return nil, s.raced(op, t.display, err, during, nothing)
	}
	renamed = true
	return f, nil
}

// readBack streams f, the file just renamed into place, from its start
// and returns its size and hex SHA-256.
func readBack(f *os.File) (int64, string, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// doneWord is what op does to a file, for messages: "written", "edited".
func doneWord(op sandbox.Op) string {
	if op == sandbox.OpEdit {
		return "edited"
	}
	return "written"
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
