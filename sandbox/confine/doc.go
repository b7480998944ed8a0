// Package confine holds the operating-system confinement drivers of the
// local sandbox (issue 12; the seed: where an action may take effect "does
// not replace operating-system or sandbox authority"): each driver says
// what it can enforce on this kernel, runs a command under a [Policy], and
// fails closed — a policy it cannot enforce is an error, never a weaker run.
//
// The Linux driver re-executes the running binary as the sandbox's init
// (the hidden first argument [InitArg], dispatched by the init function of
// package confineinit, which imports only the standard library and so runs
// before the rest of the binary initializes; every binary that links this
// package can be the init: the aibuddy program and test binaries alike).
// The driver assembles the seccomp program (go-seccomp-bpf) and builds the
// Landlock ruleset (go-landlock) and hands both to the init, which applies
// them to the command. The init starts in new user,
// mount, PID, IPC and UTS namespaces (and a network namespace unless the
// network is on) and, before it starts the command:
//
//   - remounts the whole tree read-only, then binds the writable roots
//     (the workspace, a private temp folder, sandbox.writablePaths) back
//     writable and the read-only paths inside them (sandbox.readOnlyPaths:
//     .git, .aibuddy) read-only again, so renames, links, symlinks and
//     truncation into them fail like writes (BH-075);
//   - covers every sandbox.denyRead path (credential folders) and every
//     workspace file matching the denied patterns (.env, keys) with an
//     empty, read-only, mode-000 file or folder, and the host's unix
//     sockets under /run and /tmp likewise;
//   - mounts a /proc of its own PID namespace and a private /dev/shm;
//   - brings up the loopback interface of the new network namespace and,
//     with the network limited, hands listeners inside that namespace to
//     the plane's egress proxy and resolver (package egress), which run
//     in the aibuddy process: the only route out;
//   - drops every capability (bounding, ambient, inheritable; securebits
//     locked), sets no_new_privs, applies Landlock (reads and execution
//     everywhere, writes only under the writable roots, no signals or
//     abstract sockets to the outside, no mount topology changes) and a
//     seccomp filter (ptrace, mounts, new namespaces, keyctl, bpf, ...).
//
// The init stays as PID 1: when the call ends, killing it ends every
// process of the command, daemons and setsid escapes included.
package confine
