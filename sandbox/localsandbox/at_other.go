//go:build !unix

package localsandbox

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Without the *at system calls the path walk (confine.go) resolves names
// relative to os.Root handles, one per directory: Lstat first, so a link
// is read by the walk, never followed by the open, and only a directory is
// opened as the next handle. os.Root keeps every step inside the handle it
// starts from, but a link swapped in between an Lstat and the open that
// follows it is followed there (inside that directory): the unix walk,
// which opens with O_NOFOLLOW, has no such window.

type dirH = *os.Root

func openDirRoot(abs string) (dirH, error) { return os.OpenRoot(abs) }

func closeDir(d dirH) { d.Close() }

type statInfo struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	fi    fs.FileInfo
}

func statOfInfo(fi fs.FileInfo) statInfo {
	return statInfo{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime(), fi: fi}
}

func sameFile(a, b statInfo) bool { return a.fi != nil && b.fi != nil && os.SameFile(a.fi, b.fi) }

func openDirAt(d dirH, name string) (dirH, error) {
	fi, err := d.Lstat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, syscall.ELOOP
	}
	if !fi.IsDir() {
		return nil, syscall.ENOTDIR
	}
	return d.OpenRoot(name)
}

func lstatAt(d dirH, name string) (statInfo, error) {
	fi, err := d.Lstat(name)
	if err != nil {
		return statInfo{}, err
	}
	return statOfInfo(fi), nil
}

func readlinkAt(d dirH, name string) (string, error) {
	fi, err := d.Lstat(name)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", syscall.EINVAL
	}
	return d.Readlink(name)
}

func openFileAt(d dirH, name string) (*os.File, statInfo, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, statInfo{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, statInfo{}, err
	}
	return f, statOfInfo(fi), nil
}

func mkdirAt(d dirH, name string, perm fs.FileMode) error { return d.Mkdir(name, perm) }

func createAt(d dirH, name string, perm fs.FileMode) (*os.File, error) {
	return d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
}

func renameAt(d dirH, from, to string) error { return d.Rename(from, to) }

func removeAt(d dirH, name string) error { return d.Remove(name) }

func isLinkErr(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR)
}

func isWouldBlock(error) bool { return false }

func isNotLink(err error) bool { return errors.Is(err, syscall.EINVAL) }

func isSwapErr(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, fs.ErrNotExist)
}

// entryInfo is the lstat of e, an entry read from the directory f (opened
// through os.Root, so its DirEntry lstats relative to it).
func entryInfo(_ *os.File, e fs.DirEntry) (statInfo, error) {
	fi, err := e.Info()
	if err != nil {
		return statInfo{}, err
	}
	return statOfInfo(fi), nil
}
