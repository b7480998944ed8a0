package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// WaitLine waits until the file at path holds a whole line (ends in a
// newline), as a command writes its [TreeLine] into a file, at most
// within, and returns its contents. It waits on inotify events of the
// file's folder (a write, close, create or rename there), not by reading
// again on a timer; the folder must exist. The error says the file never
// got a line in time, or why the folder could not be watched.
func WaitLine(path string, within time.Duration) ([]byte, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("proctest: inotify: %w", err)
	}
	defer unix.Close(fd)
	dir := filepath.Dir(path)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MODIFY|unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO); err != nil {
		return nil, fmt.Errorf("proctest: watch %s: %w", dir, err)
	}
	deadline := time.Now().Add(within)
	buf := make([]byte, 64<<10)
	for {
		// Read after the watch is in place: a write before it is seen here.
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return b, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("proctest: %s got no whole line within %s", path, within)
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(left.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return nil, fmt.Errorf("proctest: poll inotify: %w", err)
		}
		for {
			if _, err := unix.Read(fd, buf); err != nil {
				break // EAGAIN: drained
			}
		}
	}
}
