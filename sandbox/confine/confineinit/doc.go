// Package confineinit is the init of a confined command's sandbox (package
// confine): the code that runs as PID 1 of the sandbox's namespaces when
// the driver re-executes the running binary with [Arg]. It imports only the
// standard library, so its init function, which diverts the process into
// the sandbox's init, runs before the packages of the rest of the binary
// initialize: the sandbox's start pays for the Go runtime and a few
// standard packages, not for the whole program. The driver prepares what
// needs libraries (the seccomp program, assembled with go-seccomp-bpf; the
// Landlock ruleset, built with go-landlock and passed as a descriptor), so
// the init only applies it.
//
// Linking the package is enough: nothing needs to be wired into main.
package confineinit
