package confineinit

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Descriptors the init inherits besides stdio.
const (
	CtrlFD     = 3 // SOCK_SEQPACKET to the driver: messages both ways
	SpecFD     = 4 // the Spec as JSON, then EOF
	LandlockFD = 5 // the Landlock ruleset, when Spec.Landlock
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == Arg && os.Getpid() == 1 {
		os.Exit(run())
	}
}

// Syscall numbers of the mount API and Landlock: the same on every
// architecture (allocated after the tables were unified).
const (
	sysOpenTree             = 428
	sysMoveMount            = 429
	sysFsopen               = 430
	sysFsconfig             = 431
	sysFsmount              = 432
	sysMountSetattr         = 442
	sysLandlockRestrictSelf = 446
)

const (
	atEmptyPath        = 0x1000
	atRecursive        = 0x8000
	mountAttrRdonly    = 0x1
	mountAttrNosuid    = 0x2
	mountAttrNodev     = 0x4
	mountAttrNoexec    = 0x8
	openTreeClone      = 0x1
	moveMountFEmpty    = 0x4
	moveMountTSymlinks = 0x10
	fsconfigSetString  = 1
	fsconfigCmdCreate  = 6

	prSetSeccomp         = 22
	prCapbsetDrop        = 24
	prSetSecurebits      = 28
	prSetNoNewPrivs      = 38
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
	seccompModeFilter    = 2
	capVersion3          = 0x20080522

	siocgifflags = 0x8913
	siocsifflags = 0x8914
	iffUp        = 0x1
)

// Secure bits (linux/securebits.h): root is not special, and this cannot
// be undone by the command.
const securebits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7

func run() int {
	send := func(msg string, fds ...int) error {
		var oob []byte
		if len(fds) > 0 {
			oob = syscall.UnixRights(fds...)
		}
		return syscall.Sendmsg(CtrlFD, []byte(msg), oob, nil, 0)
	}
	fail := func(stage string, err error) int {
		_ = send("error " + stage + ": " + err.Error())
		return 125
	}
	raw, err := readAll(SpecFD)
	if err != nil {
		return fail("spec", err)
	}
	syscall.Close(SpecFD)
	s, err := Decode(raw)
	if err != nil {
		return fail("spec", err)
	}

	if err := setupMounts(s); err != nil {
		return fail("mounts", err)
	}
	if s.Net != NetOn {
		if err := loopbackUp(); err != nil {
			return fail("network", wrap("bring up the loopback interface of the network namespace", err))
		}
	}
	if s.Net == NetLimited {
		fds, port, err := egressListeners()
		if err != nil {
			return fail("network", err)
		}
		if err := send("listen "+strconv.Itoa(port), fds...); err != nil {
			return fail("network", err)
		}
		for _, fd := range fds {
			syscall.Close(fd)
		}
		s.Env = proxyEnv(s.Env, port)
	}

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
		pid, probe, err := restrictAndStart(s)
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
	if null, err := syscall.Open("/dev/null", syscall.O_RDWR|syscall.O_CLOEXEC, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = syscall.Dup3(null, fd, 0)
		}
		syscall.Close(null)
	}
	if err := send("started " + strconv.Itoa(r.pid)); err != nil {
		killAll()
		return 125
	}

	msgs := make(chan string)
	go func() {
		buf := make([]byte, 256)
		for {
			n, _, _, _, err := syscall.Recvmsg(CtrlFD, buf, nil, 0)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || n == 0 {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	// Every process of the namespace descends from the init, and orphans
	// are reparented to it: one blocking wait4 loop sees every exit, and
	// ECHILD means none is left.
	type exit struct {
		pid  int
		ws   syscall.WaitStatus
		none bool
	}
	exits := make(chan exit)
	go func() {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				exits <- exit{none: true}
				return
			}
			exits <- exit{pid: pid, ws: ws}
		}
	}()
	for {
		select {
		case e := <-exits:
			if e.none {
				// With no child left, no process is left at all: the
				// sandbox ends now instead of at the driver's kill.
				_ = send("escaped 0")
				return 0
			}
			if e.pid != r.pid {
				continue
			}
			code, sig := e.ws.ExitStatus(), 0
			if e.ws.Signaled() {
				code, sig = -1, int(e.ws.Signal())
			}
			_ = send("exit " + strconv.Itoa(code) + " " + strconv.Itoa(sig))
			if s.ExitWithMain {
				killAll()
				if sig != 0 {
					return 128 + sig
				}
				return code
			}
		case m, ok := <-msgs:
			switch {
			case !ok:
				killAll()
				return 0
			case m == "term":
				_ = syscall.Kill(-1, syscall.SIGTERM)
			case m == "kill":
				n := countEscaped(r.pid)
				killAll()
				_ = send("escaped " + strconv.Itoa(n))
				return 0
			}
		}
	}
}

// readAll reads fd to its end.
func readAll(fd int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

// wrapErr is an error with what was being done.
type wrapErr struct {
	msg string
	err error
}

func (e *wrapErr) Error() string { return e.msg + ": " + e.err.Error() }
func (e *wrapErr) Unwrap() error { return e.err }

func wrap(msg string, err error) error { return &wrapErr{msg, err} }

// killAll sends SIGKILL to every process of the namespace but the init.
func killAll() { _ = syscall.Kill(-1, syscall.SIGKILL) }

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

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func cstr(s string) *byte {
	p, err := syscall.BytePtrFromString(s)
	if err != nil {
		b := byte(0)
		return &b
	}
	return p
}

// mountAttr is struct mount_attr.
type mountAttr struct {
	set, clr, propagation, usernsFD uint64
}

func mountSetattr(dirfd int, path string, flags uintptr, a *mountAttr) error {
	_, _, e := syscall.Syscall6(sysMountSetattr, uintptr(dirfd), uintptr(unsafe.Pointer(cstr(path))), flags,
		uintptr(unsafe.Pointer(a)), unsafe.Sizeof(*a), 0)
	return errnoErr(e)
}

// setupMounts builds the sandbox's view of the filesystem in the new mount
// namespace: everything read-only, the writable roots bound writable, the
// read-only paths bound read-only inside them, the masks, a /proc of this
// PID namespace and a private /dev/shm.
func setupMounts(s *Spec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return wrap("make the mount tree private", err)
	}
	stage, err := stagingMount(s.Net == NetLimited)
	if err != nil {
		return err
	}
	defer syscall.Close(stage)
	if err := mountSetattr(atFDCWD, "/", atRecursive, &mountAttr{set: mountAttrRdonly | mountAttrNosuid}); err != nil {
		return wrap("make the filesystem read-only", err)
	}
	for _, w := range s.Writable {
		if err := syscall.Mount(w, w, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return wrap("bind the writable folder "+w, err)
		}
		clr := &mountAttr{clr: mountAttrRdonly}
		if err := mountSetattr(atFDCWD, w, atRecursive, clr); err != nil {
			// A mount inside it that the host keeps read-only stays so.
			if err := mountSetattr(atFDCWD, w, 0, clr); err != nil {
				return wrap("make "+w+" writable", err)
			}
		}
	}
	for _, r := range s.ReadOnly {
		if err := syscall.Mount(r, r, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			if errors.Is(err, syscall.ENOENT) {
				continue
			}
			return wrap("bind the read-only path "+r, err)
		}
		if err := mountSetattr(atFDCWD, r, atRecursive, &mountAttr{set: mountAttrRdonly}); err != nil {
			return wrap("make "+r+" read-only", err)
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
		if err := syscall.Mount("tmpfs", "/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil {
			return wrap("mount a private /dev/shm", err)
		}
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return wrap("mount /proc for the PID namespace", err)
	}
	if s.Net == NetLimited {
		// Lookups go to the plane's resolver on 127.0.0.1:53.
		if err := bindFrom(stage, "resolv.conf", "/etc/resolv.conf"); err != nil && !errors.Is(err, syscall.ENOENT) {
			return wrap("point /etc/resolv.conf at the plane's resolver", err)
		}
	}
	return nil
}

const atFDCWD = -100

// stagingMount makes a small detached, read-only tmpfs holding the mask
// sources: "empty" (a mode-000 file), "emptydir" (a mode-000 folder) and,
// for the limited network, "resolv.conf". It returns the mount's
// descriptor.
func stagingMount(resolv bool) (int, error) {
	fsfd, _, e := syscall.Syscall(sysFsopen, uintptr(unsafe.Pointer(cstr("tmpfs"))), 1 /* FSOPEN_CLOEXEC */, 0)
	if e != 0 {
		return -1, wrap("tmpfs for masks: fsopen", e)
	}
	defer syscall.Close(int(fsfd))
	for _, kv := range [][2]string{{"size", "64k"}, {"mode", "0755"}} {
		_, _, _ = syscall.Syscall6(sysFsconfig, fsfd, fsconfigSetString, uintptr(unsafe.Pointer(cstr(kv[0]))), uintptr(unsafe.Pointer(cstr(kv[1]))), 0, 0)
	}
	if _, _, e := syscall.Syscall6(sysFsconfig, fsfd, fsconfigCmdCreate, 0, 0, 0, 0); e != 0 {
		return -1, wrap("tmpfs for masks: fsconfig", e)
	}
	m, _, e := syscall.Syscall(sysFsmount, fsfd, 1 /* FSMOUNT_CLOEXEC */, 0)
	if e != 0 {
		return -1, wrap("tmpfs for masks: fsmount", e)
	}
	mfd := int(m)
	fail := func(err error) (int, error) {
		syscall.Close(mfd)
		return -1, wrap("tmpfs for masks", err)
	}
	fd, err := syscall.Openat(mfd, "empty", syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	syscall.Close(fd)
	if err := syscall.Fchmodat(mfd, "empty", 0, 0); err != nil {
		return fail(err)
	}
	if err := syscall.Mkdirat(mfd, "emptydir", 0); err != nil {
		return fail(err)
	}
	if err := syscall.Fchmodat(mfd, "emptydir", 0, 0); err != nil {
		return fail(err)
	}
	if resolv {
		fd, err := syscall.Openat(mfd, "resolv.conf", syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return fail(err)
		}
		_, err = syscall.Write(fd, []byte("# the aibuddy plane's resolver: only sandbox.allowedDomains resolve\nnameserver 127.0.0.1\noptions attempts:1 timeout:2\n"))
		syscall.Close(fd)
		if err != nil {
			return fail(err)
		}
	}
	if err := mountSetattr(mfd, "", atEmptyPath, &mountAttr{set: mountAttrRdonly | mountAttrNosuid | mountAttrNodev | mountAttrNoexec}); err != nil {
		return fail(err)
	}
	return mfd, nil
}

// mask covers target with the empty folder (dir) or file of the staging
// mount. A target that is gone is skipped; one whose kind changed since
// the driver looked is covered with the other kind.
func mask(stage int, target string, dir bool) error {
	src, alt := "empty", "emptydir"
	if dir {
		src, alt = alt, src
	}
	err := bindFrom(stage, src, target)
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
		err = bindFrom(stage, alt, target)
	}
	if err == nil || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ELOOP) {
		return nil
	}
	if errors.Is(err, syscall.EACCES) {
		// The init cannot reach target (a folder on its path is closed to
		// it: another user's 0700 socket folder in /tmp, seen by the
		// driver as real root); the command, which runs with no more
		// rights than the init, cannot reach it either. Skipped only when
		// a plain lookup is refused too.
		var st syscall.Stat_t
		if serr := syscall.Stat(target, &st); errors.Is(serr, syscall.EACCES) {
			return nil
		}
	}
	return wrap("mask "+target, err)
}

// bindFrom mounts a clone of name (in the staging mount) on target,
// following symbolic links in target.
func bindFrom(stage int, name, target string) error {
	t, _, e := syscall.Syscall(sysOpenTree, uintptr(stage), uintptr(unsafe.Pointer(cstr(name))), openTreeClone|syscall.O_CLOEXEC)
	if e != 0 {
		return e
	}
	defer syscall.Close(int(t))
	cwd := atFDCWD
	_, _, e = syscall.Syscall6(sysMoveMount, t, uintptr(unsafe.Pointer(cstr(""))), uintptr(cwd), uintptr(unsafe.Pointer(cstr(target))),
		moveMountFEmpty|moveMountTSymlinks, 0)
	return errnoErr(e)
}

// loopbackUp brings up "lo" in the current network namespace.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr [40]byte // struct ifreq: name[16], then the flags (short)
	copy(ifr[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), siocgifflags, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return e
	}
	flags := *(*uint16)(unsafe.Pointer(&ifr[16])) | iffUp
	*(*uint16)(unsafe.Pointer(&ifr[16])) = flags
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), siocsifflags, uintptr(unsafe.Pointer(&ifr[0])))
	return errnoErr(e)
}

// egressListeners opens, inside this network namespace, the proxy's TCP
// listener on 127.0.0.1 (a free port) and the resolver's UDP and TCP
// sockets on 127.0.0.1:53, for the driver: proxy, resolver (UDP),
// resolver (TCP).
func egressListeners() (fds []int, port int, err error) {
	open := func(typ, port int) (int, error) {
		fd, err := syscall.Socket(syscall.AF_INET, typ|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			syscall.Close(fd)
			return -1, err
		}
		if typ == syscall.SOCK_STREAM {
			if err := syscall.Listen(fd, 128); err != nil {
				syscall.Close(fd)
				return -1, err
			}
		}
		return fd, nil
	}
	pl, err := open(syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, 0, wrap("proxy listener", err)
	}
	sa, err := syscall.Getsockname(pl)
	if err != nil {
		return nil, 0, wrap("proxy listener", err)
	}
	port = sa.(*syscall.SockaddrInet4).Port
	du, err := open(syscall.SOCK_DGRAM, 53)
	if err != nil {
		return nil, 0, wrap("resolver listener (udp)", err)
	}
	dl, err := open(syscall.SOCK_STREAM, 53)
	if err != nil {
		return nil, 0, wrap("resolver listener (tcp)", err)
	}
	return []int{pl, du, dl}, port, nil
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

func prctl(op, a2, a3 uintptr) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, op, a2, a3, 0, 0, 0)
	return errnoErr(e)
}

// restrictAndStart drops every capability of the calling (locked)
// thread, sets no_new_privs, applies Landlock and seccomp to it, and then
// starts the command, or, for a probe, runs the checks. The command
// inherits the thread's restrictions.
func restrictAndStart(s *Spec) (pid int, probe string, err error) {
	if len(s.Filter) == 0 {
		return 0, "", errors.New("seccomp: no filter")
	}
	prog := make([]syscall.SockFilter, len(s.Filter))
	for i, f := range s.Filter {
		prog[i] = syscall.SockFilter{Code: uint16(f[0]), Jt: uint8(f[1]), Jf: uint8(f[2]), K: f[3]}
	}
	if err := dropCaps(); err != nil {
		return 0, "", wrap("drop capabilities", err)
	}
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return 0, "", wrap("no_new_privs", err)
	}
	if s.Landlock {
		_, _, e := syscall.RawSyscall(sysLandlockRestrictSelf, LandlockFD, uintptr(s.LandlockFlags), 0)
		if e != 0 {
			return 0, "", wrap("landlock: restrict", e)
		}
		syscall.Close(LandlockFD)
	}
	if err := installFilter(prog); err != nil {
		return 0, "", err
	}
	if s.Probe != nil {
		return 0, runProbe(s.Probe), nil
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

// installFilter installs the seccomp program on the calling thread, with
// the kernel's default speculation mitigations for filtered tasks (no
// SECCOMP_FILTER_FLAG_SPEC_ALLOW: the sandbox runs untrusted code).
func installFilter(prog []syscall.SockFilter) error {
	fp := syscall.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := prctl(prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&fp))); err != nil {
		return wrap("seccomp: install the filter", err)
	}
	return nil
}

// dropCaps empties the calling thread's capability sets (bounding,
// ambient, inheritable, permitted, effective) and locks the secure bits
// that would give root its capabilities back at execve.
func dropCaps() error {
	if err := prctl(prSetSecurebits, securebits, 0); err != nil {
		return wrap("securebits", err)
	}
	for c := uintptr(0); c < 64; c++ {
		if err := prctl(prCapbsetDrop, c, 0); err != nil {
			if err == syscall.EINVAL {
				break
			}
			return wrap("bounding set", err)
		}
	}
	if err := prctl(prCapAmbient, prCapAmbientClearAll, 0); err != nil {
		return wrap("ambient set", err)
	}
	hdr := struct {
		version uint32
		pid     int32
	}{capVersion3, 0}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	_, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	return errnoErr(e)
}

// runProbe runs the behavioural checks under the restrictions and returns
// "ok <checks>" or "fail <what>".
func runProbe(p *Probe) string {
	create := func(dir string) error {
		name := dir + "/.aibuddy-probe"
		fd, err := syscall.Open(name, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		syscall.Close(fd)
		return syscall.Unlink(name)
	}
	var passed []string
	if err := create(p.Inside); err != nil {
		return "fail creating a file in a writable folder failed: " + err.Error()
	}
	passed = append(passed, "write-inside")
	if err := create(p.Outside); err == nil {
		return "fail a file could be created outside the writable folders"
	} else if !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.EACCES) {
		return "fail creating a file outside gave " + err.Error() + ", not a denial"
	}
	passed = append(passed, "write-outside-denied")
	if err := create(p.ReadOnly); err == nil {
		return "fail a file could be created in a read-only path"
	}
	passed = append(passed, "read-only-path")
	if fd, err := syscall.Open(p.Masked, syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
		syscall.Close(fd)
		return "fail a masked file could be read"
	}
	passed = append(passed, "masked-unreadable")
	if err := syscall.Unshare(syscall.CLONE_NEWUSER); err == nil {
		return "fail a new user namespace could be made inside"
	}
	passed = append(passed, "no-new-namespaces")
	if _, _, e := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_TRACEME, 0, 0); e == 0 {
		return "fail ptrace was allowed"
	}
	passed = append(passed, "no-ptrace")
	return "ok " + strings.Join(passed, ",")
}
