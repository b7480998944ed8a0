//go:build unix

package localsandbox

// KillMarked sends SIGKILL to every process of this user whose environment
// holds marker (a "KEY=VALUE" entry the caller put in ExecRequest.Env, which
// every descendant inherits unless it clears its environment) and reports
// how many it killed. It reads /proc/<pid>/environ, so it finds processes
// on Linux only (elsewhere it kills none and returns 0). Package jobs uses
// it to end what is left of a background job whose aibuddy process died
// while it ran: without the OS confinement (whose init dies with aibuddy
// and takes the command with it) the job's process group outlives it.
func (s *Sandbox) KillMarked(marker string) int { return sweepMarked(marker, 0) }
