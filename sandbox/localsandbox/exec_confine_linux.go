package localsandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// startProc starts the command: under the confinement when it is on,
// else directly.
func (s *Sandbox) startProc(ctx context.Context, req sandbox.ExecRequest, spec runSpec, outW, errW *os.File) (execProc, error) {
	if !s.conf.on() {
		return s.startPlain(req, spec, outW, errW)
	}
	shell, err := exec.LookPath(s.opts.Shell)
	if err != nil {
		return nil, fmt.Errorf("localsandbox: exec: start %s: %w", s.opts.Shell, err)
	}
	tmp, err := s.conf.tempDir()
	if err != nil {
		return nil, err
	}
	p, err := s.conf.driver.Start(ctx, s.conf.policy, &confine.Command{
		Path: shell, Args: []string{s.opts.Shell, "-c", req.Command}, Dir: spec.dir, Env: spec.env,
		Stdin: spec.stdin, Stdout: outW, Stderr: errW, TempDir: tmp, Deny: s.conf.deny, Sockets: s.conf.socks,
	})
	if err != nil {
		return nil, fmt.Errorf("localsandbox: exec: %w: %w", sandbox.ErrConfinement, err)
	}
	return &confinedProc{p: p}, nil
}

// confinedProc is the shell run under the confinement: PID 1 of its
// namespace is the sandbox's init, and killing it ends every process of
// the command.
type confinedProc struct {
	p       *confine.Process
	once    sync.Once
	escaped int
}

func (c *confinedProc) exited() <-chan struct{} { return c.p.Exited() }
func (c *confinedProc) pid() int                { return c.p.Pid() }
func (c *confinedProc) terminate()              { c.p.Terminate() }
func (c *confinedProc) kill()                   { c.once.Do(func() { c.escaped = c.p.Kill() }) }

func (c *confinedProc) gone() <-chan struct{} { return c.p.Ended() }

// left: the init reports as soon as no process is left in its PID
// namespace; until then one may be.
func (c *confinedProc) left() bool {
	select {
	case <-c.p.Ended():
		return false
	default:
		return true
	}
}
func (c *confinedProc) finish() int       { c.kill(); return c.escaped }
func (c *confinedProc) denials() []string { return c.p.Denials() }

func (c *confinedProc) wait() (int, error) {
	_ = c.p.Wait()
	code, sig, ok := c.p.ExitStatus()
	if !ok || sig != 0 {
		return -1, nil
	}
	return code, nil
}
