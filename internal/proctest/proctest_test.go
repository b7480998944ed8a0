package proctest_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/proctest"
)

// startTree runs a shell that starts two background sleeps, then prints
// TreeLine and waits, in a process group of its own; it returns the tree
// the line names and the shell.
func startTree(t *testing.T) (proctest.Tree, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 & "+proctest.TreeLine+"; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	buf := make([]byte, 256)
	n, err := io.ReadAtLeast(out, buf, 1)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := proctest.ParseTree(string(buf[:n]))
	if err != nil {
		t.Fatal(err)
	}
	return tr, cmd
}

// The tree of an unconfined shell is its process group: the shell and its
// two sleeps are live, the sleeps are the shell's children; after SIGKILL
// to the group WaitGone returns nothing left (zombies count as gone).
func TestLiveAndWaitGone(t *testing.T) {
	tr, cmd := startTree(t)
	if tr.Confined() || tr.PGID != cmd.Process.Pid {
		t.Fatalf("tree %+v of shell %d: want its own group in this namespace", tr, cmd.Process.Pid)
	}
	kids := proctest.Children(cmd.Process.Pid) // forked before the line was printed
	if len(kids) != 2 {
		t.Fatalf("children %v, want the two sleeps", kids)
	}
	if live := proctest.Live(tr); len(live) != 3 {
		t.Errorf("live %v, want the shell and two sleeps", live)
	}
	if err := syscall.Kill(-tr.PGID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.Live(tr) }, 10*time.Second)
	if err != nil || left != nil {
		t.Errorf("after SIGKILL: left %v, %v", left, err)
	}
}

// WaitGone gives up at its bound and says what is still live.
func TestWaitGoneBounded(t *testing.T) {
	tr, _ := startTree(t)
	left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.InGroup(tr.PGID) }, 50*time.Millisecond)
	if err != nil || len(left) == 0 {
		t.Errorf("a running tree: left %v, %v; want it listed", left, err)
	}
}

func TestParseTree(t *testing.T) {
	own, _ := os.Readlink("/proc/self/ns/pid")
	tr, err := proctest.ParseTree("42 " + own + "\nmore")
	if err != nil || tr.PGID != 42 || tr.NS != own || tr.Confined() {
		t.Errorf("ParseTree = %+v, %v", tr, err)
	}
	for _, bad := range []string{"", "42", "x pid:[1]", "42 net:[1]"} {
		if _, err := proctest.ParseTree(bad); err == nil {
			t.Errorf("ParseTree(%q) accepted", bad)
		}
	}
}

// A command prints TreeLine first; the test parses it and asserts that
// nothing of the command is left once its call returned.
func ExampleParseTree() {
	own, _ := os.Readlink("/proc/self/ns/pid")
	tr, err := proctest.ParseTree("4242 " + own + "\n")
	fmt.Println(tr.PGID, tr.Confined(), err)
	left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.InGroup(1 << 30) }, time.Second)
	fmt.Println(len(left), err)
	// Output:
	// 4242 false <nil>
	// 0 <nil>
}

// WaitLine returns once a process wrote a whole line into the file, and
// fails at its bound when none comes.
func TestWaitLine(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/pid"
	cmd := exec.Command("sh", "-c", "read go; printf 'half'> pid; printf ' line\\n' >> pid")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if _, err := proctest.WaitLine(path, 20*time.Millisecond); err == nil {
		t.Error("WaitLine returned before anything was written")
	}
	io.WriteString(in, "go\n")
	in.Close()
	b, err := proctest.WaitLine(path, 10*time.Second)
	if err != nil || string(b) != "half line\n" {
		t.Errorf("WaitLine = %q, %v", b, err)
	}
}
