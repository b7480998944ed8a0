package jobs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aibuddy/aibuddy/store"
)

// newID returns "j" and 8 random hex digits.
func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "j" + hex.EncodeToString(b[:])
}

// ownerOf names this process as a job's owner: "aibuddy:HOST:PID:START",
// START being the process's start time as /proc shows it ("" where
// unknown), so a pid reused by another process is not taken for the
// owner.
func ownerOf(pid int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("aibuddy:%s:%d:%s", host, pid, procStart(pid))
}

// ownerState says whether the owner process of a job still runs: alive
// (it does, or it runs on another machine and cannot be asked: known
// false), or gone (known true, alive false).
func ownerState(owner string) (alive, known bool) {
	parts := strings.Split(owner, ":")
	if len(parts) != 4 || parts[0] != "aibuddy" {
		return true, false
	}
	host, _ := os.Hostname()
	if parts[1] != host {
		return true, false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 0 {
		return true, false
	}
	if !pidAlive(pid) {
		return false, true
	}
	if start := procStart(pid); start != "" && parts[3] != "" && start != parts[3] {
		return false, true // the pid was reused
	}
	return true, true
}

// ownerPID is the pid in an owner string, 0 when none.
func ownerPID(owner string) int {
	parts := strings.Split(owner, ":")
	if len(parts) != 4 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[2])
	return pid
}

// StateOf is the state of a stored job as a reader sees it now: a job
// stored as running whose owner process is gone (on this machine) is
// lost; nothing is written. For listings outside a Runner (aibuddy calls
// jobs).
func StateOf(j *store.Job) store.JobState {
	if j.State == store.JobRunning {
		if alive, known := ownerState(j.Owner); known && !alive {
			return store.JobLost
		}
	}
	return j.State
}
