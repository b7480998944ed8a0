//go:build unix

package localsandbox

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The path walk (confine.go) resolves a request path one component at a
// time relative to open directory descriptors, with the *at system calls
// of golang.org/x/sys/unix: openat(2) with O_NOFOLLOW, so no link is ever
// followed by the kernel (the walk reads each link itself and decides),
// fstatat(2) with AT_SYMLINK_NOFOLLOW to learn what a final component is
// before it is opened (a FIFO, socket or device is refused without being
// opened), and the final open with O_NONBLOCK, so an object swapped in
// between those two calls cannot block it either. Each step costs one
// system call on a short name, so resolution is linear in the depth of the
// path.

// dirH is an open directory the walk resolves names relative to.
type dirH = int

// openDirRoot opens the workspace root for the walk.
func openDirRoot(abs string) (dirH, error) {
	return retryFd(func() (int, error) {
		return unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
}

// closeDir closes a directory the walk opened.
func closeDir(d dirH) { unix.Close(d) }

// statInfo is what the walk needs of an lstat or fstat.
type statInfo struct {
	mode     fs.FileMode // type and permission bits
	size     int64       // bytes
	mtime    time.Time
	dev, ino uint64
}

func statOf(st *unix.Stat_t) statInfo {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFREG:
	default:
		m |= fs.ModeIrregular
	}
	return statInfo{mode: m, size: st.Size, mtime: time.Unix(st.Mtim.Unix()), dev: uint64(st.Dev), ino: st.Ino}
}

// sameFile reports whether a and b describe the same file.
func sameFile(a, b statInfo) bool { return a.dev == b.dev && a.ino == b.ino }

// openDirAt opens name, one entry of d, as a directory to resolve names in,
// never through a symlink: a link fails with ELOOP or ENOTDIR (the walk
// then reads it with readlinkAt), and so does anything that is not a
// directory (a FIFO is never opened: O_DIRECTORY is checked first).
func openDirAt(d dirH, name string) (dirH, error) {
	return retryFd(func() (int, error) { return unix.Openat(d, name, dirLookupFlags, 0) })
}

// lstatAt is fstatat(2) of name in d without following a symlink.
func lstatAt(d dirH, name string) (statInfo, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statInfo{}, err
		}
		return statOf(&st), nil
	}
}

// readlinkAt returns the target of the symlink name in d; EINVAL when name
// is not a symlink.
func readlinkAt(d dirH, name string) (string, error) {
	buf := make([]byte, 4096)
	for {
		n, err := unix.Readlinkat(d, name, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n < len(buf) || len(buf) >= 1<<16 {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// openFileAt opens name in d for reading, without following a symlink
// (ELOOP, or EMLINK on FreeBSD) and without blocking (O_NONBLOCK: a FIFO
// swapped in since its lstat opens at once instead of waiting for a
// writer). It returns the file with its fstat; O_NONBLOCK is cleared again
// on a regular file or directory, so reads are plain blocking reads.
func openFileAt(d dirH, name string) (*os.File, statInfo, error) {
	fd, err := retryFd(func() (int, error) {
		return unix.Openat(d, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, statInfo{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, statInfo{}, err
	}
	si := statOf(&st)
	if si.mode.IsRegular() || si.mode.IsDir() {
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, statInfo{}, err
		}
	}
	return os.NewFile(uintptr(fd), name), si, nil
}

// mkdirAt makes the directory name in d.
func mkdirAt(d dirH, name string, perm fs.FileMode) error {
	for {
		err := unix.Mkdirat(d, name, uint32(perm.Perm()))
		if err != unix.EINTR {
			return err
		}
	}
}

// createAt creates name in d, which must not exist (O_EXCL, and
// O_NOFOLLOW so a link planted there is never followed), for reading and
// writing.
func createAt(d dirH, name string, perm fs.FileMode) (*os.File, error) {
	fd, err := retryFd(func() (int, error) {
		return unix.Openat(d, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// renameAt renames from to to, both in d. The kernel never follows a link
// at either name: a link swapped in at to is replaced, not written through.
func renameAt(d dirH, from, to string) error {
	for {
		err := unix.Renameat(d, from, d, to)
		if err != unix.EINTR {
			return err
		}
	}
}

// removeAt removes the file name in d.
func removeAt(d dirH, name string) error { return unix.Unlinkat(d, name, 0) }

// isLinkErr reports whether an O_NOFOLLOW open failed because name is a
// symlink (or, with O_DIRECTORY, not a directory): the walk then looks at
// it with readlinkAt.
func isLinkErr(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENOTDIR)
}

// isNotLink reports readlinkAt's error for a name that is not a symlink.
func isNotLink(err error) bool { return errors.Is(err, unix.EINVAL) }

// isSwapErr reports an open that failed because the object at the name
// changed since its lstat: it became a link (ELOOP, EMLINK), a socket
// (ENXIO) or was removed.
func isSwapErr(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENOENT)
}

// isWouldBlock reports an O_NONBLOCK open refused because it would wait
// (a lease held by another process).
func isWouldBlock(err error) bool { return errors.Is(err, unix.EWOULDBLOCK) }

func retryFd(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// entryInfo is the lstat of e, an entry read from the directory f, made
// relative to f's descriptor (an *os.File not opened through os.Root would
// lstat the entry by a path name).
func entryInfo(f *os.File, e fs.DirEntry) (statInfo, error) {
	return lstatAt(int(f.Fd()), e.Name())
}
