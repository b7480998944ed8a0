//go:build !linux

package confine

import (
	"context"
	"errors"
	"runtime"
	"syscall"
)

// Process is a command running confined (Linux only).
type Process struct{}

func (p *Process) Pid() int                                            { return 0 }
func (p *Process) Exited() <-chan struct{}                             { return nil }
func (p *Process) Done() <-chan struct{}                               { return nil }
func (p *Process) ExitStatus() (code int, sig syscall.Signal, ok bool) { return -1, 0, false }
func (p *Process) Denials() []string                                   { return nil }
func (p *Process) Terminate()                                          {}
func (p *Process) Kill() int                                           { return 0 }
func (p *Process) Wait() error                                         { return nil }

// SocketScanner returns a scanner of unix sockets (for Command.Sockets).
func SocketScanner() *Scanner { return nil }

func (d *Driver) runProbe() Probe {
	return Probe{Err: &UnavailableError{Piece: "a confinement driver", Cause: "none exists for " + runtime.GOOS,
		Fix: "set sandbox.confinement to \"off\" to run commands unconfined"}}
}

// Start fails: there is no driver on this system.
func (d *Driver) Start(ctx context.Context, p *Policy, c *Command) (*Process, error) {
	if err := d.Check(p); err != nil {
		return nil, err
	}
	return nil, errors.New("confine: Start with mode off: run the command directly")
}
