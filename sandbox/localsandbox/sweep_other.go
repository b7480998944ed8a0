//go:build unix && !linux

package localsandbox

// sweepMarked is Linux only (it reads /proc/<pid>/environ); elsewhere a
// process that left the command's group is not tracked.
func sweepMarked(marker string, pgid int) int { return 0 }

// markedAlive cannot tell here: it reports true, so the drain grace ends
// reading as documented.
func markedAlive(marker string, pgid int) bool { return true }
