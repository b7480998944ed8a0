//go:build unix && !linux

package localsandbox

import (
	"os"
	"syscall"
)

// waitExited reports false: the caller reaps with cmd.Wait (the group id
// may then be reused in a rare race before the final group kill).
func waitExited(pid int) bool { return false }

// growPipe is a no-op where the pipe size cannot be set.
func growPipe(f *os.File) {}

// pipeBuffered reports 0 (unknown): stdout and stderr are not reordered.
func pipeBuffered(rc syscall.RawConn) int { return 0 }
