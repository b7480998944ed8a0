package confine

import (
	"fmt"
	"runtime"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox: tracing and reading
// other processes, changing the mount tree, new namespaces, the kernel
// keyring, loading code into the kernel and its tracing facilities, and
// io_uring (whose operations bypass this filter).
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fspick", "fsconfig", "mount_setattr", "chroot",
	"unshare", "setns",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "lookup_dcookie",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"open_by_handle_at", "name_to_handle_at",
}

// nsCloneFlags are the clone flags that make a namespace; clone with any of
// them fails with EPERM.
const nsCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// auditArch is the seccomp_data.arch value of this build's native
// architecture; syscalls of any other (32-bit compat) ABI fail with
// ENOSYS, so the filter cannot be bypassed through them.
func auditArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64, nil
	case "ppc64le":
		return unix.AUDIT_ARCH_PPC64LE, nil
	case "s390x":
		return unix.AUDIT_ARCH_S390X, nil
	}
	return 0, fmt.Errorf("seccomp: no filter for architecture %s", runtime.GOARCH)
}

// buildFilter assembles the sandbox's seccomp program: EPERM for
// deniedSyscalls and for clone with namespace flags, ENOSYS for clone3
// (its flags are behind a pointer the filter cannot read; libc falls back
// to clone) and for every foreign-ABI syscall, allow otherwise.
func buildFilter() ([][4]uint32, error) {
	arch, err := auditArch()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range deniedSyscalls {
		if knownSyscall(n) {
			names = append(names, n)
		}
	}
	pol := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM), Names: names},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM), NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: []seccomp.Condition{{Argument: cloneFlagsArg(), Operation: seccomp.BitsSet, Value: nsCloneFlags}}},
			}},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}
	insts, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	// The library lets foreign architectures through; refuse them first.
	pre := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
	raw, err := bpf.Assemble(append(pre, insts...))
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	out := make([][4]uint32, len(raw))
	for i, r := range raw {
		out[i] = [4]uint32{uint32(r.Op), uint32(r.Jt), uint32(r.Jf), r.K}
	}
	return out, nil
}

// knownSyscall reports whether the seccomp library knows n on this
// architecture (names it does not know would fail Assemble).
func knownSyscall(n string) bool {
	p := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{{Action: seccomp.ActionAllow, Names: []string{n}}}}
	_, err := p.Assemble()
	return err == nil
}

// cloneFlagsArg is the argument of clone(2) that holds the flags: the
// first everywhere except s390x, where it is the second.
func cloneFlagsArg() uint32 {
	if runtime.GOARCH == "s390x" {
		return 1
	}
	return 0
}

// landlockRuleset builds, with go-landlock, the ruleset the init enforces
// on the command: reading and executing anywhere, writing only under
// writable and to the usual device files, no signals or abstract unix
// sockets to processes outside the domain. The paths are opened here; the
// rules hold on their inodes, the same in the sandbox's mount namespace.
// fd is -1 when the kernel has no Landlock (abi 0).
func landlockRuleset(writable []string) (fd int, flags uint32, abi int, err error) {
	abi, err = ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return -1, 0, 0, nil
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
	fd, flags, err = cfg.NewRulesetFD(rules...)
	if err != nil {
		return -1, 0, abi, fmt.Errorf("landlock: %w", err)
	}
	return fd, flags, abi, nil
}

// filter returns the seccomp program, assembled once per driver.
func (d *Driver) filter() ([][4]uint32, error) {
	d.filterOnce.Do(func() { d.filterProg, d.filterErr = buildFilter() })
	return d.filterProg, d.filterErr
}
