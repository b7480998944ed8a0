//go:build unix

package localsandbox

import "syscall"

// processAlive reports whether a process with this pid exists (EPERM: it
// does, under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
