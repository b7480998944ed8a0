//go:build linux

package localsandbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openBeneathFast is openDirBeneath's openat2(2) path: one system call for
// the whole path, resolved by the kernel beneath the root's descriptor with
// no symlink and no magic link (/proc/self/fd/N) allowed. ok is false when
// openat2 is unavailable here (kernel before 5.6: ENOSYS; a seccomp filter:
// EPERM), remembered for the sandbox's life; the caller then walks the
// components itself.
func (s *Sandbox) openBeneathFast(real string) (f *os.File, ok bool, err error) {
	if s.noOpenat2.Load() {
		return nil, false, nil
	}
	how := &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := retryFd(func() (int, error) { return unix.Openat2(s.rootFd, real, how) })
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		s.noOpenat2.Store(true)
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return os.NewFile(uintptr(fd), real), true, nil
}
