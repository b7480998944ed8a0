//go:build linux

package localsandbox

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// ExecRequest.Started is called once, before any output, with the
// shell's pid (the process group's id).
func TestExecStartedReportsThePID(t *testing.T) {
	sb, _ := newExecSandbox(t, &Options{Confinement: &confine.Settings{Confinement: "off"}})
	var pid, calls int
	var wroteBefore bool
	out := writerFunc(func(p []byte) (int, error) {
		if calls == 0 {
			wroteBefore = true
		}
		return len(p), nil
	})
	res, err := sb.Exec(context.Background(), sandbox.ExecRequest{Command: "echo $$", Stdout: out,
		Started: func(p int) { pid, calls = p, calls+1 }})
	if err != nil || res.ExitCode != 0 {
		t.Fatal(res, err)
	}
	if calls != 1 || pid <= 1 || wroteBefore {
		t.Errorf("Started called %d times with pid %d; output before it: %v", calls, pid, wroteBefore)
	}
}

// KillMarked stops every process whose environment holds the marker,
// whatever its process group, and leaves the others.
func TestKillMarked(t *testing.T) {
	sb, _ := newExecSandbox(t, &Options{Confinement: &confine.Settings{Confinement: "off"}})
	start := func(env string) (*exec.Cmd, chan error) {
		c := exec.Command("sleep", "100000")
		c.Env = []string{env}
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		return c, done
	}
	_, marked := start("AIBUDDY_JOB_ID=jtest1")
	other, unmarked := start("AIBUDDY_JOB_ID=jtest10")
	defer other.Process.Kill()
	if n := sb.KillMarked("AIBUDDY_JOB_ID=jtest1"); n != 1 {
		t.Errorf("KillMarked stopped %d processes, want 1", n)
	}
	select {
	case <-marked:
	case <-time.After(hangBound):
		t.Fatal("the marked process is still alive")
	}
	select {
	case err := <-unmarked:
		t.Fatalf("a process with another marker was stopped: %v", err)
	default:
	}
}
