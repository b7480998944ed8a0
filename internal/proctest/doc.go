// Package proctest is the tests' view of a command's processes on Linux,
// from /proc: which are alive, and a wait, on kernel events, for them to
// be gone.
//
// A test identifies the processes of a command by the line [TreeLine]
// prints inside it: the shell's pid ($$, its process group id) and its PID
// namespace. Confined (localsandbox's default), the command has a PID
// namespace of its own and the namespace identifies every process of it;
// unconfined, the process group does. [Live] lists the live processes of
// such a [Tree] (zombies count as gone: a host whose PID 1 does not reap
// orphans keeps them), [WaitGone] waits until none is left, bounded, on
// pidfds (pidfd_open(2): readable when the process ends) rather than by
// sleeping and looking again, and [Children] lists a process's live
// children.
//
// It is shared by the tests of sandbox/localsandbox, coretools, agent and
// cmd/aibuddy, which assert that no process of a command outlives its
// call. Linux only (it reads /proc and uses pidfds, Linux 5.3 or newer).
package proctest
