//go:build unix && !linux

package localsandbox

// sweepMarked is Linux only (it reads /proc/<pid>/environ); elsewhere a
// process that left the command's group is not tracked.
func sweepMarked(marker string, pgid int) int { return 0 }
