//go:build linux

package localsandbox

import (
	"io/fs"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// The search walk reads directories with raw syscalls on linux. os.Root
// would lstat every entry of every directory it reads (os.ReadDir on a
// directory opened in a Root cannot trust d_type lazily), and open each
// directory twice (OpenRoot, then Open(".") to read it); a walk of a large
// tree spends most of its time in those calls. Here a directory is one
// openat(2) relative to its parent's descriptor with O_NOFOLLOW|O_DIRECTORY
// (one component at a time, never through a symlink, so nothing outside the
// directory the walk started in can be reached), its entries come from
// getdents64(2) with their d_type, and only a file the search wants is
// stat'ed, with fstatat(2) and AT_SYMLINK_NOFOLLOW relative to the same
// descriptor.

// direntBufBytes is the getdents64 buffer each walking goroutine reuses,
// in bytes.
const direntBufBytes = 32 << 10

// dirHandle is one open directory of the walk.
type dirHandle struct {
	fd   int
	file *os.File // the walk root's directory, as the path walk opened it; nil below it
}

// dirEnt is one directory entry: its name and type bits (fs.ModeDir,
// fs.ModeSymlink, 0 for a regular file, fs.ModeIrregular for anything else).
type dirEnt struct {
	name string
	typ  fs.FileMode
}

// openWalkRoot takes the directory the path walk opened for t (the
// search root, found without following a link outside the workspace) as
// the walk's first handle.
func openWalkRoot(_ *Sandbox, t *target) (*dirHandle, error) {
	f := t.takeFile()
	if f == nil {
		return nil, syscall.ENOTDIR
	}
	return &dirHandle{fd: int(f.Fd()), file: f}, nil
}

// openDir opens name, a single entry of d, as a directory: O_NOFOLLOW, so
// a symlink (even one swapped in since d was read) is refused, never
// followed.
func (d *dirHandle) openDir(name string) (*dirHandle, error) {
	for {
		fd, err := syscall.Openat(d.fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &dirHandle{fd: fd}, nil
	}
}

func (d *dirHandle) close() {
	if d.file != nil {
		d.file.Close()
		return
	}
	syscall.Close(d.fd)
}

// grepFd is the descriptor grep jobs open d's files relative to.
func (d *dirHandle) grepFd() int { return d.fd }

// readDir returns d's entries except "." and "..", in directory order.
// buf is the caller's reusable getdents64 buffer. An entry whose type the
// filesystem does not report (DT_UNKNOWN) is lstat'ed; one that vanished
// meanwhile is left out.
func (d *dirHandle) readDir(buf *[]byte) ([]dirEnt, error) {
	if len(*buf) < direntBufBytes {
		*buf = make([]byte, direntBufBytes)
	}
	b := *buf
	var ents []dirEnt
	for {
		n, err := syscall.Getdents(d.fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return ents, err
		}
		if n <= 0 {
			return ents, nil
		}
		for off := 0; off < n; {
			// struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen,
			// u8 d_type, char d_name[] (NUL-terminated).
			rec := b[off:n]
			if len(rec) < 19 {
				break
			}
			reclen := int(*(*uint16)(unsafe.Pointer(&rec[16])))
			if reclen < 19 || reclen > len(rec) {
				break
			}
			off += reclen
			if *(*uint64)(unsafe.Pointer(&rec[0])) == 0 {
				continue // a deleted entry
			}
			nameB := rec[19:reclen]
			for i, c := range nameB {
				if c == 0 {
					nameB = nameB[:i]
					break
				}
			}
			if string(nameB) == "." || string(nameB) == ".." {
				continue
			}
			name := string(nameB)
			var typ fs.FileMode
			switch rec[18] {
			case syscall.DT_DIR:
				typ = fs.ModeDir
			case syscall.DT_REG:
				typ = 0
			case syscall.DT_LNK:
				typ = fs.ModeSymlink
			case syscall.DT_UNKNOWN:
				var st syscall.Stat_t
				if err := fstatat(d.fd, name, &st); err != nil {
					continue
				}
				typ = modeType(st.Mode)
			default:
				typ = fs.ModeIrregular
			}
			ents = append(ents, dirEnt{name: name, typ: typ})
		}
	}
}

func modeType(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// lstat returns the modification time and size in bytes of e, an entry of
// d, without following a symlink; ok is false when it is gone or no longer
// a regular file.
func (d *dirHandle) lstat(e dirEnt) (mod time.Time, size int64, ok bool) {
	var st syscall.Stat_t
	if err := fstatat(d.fd, e.name, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return time.Time{}, 0, false
	}
	return time.Unix(st.Mtim.Unix()), st.Size, true
}

// openFile opens name, a regular file that is a single entry of d, without
// following symlinks.
func (d *dirHandle) openFile(name string) (*os.File, error) {
	fd, err := openAt(d.fd, name)
	if err != nil {
		return nil, err
	}
	if _, err := fdModTime(fd); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// fstatat is fstatat(2) on dirfd and name with AT_SYMLINK_NOFOLLOW.
func fstatat(dirfd int, name string, st *syscall.Stat_t) error {
	if sysFstatat == 0 {
		fd, err := syscall.Openat(dirfd, name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		return syscall.Fstat(fd, st)
	}
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	for {
		_, _, e := syscall.Syscall6(sysFstatat, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(st)), atSymlinkNofollow, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// Flags the syscall package does not name on every port (their values
// are the same on every linux port Go supports).
const (
	oPath             = 0x200000 // O_PATH
	atSymlinkNofollow = 0x100    // AT_SYMLINK_NOFOLLOW
)

// sweepHandle makes f, the directory rel opened by openDirBeneath, a
// handle for the temporary file sweep.
func sweepHandle(_ *Sandbox, f *os.File, _ string) *dirHandle {
	return &dirHandle{fd: int(f.Fd()), file: f}
}

// remove unlinks name, a file entry of d.
func (d *dirHandle) remove(name string) error { return syscall.Unlinkat(d.fd, name) }
