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
// followed, O_NONBLOCK so a FIFO or terminal swapped in does not block (a
// read of one fails at once). Nothing is stat'ed here: most files grep
// reads do not match, and a file that does is checked by fdModTime.
func openAt(dirfd int, name string) (fd int, err error) {
	for {
		fd, err = syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// fdModTime returns the modification time of the open file fd, and an
// error when it is not a regular file (anything else swapped in since the
// directory was read is never reported).
func fdModTime(fd int) (time.Time, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return time.Time{}, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return time.Time{}, errNotRegular
	}
	return time.Unix(st.Mtim.Unix()), nil
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
