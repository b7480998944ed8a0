package localsandbox

import (
	"os"
	"syscall"
	"unsafe"
)

// waitExited blocks until the process pid has exited, without reaping it
// (waitid with WNOWAIT), so its pid stays reserved. It reports false when
// that wait is not possible; the caller then reaps with cmd.Wait.
func waitExited(pid int) bool {
	const pPID = 1            // P_PID
	const wNoWait = 0x1000000 // WNOWAIT
	var info [128]byte        // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNoWait, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		return e == 0
	}
}

// growPipe raises a pipe's buffer to 1 MiB (F_SETPIPE_SZ) so a fast writer
// blocks less often; failure is harmless.
func growPipe(f *os.File) {
	const fSetPipeSz = 1031
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fSetPipeSz, 1<<20)
}

// pipeBuffered reports the bytes waiting in a pipe (FIONREAD), 0 when
// unknown.
func pipeBuffered(rc syscall.RawConn) int {
	var n int32
	_ = rc.Control(func(fd uintptr) {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); e != 0 {
			n = 0
		}
	})
	return int(n)
}
