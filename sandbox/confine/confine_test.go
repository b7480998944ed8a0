//go:build linux

package confine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

func TestDefaultDenyPatternsAgreeWithApproval(t *testing.T) {
	if !slices.Equal(confine.DefaultDenyPatterns, approval.DefaultPolicy().DeniedPaths) {
		t.Errorf("confine.DefaultDenyPatterns %v != approval's default deniedPaths %v", confine.DefaultDenyPatterns, approval.DefaultPolicy().DeniedPaths)
	}
}

func TestNewPolicy(t *testing.T) {
	ws, home := t.TempDir(), "/h"
	p, err := confine.NewPolicy(confine.Settings{}, ws, home)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != confine.WorkspaceWrite || p.Network != confine.NetworkOff || !slices.Contains(p.DenyRead, "/h/.ssh") ||
		!slices.Equal(p.ReadOnlyPaths, []string{".git", ".aibuddy"}) {
		t.Errorf("defaults: %+v", p)
	}
	p, err = confine.NewPolicy(confine.Settings{AllowedDomains: []string{"example.com", "*.example.org", "localhost:8080"}}, ws, home)
	if err != nil || p.Network != confine.NetworkLimited {
		t.Errorf("allowedDomains without network: %+v %v", p, err)
	}
	for _, s := range []confine.Settings{
		{Confinement: "strict"},
		{Network: "some"},
		{Network: "off", AllowedDomains: []string{"example.com"}},
		{AllowedDomains: []string{"exa mple.com"}},
		{AllowedDomains: []string{"example.com:99999"}},
		{ReadOnlyPaths: []string{"../x"}},
		{WritablePaths: []string{"relative"}},
	} {
		if _, err := confine.NewPolicy(s, ws, home); !errors.Is(err, confine.ErrSettings) || !strings.Contains(err.Error(), "sandbox.") {
			t.Errorf("%+v: want an ErrSettings naming the setting, got %v", s, err)
		}
	}
}

func TestExplain(t *testing.T) {
	p, err := confine.NewPolicy(confine.Settings{}, "/ws", "/users-home/u")
	if err != nil {
		t.Fatal(err)
	}
	p.Workspace = "/ws" // not resolved: it does not exist
	for _, c := range []struct{ line, want string }{
		{"sh: 1: cannot create /etc/x: Read-only file system", "write outside the workspace denied by confinement (workspace-write): /etc/x"},
		{"touch: cannot touch '/tmp/out/probe': Read-only file system", "/tmp/out/probe (setting sandbox.confinement"},
		{"cat: /users-home/u/.ssh/id_rsa: Permission denied", "~/.ssh is unreadable (setting sandbox.denyRead)"},
		{"cat: .env: Permission denied", "read of .env denied by confinement: the workspace's denied files are unreadable (setting approval.deniedPaths)"},
		{"mv: cannot move 'x' to '.git/hooks/pre-commit': Read-only file system", "write to .git/hooks/pre-commit denied by confinement: .git is read-only inside the workspace (setting sandbox.readOnlyPaths)"},
		{"OSError: [Errno 18] Invalid cross-device link: 'x' -> '.git/config'", ".git is read-only inside the workspace"},
		{"strace: attach: ptrace(PTRACE_SEIZE, 12): Operation not permitted", "ptrace denied by confinement (workspace-write): the seccomp filter"},
		{"curl: (6) Could not resolve host: example.com", "the network is off, loopback only (setting sandbox.network)"},
	} {
		got := p.Explain(c.line, 0)
		if len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("%q: got %q, want one holding %q", c.line, got, c.want)
		}
	}
	// A permission error on a path no rule covers is not the policy's.
	if got := p.Explain("cat: /ws/notes.txt: Permission denied\nls: cannot open directory '/var/cache/x': Permission denied", 0); len(got) != 0 {
		t.Errorf("denials claimed for paths no rule covers: %q", got)
	}
}

// The probe is behavioural: it ran a sandbox and checked its rules from
// inside.
func TestProbe(t *testing.T) {
	pr := confine.NewDriver(nil).Probe()
	if pr.Err != nil {
		t.Fatalf("the driver is unavailable on this machine: %v", pr.Err)
	}
	for _, c := range []string{"write-inside", "write-outside-denied", "read-only-path", "masked-unreadable", "no-new-namespaces", "no-ptrace"} {
		if !slices.Contains(pr.Checks, c) {
			t.Errorf("check %s did not pass: %v", c, pr.Checks)
		}
	}
	t.Logf("probe: Landlock ABI %d, %v, took %v", pr.LandlockABI, pr.Checks, pr.Took)
}

// runOutside runs a command under p and reports whether a file outside got
// written and what the error of Start was.
func runOutside(t *testing.T, d *confine.Driver, p *confine.Policy) (probe string, err error) {
	t.Helper()
	outside := t.TempDir()
	probe = filepath.Join(outside, "probe")
	proc, err := d.Start(context.Background(), p, &confine.Command{Path: "/bin/sh", Args: []string{"sh", "-c", "touch " + probe}, Dir: p.Workspace, TempDir: t.TempDir()})
	if err == nil {
		<-proc.Exited()
		proc.Kill()
	}
	return probe, err
}

// BH-077 (a): the sandbox's init binary is missing. Nothing runs, and the
// error names the piece and the fix.
func TestFailClosedMissingInit(t *testing.T) {
	d := confine.NewDriver(&confine.Options{InitPath: filepath.Join(t.TempDir(), "no-such-aibuddy")})
	p, err := confine.NewPolicy(confine.Settings{}, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var ue *confine.UnavailableError
	if err := d.Check(p); !errors.As(err, &ue) || !errors.Is(err, confine.ErrUnavailable) || !strings.Contains(ue.Piece, "init") || ue.Fix == "" {
		t.Fatalf("Check: want an UnavailableError about the init with a fix, got %v", err)
	}
	probe, err := runOutside(t, d, p)
	if !errors.Is(err, confine.ErrUnavailable) {
		t.Errorf("Start: want ErrUnavailable, got %v", err)
	}
	if _, serr := os.Stat(probe); serr == nil {
		t.Error("the command ran unconfined")
	}
	r := d.Report(p)
	if r.Enforced || !strings.Contains(r.Unavailable, "init") || !strings.Contains(r.Summary(), "cannot be enforced") {
		t.Errorf("report: %+v", r)
	}
}

// BH-077 (b): the kernel refuses user namespaces. The test runs itself in
// a user namespace whose user.max_user_namespaces is 0, where every
// clone(CLONE_NEWUSER) really fails (ENOSPC), and the driver there must
// say so and run nothing.
func TestFailClosedUserNamespacesRefused(t *testing.T) {
	if os.Getenv("CONFINE_TEST_USERNS_REFUSED") == "1" {
		if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
			fmt.Println("SETUP-FAILED", err)
			os.Exit(3)
		}
		d := confine.NewDriver(nil)
		p, err := confine.NewPolicy(confine.Settings{}, t.TempDir(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		err = d.Check(p)
		var ue *confine.UnavailableError
		if !errors.As(err, &ue) || ue.Piece != "user namespaces" || !strings.Contains(ue.Fix, "user namespaces") {
			t.Fatalf("Check: want user namespaces unavailable, got %v", err)
		}
		probe, serr := runOutside(t, d, p)
		if !errors.Is(serr, confine.ErrUnavailable) {
			t.Fatalf("Start: want ErrUnavailable, got %v", serr)
		}
		if _, err := os.Stat(probe); err == nil {
			t.Fatal("the command ran unconfined")
		}
		fmt.Println("REFUSED-AS-EXPECTED", err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailClosedUserNamespacesRefused$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "CONFINE_TEST_USERNS_REFUSED=1")
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the child test failed: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "REFUSED-AS-EXPECTED") || !strings.Contains(out.String(), "no space left on device") {
		t.Fatalf("the child did not see the kernel's refusal:\n%s", out.String())
	}
}

// Mode off is a person's setting: Start refuses it (run the command
// directly), and the report says commands are not confined.
func TestOffIsNotStarted(t *testing.T) {
	d := confine.NewDriver(nil)
	p, err := confine.NewPolicy(confine.Settings{Confinement: "off"}, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Check(p) != nil {
		t.Error("Check of mode off failed")
	}
	if _, err := d.Start(context.Background(), p, &confine.Command{Path: "/bin/true", Args: []string{"true"}, TempDir: t.TempDir()}); err == nil {
		t.Error("Start ran mode off")
	}
	if s := d.Report(p).Summary(); !strings.Contains(s, "not confined") {
		t.Errorf("summary: %s", s)
	}
}

func ExampleDriver_Start() {
	ws, tmp := os.TempDir(), os.TempDir()
	p, err := confine.NewPolicy(confine.Settings{Confinement: "read-only"}, ws, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	d := confine.NewDriver(nil)
	proc, err := d.Start(context.Background(), p, &confine.Command{
		Path: "/bin/sh", Args: []string{"sh", "-c", "exit 3"}, Dir: p.Workspace, TempDir: tmp,
	})
	if err != nil {
		fmt.Println(err) // e.g. confinement read-only cannot be enforced: user namespaces unavailable: ...
		return
	}
	<-proc.Exited()
	code, _, _ := proc.ExitStatus()
	proc.Kill() // every process of the command ends
	fmt.Println("exit", code)
	// Output: exit 3
}
