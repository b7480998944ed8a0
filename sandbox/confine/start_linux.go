package confine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aibuddy/aibuddy/sandbox/confine/confineinit"
	"github.com/aibuddy/aibuddy/sandbox/confine/egress"
)

// socketRoots are the host folders whose unix sockets are masked, with the
// depth walked below each.
var socketRoots = []struct {
	dir   string
	depth int
}{{"/run", 6}, {"/var/run", 6}, {"/tmp", 2}}

// SocketScanner returns a scanner of unix sockets (for Command.Sockets).
func SocketScanner() *Scanner {
	return NewScanner(func(rel, base string, d fs.DirEntry) bool {
		return d.Type()&fs.ModeSocket != 0
	}, nil, 0)
}

// Process is a command running confined. Its methods are safe for
// concurrent use.
type Process struct {
	init   *exec.Cmd
	ctrl   *net.UnixConn
	proxy  *egress.Proxy
	exited chan struct{} // the main process ended (or the init did)
	done   chan struct{} // the init was reaped
	// ctrlEOF is closed when the control socket's reader has read the
	// init's last message (the socket ended): an "escaped" count the init
	// sent is in escaped by then.
	ctrlEOF chan struct{}
	// ended is closed when no process of the sandbox is left: the init
	// said so (its "escaped" count, sent once none is left or all were
	// killed), or it was reaped.
	ended     chan struct{}
	endedOnce sync.Once

	mu      sync.Mutex
	code    int
	signal  syscall.Signal
	known   bool
	escaped chan int
	denials []string
	// landlockABI is the Landlock ABI of the ruleset enforced (0: none).
	landlockABI int
	waitErr     error
	killOnce    sync.Once
}

// Pid is the host process id of the sandbox's init (PID 1 inside).
func (p *Process) Pid() int { return p.init.Process.Pid }

// Exited is closed when the main process has ended (also when the init
// itself ended first).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Done is closed when the init has ended and been reaped: no process of
// the sandbox is left.
func (p *Process) Done() <-chan struct{} { return p.done }

// Ended is closed when no process of the sandbox is left besides the
// init: the init reported that (it then exits), or it was reaped. It
// comes before Done by the kernel's teardown of the sandbox's namespaces,
// which on a loaded machine was seen to take over 600 ms.
func (p *Process) Ended() <-chan struct{} { return p.ended }

func (p *Process) markEnded() { p.endedOnce.Do(func() { close(p.ended) }) }

// ExitStatus is how the main process ended: its exit code, or -1 and the
// signal. ok is false when it is not known (the init ended first).
func (p *Process) ExitStatus() (code int, sig syscall.Signal, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code, p.signal, p.known
}

// Denials are the egress proxy's and resolver's refusals so far, each one
// sentence naming the setting.
func (p *Process) Denials() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.denials)
}

// Terminate sends SIGTERM to every process of the sandbox.
func (p *Process) Terminate() { _, _ = p.ctrl.Write([]byte("term")) }

// killAnswerBound bounds how long Kill waits for the init's count of
// escaped processes before it kills the init itself.
const killAnswerBound = 5 * time.Second

// Kill ends every process of the sandbox and waits for the init to be
// reaped (bounded). escaped counts the processes that had left the main
// process's group (setsid, daemons) and were still running. The count is
// the init's answer to "kill"; Kill waits for it until the control socket
// has ended (so an answer sent just before the init exited is not lost
// to the race with its reaping) or killAnswerBound, then 0.
func (p *Process) Kill() (escaped int) {
	p.killOnce.Do(func() {
		_, _ = p.ctrl.Write([]byte("kill"))
		t := time.NewTimer(killAnswerBound)
		defer t.Stop()
		select {
		case escaped = <-p.escaped:
		case <-p.ctrlEOF:
			select {
			case escaped = <-p.escaped:
			default:
			}
		case <-t.C:
		}
		_ = p.init.Process.Kill() // PID 1 gone: the kernel kills the rest
	})
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	return escaped
}

// Wait waits for the init to end and returns the error of its wait.
func (p *Process) Wait() error {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Start runs c under p. It returns once the sandbox is set up and the
// command started, or an error: an *UnavailableError when the policy
// cannot be enforced here (nothing ran), or the init's setup failure
// naming its stage. Mode off is refused: run the command directly.
func (d *Driver) Start(ctx context.Context, p *Policy, c *Command) (*Process, error) {
	if p == nil || p.Mode == Off {
		return nil, errors.New("confine: Start with mode off: run the command directly")
	}
	if err := d.Check(p); err != nil {
		return nil, err
	}
	spec, err := plan(p, c)
	if err != nil {
		return nil, err
	}
	return d.start(ctx, p, spec, c.Stdin, c.Stdout, c.Stderr)
}

// plan turns the policy and command into the init's spec: the writable
// roots, the read-only paths inside them that exist, and the masks.
func plan(p *Policy, c *Command) (*confineinit.Spec, error) {
	if c.TempDir == "" {
		return nil, errors.New("confine: Command.TempDir is required")
	}
	s := &confineinit.Spec{Net: string(p.Network), Dir: c.Dir, Path: c.Path, Args: c.Args, ExitWithMain: c.ExitWithMain}
	s.Writable = append(s.Writable, c.TempDir)
	if p.Mode == WorkspaceWrite {
		s.Writable = append(s.Writable, p.Workspace)
		for _, w := range p.WritablePaths {
			if fi, err := os.Stat(w); err == nil && fi.IsDir() {
				s.Writable = append(s.Writable, w)
			}
		}
		for _, r := range p.ReadOnlyPaths {
			a := filepath.Join(p.Workspace, filepath.FromSlash(r))
			if _, err := os.Lstat(a); err == nil {
				s.ReadOnly = append(s.ReadOnly, a)
			}
		}
	}
	for _, x := range p.DenyRead {
		fi, err := os.Stat(x)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			s.MaskDirs = append(s.MaskDirs, x)
		} else {
			s.MaskFiles = append(s.MaskFiles, x)
		}
	}
	deny := c.Deny
	if deny == nil {
		deny = DenyScanner(p.DenyPatterns)
	}
	if p.Workspace != "" {
		for _, h := range deny.Scan(p.Workspace) {
			if h.Dir {
				s.MaskDirs = append(s.MaskDirs, h.Path)
			} else {
				s.MaskFiles = append(s.MaskFiles, h.Path)
			}
		}
	}
	socks := c.Sockets
	if socks == nil {
		socks = SocketScanner()
	}
	for _, root := range socketRoots {
		if fi, err := os.Lstat(root.dir); err != nil || !fi.IsDir() {
			continue // absent, or a link to a root walked already (/var/run)
		}
		for _, h := range socks.scan(root.dir, root.depth) {
			if !under(h.Path, s.Writable) {
				s.MaskFiles = append(s.MaskFiles, h.Path)
			}
		}
	}
	env := make([]string, 0, len(c.Env)+1)
	for _, kv := range c.Env {
		if k, _, _ := strings.Cut(kv, "="); k == "TMPDIR" {
			continue
		}
		env = append(env, kv)
	}
	s.Env = append(env, "TMPDIR="+c.TempDir)
	return s, nil
}

// under reports whether p is one of roots or inside one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, p); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return true
		}
	}
	return false
}

// unavailable builds the error for a failed start of the init.
func unavailable(piece string, err error, fix string) *UnavailableError {
	return &UnavailableError{Piece: piece, Cause: err.Error(), Fix: fix}
}

const (
	fixUserns = "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0; on Ubuntu 24.04 an AppArmor profile for aibuddy or kernel.apparmor_restrict_unprivileged_userns=0), or set sandbox.confinement to \"off\" to run commands unconfined"
	fixInit   = "run aibuddy from a binary that links the sandbox/confine package (the aibuddy program does), or set sandbox.confinement to \"off\""
)

// start re-executes the init binary in new namespaces with spec.
func (d *Driver) start(ctx context.Context, p *Policy, spec *confineinit.Spec, stdin, stdout, stderr *os.File) (*Process, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("confine: control socket: %w", err)
	}
	parentF, childF := os.NewFile(uintptr(fds[0]), "confine-control"), os.NewFile(uintptr(fds[1]), "confine-control")
	specR, specW, err := os.Pipe()
	if err != nil {
		parentF.Close()
		childF.Close()
		return nil, fmt.Errorf("confine: spec pipe: %w", err)
	}
	filter, err := d.filter()
	if err != nil {
		parentF.Close()
		childF.Close()
		specR.Close()
		specW.Close()
		return nil, unavailable("seccomp", err, "a supported architecture (amd64, arm64, riscv64, ppc64le, s390x), or set sandbox.confinement to \"off\"")
	}
	spec.Filter = filter
	extra := []*os.File{childF, specR}
	llfd, llflags, abi, err := landlockRuleset(spec.Writable)
	if err != nil {
		parentF.Close()
		childF.Close()
		specR.Close()
		specW.Close()
		return nil, unavailable("Landlock", err, "a kernel with a working Landlock, or set sandbox.confinement to \"off\"")
	}
	var llFile *os.File
	if llfd >= 0 {
		llFile = os.NewFile(uintptr(llfd), "landlock-ruleset")
		defer llFile.Close()
		extra = append(extra, llFile)
		spec.Landlock, spec.LandlockFlags = true, llflags
	}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if spec.Net != string(NetworkOn) {
		flags |= unix.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Setsid:                     true,
		Pdeathsig:                  syscall.SIGKILL,
	}
	if uid != 0 {
		// The init keeps what it needs to build the sandbox through its
		// execve as a non-root user of the new namespace.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETPCAP}
	}
	cmd := &exec.Cmd{
		Path: d.opts.InitPath, Args: []string{"aibuddy-confine-init", InitArg},
		Env:    []string{},
		Dir:    "/",
		Stdin:  stdinOrNil(stdin),
		Stdout: stdoutOrNil(stdout),
		Stderr: stdoutOrNil(stderr),
		// fd 3, 4 and 5 in the init (confineinit.CtrlFD, SpecFD, LandlockFD).
		ExtraFiles:  extra,
		SysProcAttr: attr,
	}
	err = cmd.Start()
	childF.Close()
	specR.Close()
	if err != nil {
		parentF.Close()
		specW.Close()
		piece, fix := "user namespaces", fixUserns
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOEXEC) || errors.Is(err, syscall.EACCES) {
			piece, fix = "the sandbox's init ("+d.opts.InitPath+")", fixInit
		}
		return nil, unavailable(piece, err, fix)
	}
	go func() {
		_, _ = specW.Write(confineinit.Encode(spec))
		specW.Close()
	}()
	conn, err := net.FileConn(parentF)
	parentF.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("confine: control socket: %w", err)
	}
	pr := &Process{init: cmd, ctrl: conn.(*net.UnixConn), exited: make(chan struct{}), done: make(chan struct{}), ctrlEOF: make(chan struct{}), ended: make(chan struct{}), escaped: make(chan int, 1), landlockABI: abi}
	go func() {
		err := cmd.Wait()
		pr.mu.Lock()
		pr.waitErr = err
		pr.mu.Unlock()
		close(pr.done)
	}()
	fail := func(err error) (*Process, error) {
		_ = cmd.Process.Kill()
		<-pr.done
		pr.ctrl.Close()
		if pr.proxy != nil {
			pr.proxy.Close()
		}
		return nil, err
	}
	deadline := time.Now().Add(d.opts.StartTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = pr.ctrl.SetReadDeadline(deadline)
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		n, oobn, _, _, err := pr.ctrl.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			// The init ended before saying anything: it did not run
			// (a binary that is not the init exits at once, or the
			// kernel refused the namespaces after the fork).
			werr := err
			select {
			case <-pr.done:
				werr = pr.Wait()
			case <-time.After(100 * time.Millisecond):
			}
			if werr == nil {
				werr = errors.New("it ended without a word")
			}
			return fail(unavailable("the sandbox's init ("+d.opts.InitPath+")", werr, fixInit))
		}
		msg := string(buf[:n])
		verb, rest, _ := strings.Cut(msg, " ")
		switch verb {
		case "error":
			stage, _, _ := strings.Cut(rest, ":")
			return fail(setupError(stage, rest))
		case "probe":
			pr.mu.Lock()
			pr.denials = []string{rest}
			pr.mu.Unlock()
			<-pr.done
			pr.ctrl.Close()
			close(pr.ctrlEOF)
			pr.markEnded()
			return pr, nil
		case "listen":
			files, err := rightsFiles(oob[:oobn])
			if err != nil || len(files) != 3 {
				return fail(fmt.Errorf("confine: egress listeners: %v", err))
			}
			if err := pr.serveEgress(p, d.opts.Egress, files); err != nil {
				return fail(err)
			}
		case "started":
			_ = pr.ctrl.SetReadDeadline(time.Time{})
			go pr.readControl()
			return pr, nil
		default:
			return fail(fmt.Errorf("confine: unexpected message from the init: %q", msg))
		}
	}
}

// setupError maps an init setup failure to an error: the pieces the
// kernel may lack (mounts in a user namespace, the loopback of a network
// namespace under AppArmor's restriction, seccomp) are UnavailableErrors.
func setupError(stage, msg string) error {
	switch stage {
	case "mounts":
		return unavailable("mounts in a user namespace", errors.New(msg), "a kernel that allows mounts in user namespaces (Linux 5.12 or newer for mount_setattr), or set sandbox.confinement to \"off\"")
	case "network":
		return unavailable("the sandbox's network namespace", errors.New(msg), "allow network namespaces for unprivileged users (AppArmor: kernel.apparmor_restrict_unprivileged_userns=0 or a profile for aibuddy), set sandbox.network to \"on\", or set sandbox.confinement to \"off\"")
	case "start":
		if strings.Contains(msg, "seccomp") || strings.Contains(msg, "landlock") || strings.Contains(msg, "capabilities") || strings.Contains(msg, "no_new_privs") {
			return unavailable("the process restrictions", errors.New(msg), "a kernel with seccomp filters and Landlock (Linux 5.13 or newer), or set sandbox.confinement to \"off\"")
		}
	}
	return fmt.Errorf("confine: the sandbox's init: %s", msg)
}

func stdinOrNil(f *os.File) *os.File  { return f }
func stdoutOrNil(f *os.File) *os.File { return f }

// rightsFiles takes the descriptors passed with a control message.
func rightsFiles(oob []byte) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var out []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, err
		}
		for _, fd := range fds {
			out = append(out, os.NewFile(uintptr(fd), "egress"))
		}
	}
	return out, nil
}

// serveEgress starts the egress proxy and resolver on the listeners the
// init made inside the sandbox's network namespace: the proxy (TCP), the
// resolver (UDP), the resolver (TCP).
func (pr *Process) serveEgress(p *Policy, o *egress.Options, files []*os.File) error {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var opts egress.Options
	if o != nil {
		opts = *o
	}
	opts.OnDeny = func(d egress.Denial) {
		pr.mu.Lock()
		if s := d.String(); len(pr.denials) < 100 && !slices.Contains(pr.denials, s) {
			pr.denials = append(pr.denials, s)
		}
		pr.mu.Unlock()
	}
	pl, err := net.FileListener(files[0])
	if err != nil {
		return fmt.Errorf("confine: egress proxy listener: %w", err)
	}
	du, err := net.FilePacketConn(files[1])
	if err != nil {
		pl.Close()
		return fmt.Errorf("confine: resolver socket: %w", err)
	}
	dl, err := net.FileListener(files[2])
	if err != nil {
		pl.Close()
		du.Close()
		return fmt.Errorf("confine: resolver listener: %w", err)
	}
	pr.proxy = egress.New(egress.NewAllowlist(p.AllowedDomains), &opts)
	pr.proxy.ServeHTTP(pl)
	pr.proxy.ServeDNS(du)
	pr.proxy.ServeDNSTCP(dl)
	return nil
}

// readControl handles the init's messages after the start.
func (pr *Process) readControl() {
	defer func() {
		close(pr.ctrlEOF)
		<-pr.done
		pr.markEnded()
		pr.mu.Lock()
		if !pr.known {
			pr.code = -1
		}
		pr.mu.Unlock()
		select {
		case <-pr.exited:
		default:
			close(pr.exited)
		}
		if pr.proxy != nil {
			pr.proxy.Close()
		}
		pr.ctrl.Close()
	}()
	buf := make([]byte, 256)
	for {
		n, _, _, _, err := pr.ctrl.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			return
		}
		verb, rest, _ := strings.Cut(string(buf[:n]), " ")
		switch verb {
		case "exit":
			c, s, _ := strings.Cut(rest, " ")
			code, _ := strconv.Atoi(c)
			sig, _ := strconv.Atoi(s)
			pr.mu.Lock()
			pr.code, pr.signal, pr.known = code, syscall.Signal(sig), true
			pr.mu.Unlock()
			select {
			case <-pr.exited:
			default:
				close(pr.exited)
			}
		case "escaped":
			n, _ := strconv.Atoi(rest)
			select {
			case pr.escaped <- n:
			default:
			}
			pr.markEnded()
		}
	}
}

// runProbe runs the behavioural probe in a throwaway sandbox: a
// workspace with a read-only folder and a masked file, and a folder
// outside it.
func (d *Driver) runProbe() Probe {
	dir, err := os.MkdirTemp("", "aibuddy-probe-")
	if err != nil {
		return Probe{Err: unavailable("a temporary folder for the probe", err, "make the temporary folder ($TMPDIR) writable")}
	}
	defer os.RemoveAll(dir)
	ws, outside, tmp := filepath.Join(dir, "ws"), filepath.Join(dir, "outside"), filepath.Join(dir, "tmp")
	ro, secret := filepath.Join(ws, "ro"), filepath.Join(ws, "secret")
	for _, p := range []string{ws, outside, tmp, ro} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return Probe{Err: unavailable("a temporary folder for the probe", err, "make the temporary folder ($TMPDIR) writable")}
		}
	}
	if err := os.WriteFile(secret, []byte("probe\n"), 0o600); err != nil {
		return Probe{Err: unavailable("a temporary folder for the probe", err, "make the temporary folder ($TMPDIR) writable")}
	}
	spec := &confineinit.Spec{Net: string(NetworkOff), Writable: []string{tmp, ws}, ReadOnly: []string{ro}, MaskFiles: []string{secret},
		Dir: ws, Probe: &confineinit.Probe{Outside: outside, Inside: ws, Masked: secret, ReadOnly: ro}}
	pol := &Policy{Mode: WorkspaceWrite, Network: NetworkOff, Workspace: ws}
	pr, err := d.start(context.Background(), pol, spec, nil, nil, nil)
	if err != nil {
		var ue *UnavailableError
		if errors.As(err, &ue) {
			return Probe{Err: ue}
		}
		return Probe{Err: unavailable("the sandbox", err, fixUserns)}
	}
	res := ""
	if ds := pr.Denials(); len(ds) > 0 {
		res = ds[0]
	}
	verdict, rest, _ := strings.Cut(res, " ")
	if verdict != "ok" {
		return Probe{Err: unavailable("a working sandbox", fmt.Errorf("the probe's check failed: %s", rest), "report this kernel; set sandbox.confinement to \"off\" only if you accept unconfined commands")}
	}
	return Probe{LandlockABI: pr.landlockABI, Checks: strings.Split(rest, ",")}
}
