//go:build linux

package localsandbox

import (
	"errors"
	"io"
	"syscall"
	"time"
)

// rawOpen: grep opens files with openat(2) relative to the directory being
// walked, and reads them with read(2), skipping the os.File set-up (an
// fstat to decide pollability, a poller registration) that costs more than
// a small file's read.
const rawOpen = true

var errNotRegular = errors.New("not a regular file")

// openAt opens name, a single entry of the directory dirfd, for reading:
// O_NOFOLLOW so a symlink swapped in since the directory was read is not
// followed, O_NONBLOCK so a FIFO swapped in does not block, and the open
// file must be regular. It returns the size in bytes and the modification
// time from fstat(2) on the open file.
func openAt(dirfd int, name string) (fd int, size int64, mod time.Time, err error) {
	for {
		fd, err = syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return -1, 0, time.Time{}, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, 0, time.Time{}, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return -1, 0, time.Time{}, errNotRegular
	}
	return fd, st.Size, time.Unix(st.Mtim.Unix()), nil
}

func closeFd(fd int) { syscall.Close(fd) }

// fdReader reads a file descriptor with read(2).
type fdReader int

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(r), p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 && len(p) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}
