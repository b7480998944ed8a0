package localsandbox

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sweepMarked sends SIGKILL to every process outside the process group
// pgid (which got its own SIGKILL) whose environment holds marker (the "AIBUDDY_EXEC_ID=<id>" entry Exec adds): descendants
// that left the command's process group (setsid, daemonizing) but kept the
// inherited environment. It reads /proc/<pid>/environ, which the kernel
// shows only for processes of the same user; two passes catch a process
// forked during the first. It reports how many processes it killed.
func sweepMarked(marker string, pgid int) int {
	want := append([]byte(marker), 0)
	self := os.Getpid()
	killed := 0
	seen := map[int]bool{} // a process still dying in the second pass is not counted twice
	for pass := 0; pass < 2; pass++ {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return killed
		}
		n := 0
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self || pid <= 1 || seen[pid] {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil {
				continue
			}
			if hasEntry(env, want) && procGroup(pid) != pgid {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					seen[pid] = true
					n++
				}
			}
		}
		killed += n
		if n == 0 {
			break
		}
	}
	return killed
}

// markedAlive reports whether a process other than a zombie is in the
// process group pgid or carries marker in its environment (read as
// sweepMarked reads it). A process of another user, or one that cleared
// its environment after leaving the group, is not seen.
func markedAlive(marker string, pgid int) bool {
	want := append([]byte(marker), 0)
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		g, state := procGroupState(pid)
		if g < 0 || state == 'Z' || state == 'X' {
			continue
		}
		if g == pgid {
			return true
		}
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil && hasEntry(env, want) {
			return true
		}
	}
	return false
}

// hasEntry reports whether a /proc/<pid>/environ block (NUL-separated
// entries) holds the entry want, given with its terminating NUL.
func hasEntry(env, want []byte) bool {
	return bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))
}

// procGroup returns the process group of pid from /proc/<pid>/stat (the
// field after state and ppid), or -1 when unknown.
func procGroup(pid int) int {
	g, _ := procGroupState(pid)
	return g
}

// procGroupState returns the process group and the state letter of pid
// from /proc/<pid>/stat, or -1 and 0 when unknown.
func procGroupState(pid int) (pgid int, state byte) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1, 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1, 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) == 0 {
		return -1, 0
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return -1, 0
	}
	return g, f[0][0]
}
