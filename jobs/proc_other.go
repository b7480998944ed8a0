//go:build unix && !linux

package jobs

import "syscall"

func procStart(pid int) string { return "" }

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// MarkedPIDs is Linux only (it reads /proc/<pid>/environ): here nil.
func MarkedPIDs(marker string) []int { return nil }
