//go:build unix

package localsandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

// readChunk is the size of one read from an output pipe (bytes).
const readChunk = 64 << 10

// finalDrain bounds how long reading continues after the group got SIGKILL
// at the end, so output already in the pipes is not lost.
const finalDrain = 250 * time.Millisecond

// drainSettleMax bounds how long reading may go on past the drain grace
// when no process of the command is left and the pipes still yield
// output: what the shell wrote before it exited (up to the 1 MiB pipe
// buffers), read by a reader the machine's load slowed down.
const drainSettleMax = 10 * time.Second

func (s *Sandbox) run(ctx context.Context, req sandbox.ExecRequest, spec runSpec) (*sandbox.ExecResult, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("localsandbox: exec: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("localsandbox: exec: %w", err)
	}
	defer outR.Close()
	defer errR.Close()
	growPipe(outW)
	growPipe(errW)

	trace := func(what string, at, due time.Time) {
		if s.trace != nil {
			s.trace(execTrace{what: what, at: at, due: due})
		}
	}
	feed, err := feedStdin(req.Stdin, &spec)
	if err != nil {
		return nil, err
	}
	defer feed()
	start := time.Now()
	proc, err := s.startProc(ctx, req, spec, outW, errW)
	outW.Close()
	errW.Close()
	if spec.stdin != nil {
		spec.stdin.Close() // the command holds its own copy
	}
	if err != nil {
		return nil, err
	}
	trace("start", start, time.Time{})
	if req.Started != nil {
		req.Started(proc.pid())
	}
	stderr := req.Stderr
	var kept *denialLines
	if s.conf.on() {
		kept = &denialLines{}
		stderr = teeWriter{req.Stderr, kept}
	}

	var mu sync.Mutex // serializes writes to req.Stdout and req.Stderr
	var readers sync.WaitGroup
	readers.Add(2)
	ord := newStreamOrder(outR)
	var nread atomic.Int64 // bytes both pumps have read
	go pump(outR, req.Stdout, &mu, &readers, ord, false, &nread)
	go pump(errR, stderr, &mu, &readers, ord, true, &nread)
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()

	exited := proc.exited()
	res := &sandbox.ExecResult{}
	var timeoutC, killC, graceC <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	ctxDone := ctx.Done()
	exitedC, drainedC := (<-chan struct{})(exited), (<-chan struct{})(drained)
	stopping, shellDone, outputDone, killed := false, false, false, false
	var graceT *time.Timer
	var settleUntil time.Time // when reading past the grace must end
	var readAtGrace int64
	goneC, gone := proc.gone(), false
	stop := func() {
		timeoutC, ctxDone = nil, nil
		if stopping {
			return
		}
		stopping = true
		proc.terminate()
		t := time.NewTimer(spec.killDelay)
		killC = t.C
		now := time.Now()
		trace("kill-armed", now, now.Add(spec.killDelay))
	}
	for !(shellDone && (outputDone || killed)) {
		select {
		case <-exitedC:
			exitedC, shellDone = nil, true
			now := time.Now()
			trace("exited", now, time.Time{})
			if !outputDone && !stopping { // when stopping, killC decides
				// The grace runs from the start, not from the exit: a
				// background writer does not add DrainGrace to a
				// foreground that ran longer (BH-021). A forwarder still
				// gets DrainGrace/4 after the exit.
				due := start.Add(spec.drainGrace)
				if settle := now.Add(spec.drainGrace / 4); settle.After(due) {
					due = settle
				}
				what := "drain-armed"
				if gone { // nothing is left to hold the pipes: read them to the end
					settleUntil, due, what = now.Add(drainSettleMax), now.Add(drainSettleMax), "drain-settling"
				}
				graceT = time.NewTimer(due.Sub(now))
				defer graceT.Stop()
				graceC = graceT.C
				readAtGrace = nread.Load()
				trace(what, now, due)
			}
		case <-goneC:
			goneC, gone = nil, true
			if graceC != nil && !outputDone && settleUntil.IsZero() {
				// Every process of the command has ended while the grace
				// ran: nothing can write any more, and what is in the
				// pipes is read to the end (bounded).
				now := time.Now()
				settleUntil = now.Add(drainSettleMax)
				graceT.Reset(drainSettleMax)
				graceC = graceT.C
				trace("drain-settling", now, settleUntil)
			}
		case <-drainedC:
			drainedC, outputDone = nil, true
			trace("drained", time.Now(), time.Time{})
		case <-timeoutC:
			res.TimedOut = true
			stop()
		case <-ctxDone:
			res.Cancelled = true
			stop()
		case <-killC:
			killC = nil
			trace("kill-fired", time.Now(), time.Time{})
			proc.kill()
			killed = true
			if shellDone && !outputDone {
				res.Lingering = true
			}
		case <-graceC:
			graceC = nil
			now := time.Now()
			// Nothing of the command is left to hold the pipes, and they
			// still hold output (or gave some since the last look): it is
			// what the command wrote before it ended, read by a reader
			// the machine's load slowed down; reading goes on, looked at
			// again every DrainGrace/4, bounded by drainSettleMax.
			if settleUntil.IsZero() {
				settleUntil = now.Add(drainSettleMax)
			}
			n := nread.Load()
			if !gone && now.Before(settleUntil) && (n > readAtGrace || buffered(outR) > 0 || buffered(errR) > 0) && !proc.left() {
				readAtGrace = n
				d := max(spec.drainGrace/4, 10*time.Millisecond)
				graceT.Reset(d)
				graceC = graceT.C
				trace("drain-settling", now, now.Add(d))
				continue
			}
			trace("drain-fired", now, time.Time{})
			proc.kill()
			killed = true
			if !outputDone {
				res.Lingering = true
			}
		}
	}
	// Nothing of the command outlives the call, output holders or not.
	res.Escaped = proc.finish()
	if !outputDone {
		// Take what the killed processes left in the pipes, then stop
		// reading: a process outside the group may still hold them open.
		select {
		case <-drained:
		case <-time.After(finalDrain):
		}
		now := time.Now()
		outR.SetReadDeadline(now)
		errR.SetReadDeadline(now)
		<-drained
	}
	code, werr := proc.wait()
	res.Duration = time.Since(start)
	trace("returned", start.Add(res.Duration), time.Time{})
	res.ExitCode = code
	if s.conf.on() {
		res.Denied = s.conf.denied(proc, kept)
	}
	if werr != nil {
		return res, fmt.Errorf("localsandbox: exec: wait: %w", werr)
	}
	return res, nil
}

// buffered reports the bytes waiting in the pipe f (0 when unknown).
func buffered(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	return pipeBuffered(rc)
}

// feedStdin starts copying r into a pipe whose read end becomes
// spec.stdin (nothing when r is nil). The returned stop closes the write
// end and waits for the copy: called when the command has ended, it
// never blocks for long (the readers are gone, so a write fails at once).
func feedStdin(r io.Reader, spec *runSpec) (stop func(), err error) {
	if r == nil {
		return func() {}, nil
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("localsandbox: exec: stdin: %w", err)
	}
	spec.stdin = inR
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(inW, r) // EPIPE when the command stops reading: its choice
		inW.Close()
	}()
	return func() { inW.Close(); <-done }, nil
}

// execProc is a started command as the stop mechanism of run sees it:
// the shell run directly in its own session (plainProc), or under the OS
// confinement (confinedProc, Linux).
type execProc interface {
	// exited is closed when the shell has exited.
	exited() <-chan struct{}
	// terminate sends SIGTERM to every process of the command.
	terminate()
	// kill sends SIGKILL to every process of the command.
	kill()
	// finish kills whatever is left of the command and reports how many
	// descendants had left its process group.
	finish() (escaped int)
	// wait reaps the command: the shell's exit code (-1 for a signal).
	wait() (int, error)
	// pid is the process id ExecRequest.Started reports.
	pid() int
	// left reports whether a process of the command may still be
	// running besides the exited shell (true when it cannot tell).
	left() bool
	// gone is closed when no process of the command is left (nil when
	// that is not observed as an event).
	gone() <-chan struct{}
}

// plainProc is the shell run directly, in its own session (setsid), so
// its process group id is its pid.
type plainProc struct {
	cmd     *exec.Cmd
	pgid    int
	marker  string
	done    chan struct{}
	reaped  bool
	waitErr error
}

func (s *Sandbox) startPlain(req sandbox.ExecRequest, spec runSpec, outW, errW *os.File) (*plainProc, error) {
	cmd := exec.Command(s.opts.Shell, "-c", req.Command)
	cmd.Dir = spec.dir
	// The marker lets the end of the call find descendants that left the
	// process group (setsid) but kept the environment.
	marker := execMarkerKey + "=" + newExecID()
	cmd.Env = append(append(make([]string, 0, len(spec.env)+1), spec.env...), marker)
	cmd.Stdin = nil // the null device
	if spec.stdin != nil {
		cmd.Stdin = spec.stdin
	}
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localsandbox: exec: start %s: %w", s.opts.Shell, err)
	}
	p := &plainProc{cmd: cmd, pgid: cmd.Process.Pid, marker: marker, done: make(chan struct{})}
	// The shell is observed exiting without being reaped where the platform
	// allows (waitid WNOWAIT): its pid, which is the group id, cannot be
	// reused before the final group kill.
	go func() {
		if !waitExited(cmd.Process.Pid) {
			p.reaped, p.waitErr = true, cmd.Wait()
		}
		close(p.done)
	}()
	return p, nil
}

func (p *plainProc) exited() <-chan struct{} { return p.done }
func (p *plainProc) pid() int                { return p.pgid }
func (p *plainProc) terminate()              { killGroup(p.pgid, syscall.SIGTERM) }
func (p *plainProc) kill()                   { killGroup(p.pgid, syscall.SIGKILL) }
func (p *plainProc) left() bool              { return markedAlive(p.marker, p.pgid) }
func (p *plainProc) gone() <-chan struct{}   { return nil }

// finish kills the group, and then a descendant that left the group but
// kept the marker.
func (p *plainProc) finish() int {
	killGroup(p.pgid, syscall.SIGKILL)
	return sweepMarked(p.marker, p.pgid)
}

func (p *plainProc) wait() (int, error) {
	<-p.done
	err := p.waitErr
	if !p.reaped {
		err = p.cmd.Wait()
	}
	if p.cmd.ProcessState != nil {
		return p.cmd.ProcessState.ExitCode(), nil
	}
	return -1, err
}

// pump copies r to w chunk by chunk until EOF or a read error (including
// the read deadline set to stop it). After a write error it keeps reading
// and discards, so the writer side never blocks on a full pipe.
func pump(r *os.File, w io.Writer, mu *sync.Mutex, wg *sync.WaitGroup, ord *streamOrder, isStderr bool, nread *atomic.Int64) {
	defer wg.Done()
	buf := make([]byte, readChunk)
	read := r.Read
	if !isStderr {
		read = ord.readStdout(r)
	}
	for {
		n, err := read(buf)
		if n > 0 {
			nread.Add(int64(n))
			if isStderr {
				ord.waitStdout()
			}
			if w != nil {
				mu.Lock()
				_, werr := w.Write(buf[:n])
				mu.Unlock()
				if werr != nil {
					w = nil
				}
			}
			if !isStderr {
				ord.inflight.Store(false)
				select {
				case ord.delivered <- struct{}{}:
				default:
				}
			}
		}
		if err != nil {
			return
		}
		if n >= coalesceMin && n < len(buf) {
			// A flood drained the pipe: let it refill a little rather
			// than wake for every small write of the producer.
			time.Sleep(coalesceDelay)
		}
	}
}

// readStdout returns a read function for stdout that marks the data in
// flight before the read(2) that takes it out of the pipe, so there is no
// moment when stdout data is neither in the pipe nor marked: a stderr chunk
// read later always sees it (waitStdout).
func (o *streamOrder) readStdout(r *os.File) func([]byte) (int, error) {
	rc, err := r.SyscallConn()
	if err != nil {
		return r.Read
	}
	return func(p []byte) (int, error) {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			o.inflight.Store(true)
			n, rerr = syscall.Read(int(fd), p)
			if rerr == syscall.EAGAIN {
				o.inflight.Store(false)
				return false // wait for data
			}
			if rerr == syscall.EINTR {
				o.inflight.Store(false)
				return false
			}
			if n <= 0 {
				o.inflight.Store(false)
			}
			return true
		})
		if err != nil {
			o.inflight.Store(false)
			return 0, err
		}
		if rerr != nil {
			return 0, rerr
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// A read of at least coalesceMin bytes that still emptied the pipe is
// followed by a pause of coalesceDelay, so a fast producer's output is
// read in large chunks (fewer wake-ups) at a cost of at most that delay to
// the live stream. The 1 MiB pipe buffer absorbs the producer meanwhile.
const (
	coalesceMin   = 4096
	coalesceDelay = time.Millisecond
)

// orderWait bounds how long a stderr chunk waits for stdout data that is
// already waiting in its pipe.
const orderWait = 100 * time.Millisecond

// streamOrder keeps stdout before stderr when both have data waiting. Two
// pipes carry no arrival order, and the reader goroutines wake in any
// order; the common shape "print, then fail with a message on stderr" is
// kept in order by letting stdout data already in its pipe (or read and
// not yet delivered) go first, for at most orderWait per stderr chunk.
type streamOrder struct {
	out       syscall.RawConn // stdout's read end, for the buffered byte count
	inflight  atomic.Bool     // stdout has read a chunk not yet delivered
	delivered chan struct{}   // stdout delivered a chunk (capacity 1)
}

func newStreamOrder(out *os.File) *streamOrder {
	o := &streamOrder{delivered: make(chan struct{}, 1)}
	if rc, err := out.SyscallConn(); err == nil {
		o.out = rc
	}
	return o
}

func (o *streamOrder) waitStdout() {
	if o.out == nil {
		return
	}
	deadline := time.Now().Add(orderWait)
	// The pipe is asked first: an empty pipe then in-flight false means
	// stdout's data, if any, was delivered. The other order misses a chunk
	// read between the two checks (inflight still false when asked, the pipe
	// already empty when asked next).
	for pipeBuffered(o.out) > 0 || o.inflight.Load() {
		d := time.Until(deadline)
		if d <= 0 {
			return
		}
		t := time.NewTimer(min(d, time.Millisecond))
		select {
		case <-o.delivered:
		case <-t.C:
		}
		t.Stop()
	}
}

// killGroup sends sig to every process in the group pgid. A group that no
// longer exists is not an error.
func killGroup(pgid int, sig syscall.Signal) {
	if pgid <= 1 {
		return
	}
	// ESRCH (the group is gone) and EPERM (a member changed credentials)
	// leave nothing more to do.
	_ = syscall.Kill(-pgid, sig)
}
