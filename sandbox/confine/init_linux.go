package confine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// InitArg is the first argument with which the driver re-executes the
// running binary as the sandbox's init. This package's init function
// recognizes it (only in a process that is PID 1 of its namespace) and
// runs the init instead of the program, so any binary linking the package
// can serve: nothing needs to be wired into main.
const InitArg = "__aibuddy-confine-init"

// Descriptors the init inherits besides stdio.
const (
	initCtrlFD = 3 // SOCK_SEQPACKET to the driver: messages both ways
	initSpecFD = 4 // the initSpec as JSON, then EOF
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == InitArg && os.Getpid() == 1 {
		os.Exit(runInit())
	}
}

// initSpec is what the driver tells the init to set up and run.
type initSpec struct {
	Net          Network  `json:"net"`
	Writable     []string `json:"writable,omitempty"` // bound read-write (absolute)
	ReadOnly     []string `json:"readOnly,omitempty"` // inside writable roots, bound read-only again
	MaskDirs     []string `json:"maskDirs,omitempty"`
	MaskFiles    []string `json:"maskFiles,omitempty"`
	Dir          string   `json:"dir"`
	Path         string   `json:"path"`
	Args         []string `json:"args"`
	Env          []string `json:"env"`
	ExitWithMain bool     `json:"exitWithMain,omitempty"`
	// Probe, when set, runs the behavioural checks instead of a command.
	Probe *probeSpec `json:"probe,omitempty"`
}

// probeSpec names the paths the probe's checks use.
type probeSpec struct {
	Outside  string `json:"outside"`  // a folder outside the writable roots: creating a file there must fail
	Inside   string `json:"inside"`   // a writable root: creating a file there must work
	Masked   string `json:"masked"`   // a file in MaskFiles: reading it must fail
	ReadOnly string `json:"readOnly"` // a folder in ReadOnly: creating a file there must fail
}

// Secure bits (linux/securebits.h): root is not special, and this cannot
// be undone by the command.
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
)

func runInit() int {
	ctrlFile := os.NewFile(initCtrlFD, "confine-control")
	specFile := os.NewFile(initSpecFD, "confine-spec")
	if ctrlFile == nil || specFile == nil {
		return 125
	}
	c, err := net.FileConn(ctrlFile)
	_ = ctrlFile.Close()
	if err != nil {
		return 125
	}
	ctrl := c.(*net.UnixConn)
	send := func(msg string, files ...*os.File) error {
		var oob []byte
		if len(files) > 0 {
			fds := make([]int, len(files))
			for i, f := range files {
				fds[i] = int(f.Fd())
			}
			oob = unix.UnixRights(fds...)
		}
		_, _, err := ctrl.WriteMsgUnix([]byte(msg), oob, nil)
		return err
	}
	fail := func(stage string, err error) int {
		_ = send("error " + stage + ": " + err.Error())
		return 125
	}
	var s initSpec
	if err := json.NewDecoder(specFile).Decode(&s); err != nil {
		return fail("spec", err)
	}
	_ = specFile.Close()

	if err := setupMounts(&s); err != nil {
		return fail("mounts", err)
	}
	if s.Net != NetworkOn {
		if err := loopbackUp(); err != nil {
			return fail("network", fmt.Errorf("bring up the loopback interface of the network namespace: %w", err))
		}
	}
	if s.Net == NetworkLimited {
		files, port, err := egressListeners()
		if err != nil {
			return fail("network", err)
		}
		if err := send("listen "+strconv.Itoa(port), files...); err != nil {
			return fail("network", err)
		}
		for _, f := range files {
			_ = f.Close()
		}
		s.Env = proxyEnv(s.Env, port)
	}

	sigc := make(chan os.Signal, 64)
	signal.Notify(sigc, syscall.SIGCHLD)
	type startResult struct {
		pid   int
		probe string
		err   error
	}
	res := make(chan startResult, 1)
	go func() {
		// The restrictions below apply to this thread only, and the
		// command inherits them from it. The goroutine returns locked,
		// so the restricted thread ends with it.
		runtime.LockOSThread()
		pid, probe, err := restrictAndStart(&s)
		res <- startResult{pid, probe, err}
	}()
	r := <-res
	if r.err != nil {
		return fail("start", r.err)
	}
	if s.Probe != nil {
		_ = send("probe " + r.probe)
		return 0
	}
	// The init keeps no copy of the command's stdio: the driver sees the
	// end of output when the command's processes close theirs.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = unix.Dup3(int(null.Fd()), fd, 0)
		}
		_ = null.Close()
	}
	if err := send("started " + strconv.Itoa(r.pid)); err != nil {
		killAll()
		return 125
	}

	msgs := make(chan string)
	go func() {
		buf := make([]byte, 256)
		for {
			n, _, _, _, err := ctrl.ReadMsgUnix(buf, nil)
			if err != nil || n == 0 {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	mainDone := false
	reap := func() (exit bool, code int) {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if pid <= 0 {
				return false, 0
			}
			if pid == r.pid && !mainDone {
				mainDone = true
				code, sig := ws.ExitStatus(), 0
				if ws.Signaled() {
					code, sig = -1, int(ws.Signal())
				}
				_ = send(fmt.Sprintf("exit %d %d", code, sig))
				if s.ExitWithMain {
					if sig != 0 {
						return true, 128 + sig
					}
					return true, code
				}
			}
		}
	}
	for {
		select {
		case <-sigc:
			if exit, code := reap(); exit {
				killAll()
				return code
			}
		case m, ok := <-msgs:
			switch {
			case !ok:
				killAll()
				return 0
			case m == "term":
				_ = unix.Kill(-1, unix.SIGTERM)
			case m == "kill":
				n := countEscaped(r.pid)
				killAll()
				_ = send("escaped " + strconv.Itoa(n))
				return 0
			}
		}
	}
}

// killAll sends SIGKILL to every process of the namespace but the init.
func killAll() { _ = unix.Kill(-1, unix.SIGKILL) }

// countEscaped counts the processes of the namespace, other than the init,
// that are not in the main command's process group (setsid, daemons),
// from this namespace's /proc.
func countEscaped(mainPid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g != mainPid {
			n++
		}
	}
	return n
}

// setupMounts builds the sandbox's view of the filesystem in the new mount
// namespace: everything read-only, the writable roots bound writable, the
// read-only paths bound read-only inside them, the masks, a /proc of this
// PID namespace and a private /dev/shm.
func setupMounts(s *initSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mount tree private: %w", err)
	}
	stage, err := stagingMount(s.Net == NetworkLimited)
	if err != nil {
		return err
	}
	defer unix.Close(stage)
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID}); err != nil {
		return fmt.Errorf("make the filesystem read-only: %w", err)
	}
	for _, w := range s.Writable {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind the writable folder %s: %w", w, err)
		}
		clr := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, w, unix.AT_RECURSIVE, clr); err != nil {
			// A mount inside it that the host keeps read-only stays so.
			if err := unix.MountSetattr(unix.AT_FDCWD, w, 0, clr); err != nil {
				return fmt.Errorf("make %s writable: %w", w, err)
			}
		}
	}
	for _, r := range s.ReadOnly {
		if err := unix.Mount(r, r, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("bind the read-only path %s: %w", r, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, r, unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("make %s read-only: %w", r, err)
		}
	}
	for _, d := range s.MaskDirs {
		if err := mask(stage, d, true); err != nil {
			return err
		}
	}
	for _, f := range s.MaskFiles {
		if err := mask(stage, f, false); err != nil {
			return err
		}
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount a private /dev/shm: %w", err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc for the PID namespace: %w", err)
	}
	if s.Net == NetworkLimited {
		// Lookups go to the plane's resolver on 127.0.0.1:53.
		if err := bindFrom(stage, "resolv.conf", "/etc/resolv.conf"); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("point /etc/resolv.conf at the plane's resolver: %w", err)
		}
	}
	return nil
}

// stagingMount makes a small detached, read-only tmpfs holding the mask
// sources: "empty" (a mode-000 file), "emptydir" (a mode-000 folder) and,
// for the limited network, "resolv.conf". It returns the mount's
// descriptor.
func stagingMount(resolv bool) (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("tmpfs for masks: %w", err)
	}
	defer unix.Close(fsfd)
	_ = unix.FsconfigSetString(fsfd, "size", "64k")
	_ = unix.FsconfigSetString(fsfd, "mode", "0755")
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("tmpfs for masks: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("tmpfs for masks: %w", err)
	}
	fail := func(err error) (int, error) {
		unix.Close(mfd)
		return -1, fmt.Errorf("tmpfs for masks: %w", err)
	}
	fd, err := unix.Openat(mfd, "empty", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	unix.Close(fd)
	if err := unix.Fchmodat(mfd, "empty", 0, 0); err != nil {
		return fail(err)
	}
	if err := unix.Mkdirat(mfd, "emptydir", 0); err != nil {
		return fail(err)
	}
	if err := unix.Fchmodat(mfd, "emptydir", 0, 0); err != nil {
		return fail(err)
	}
	if resolv {
		fd, err := unix.Openat(mfd, "resolv.conf", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return fail(err)
		}
		_, err = unix.Write(fd, []byte("# the aibuddy plane's resolver: only sandbox.allowedDomains resolve\nnameserver 127.0.0.1\noptions attempts:1 timeout:2\n"))
		unix.Close(fd)
		if err != nil {
			return fail(err)
		}
	}
	if err := unix.MountSetattr(mfd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{
		Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}); err != nil {
		return fail(err)
	}
	return mfd, nil
}

// mask covers target with the empty folder (dir) or file of the staging
// mount. A target that is gone is skipped; one whose kind changed since
// the driver looked is covered with the other kind.
func mask(stage int, target string, dir bool) error {
	src := "empty"
	if dir {
		src = "emptydir"
	}
	err := bindFrom(stage, src, target)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EISDIR) {
		alt := "emptydir"
		if dir {
			alt = "empty"
		}
		err = bindFrom(stage, alt, target)
	}
	if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	return fmt.Errorf("mask %s: %w", target, err)
}

// bindFrom mounts a clone of name (in the staging mount) on target,
// following symbolic links in target.
func bindFrom(stage int, name, target string) error {
	t, err := unix.OpenTree(stage, name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return unix.MoveMount(t, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_SYMLINKS)
}

// loopbackUp brings up "lo" in the current network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// egressListeners opens, inside this network namespace, the proxy's TCP
// listener on 127.0.0.1 (a free port) and the resolver's UDP and TCP
// sockets on 127.0.0.1:53, as files for the driver.
func egressListeners() ([]*os.File, int, error) {
	pl, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, 0, fmt.Errorf("proxy listener: %w", err)
	}
	port := pl.Addr().(*net.TCPAddr).Port
	dl, err := net.Listen("tcp4", "127.0.0.1:53")
	if err != nil {
		return nil, 0, fmt.Errorf("resolver listener (tcp): %w", err)
	}
	du, err := net.ListenPacket("udp4", "127.0.0.1:53")
	if err != nil {
		return nil, 0, fmt.Errorf("resolver listener (udp): %w", err)
	}
	var files []*os.File
	for _, x := range []interface{ File() (*os.File, error) }{pl.(*net.TCPListener), du.(*net.UDPConn), dl.(*net.TCPListener)} {
		f, err := x.File()
		if err != nil {
			return nil, 0, err
		}
		files = append(files, f)
	}
	_ = pl.Close()
	_ = dl.Close()
	_ = du.Close()
	return files, port, nil
}

// proxyEnv points the command's proxy variables at the plane's proxy and
// removes NO_PROXY, which would send names around it (BH-083).
func proxyEnv(env []string, port int) []string {
	proxy := "http://127.0.0.1:" + strconv.Itoa(port)
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		out = append(out, kv)
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		out = append(out, k+"="+proxy)
	}
	return out
}

// restrictAndStart drops every capability of the calling (locked)
// thread, sets no_new_privs, applies Landlock and seccomp to it, and then
// starts the command, or, for a probe, runs the checks. The command
// inherits the thread's restrictions.
func restrictAndStart(s *initSpec) (pid int, probe string, err error) {
	prog, err := buildFilter()
	if err != nil {
		return 0, "", err
	}
	if err := dropCaps(); err != nil {
		return 0, "", fmt.Errorf("drop capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, "", fmt.Errorf("no_new_privs: %w", err)
	}
	abi, err := applyLandlock(s.Writable)
	if err != nil {
		return 0, "", fmt.Errorf("landlock: %w", err)
	}
	if err := installFilter(prog); err != nil {
		return 0, "", err
	}
	if s.Probe != nil {
		return 0, runProbe(s.Probe, abi), nil
	}
	p, err := os.StartProcess(s.Path, s.Args, &os.ProcAttr{
		Dir: s.Dir, Env: s.Env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return 0, "", err
	}
	pid = p.Pid
	_ = p.Release()
	return pid, "", nil
}

// dropCaps empties the calling thread's capability sets (bounding,
// ambient, inheritable, permitted, effective) and locks the secure bits
// that would give root its capabilities back at execve.
func dropCaps() error {
	bits := secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if err == unix.EINVAL {
				break
			}
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// applyLandlock restricts the calling thread: reading and executing
// anywhere, writing only under writable and to the usual device files, no
// signals or abstract unix sockets to processes outside the domain. It
// returns the ABI enforced (0: Landlock is not available, nothing done).
func applyLandlock(writable []string) (int, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, nil
	}
	cfg := landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS, Scoped: landlock.V7.Scoped}.BestEffort()
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx").WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts", "/dev/shm").WithIoctlDev().IgnoreIfMissing(),
	}
	if len(writable) > 0 {
		rules = append(rules, landlock.RWDirs(writable...).WithRefer())
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return 0, err
	}
	if fd < 0 {
		return 0, nil
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return 0, err
	}
	return abi, nil
}

// runProbe runs the behavioural checks under the restrictions and returns
// "ok <landlock-abi> <checks>" or "fail <what>".
func runProbe(p *probeSpec, abi int) string {
	create := func(dir string) error {
		name := dir + "/.aibuddy-probe"
		fd, err := unix.Open(name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		unix.Close(fd)
		return unix.Unlink(name)
	}
	var passed []string
	if err := create(p.Inside); err != nil {
		return "fail creating a file in a writable folder failed: " + err.Error()
	}
	passed = append(passed, "write-inside")
	if err := create(p.Outside); err == nil {
		return "fail a file could be created outside the writable folders"
	} else if !errors.Is(err, unix.EROFS) && !errors.Is(err, unix.EACCES) {
		return "fail creating a file outside gave " + err.Error() + ", not a denial"
	}
	passed = append(passed, "write-outside-denied")
	if err := create(p.ReadOnly); err == nil {
		return "fail a file could be created in a read-only path"
	}
	passed = append(passed, "read-only-path")
	if fd, err := unix.Open(p.Masked, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		return "fail a masked file could be read"
	}
	passed = append(passed, "masked-unreadable")
	if err := unix.Unshare(unix.CLONE_NEWUSER); err == nil {
		return "fail a new user namespace could be made inside"
	}
	passed = append(passed, "no-new-namespaces")
	if _, _, e := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0); e == 0 {
		return "fail ptrace was allowed"
	}
	passed = append(passed, "no-ptrace")
	return fmt.Sprintf("ok %d %s", abi, strings.Join(passed, ","))
}
