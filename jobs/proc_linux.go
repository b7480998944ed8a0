package jobs

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// procStart is the start time of pid (field 22 of /proc/<pid>/stat, clock
// ticks since boot), "" when unknown.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return ""
	}
	return string(f[19])
}

// pidAlive reports whether a process with pid exists (a zombie counts as
// gone).
func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// MarkedPIDs lists the live processes of this user whose environment holds
// marker ("KEY=VALUE"; see [Marker]), read from /proc/<pid>/environ;
// zombies are left out. Linux only: elsewhere it returns nil.
func MarkedPIDs(marker string) []int {
	want := append([]byte(marker), 0)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || len(env) == 0 {
			continue
		}
		if (bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) && pidAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
