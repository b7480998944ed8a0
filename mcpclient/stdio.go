package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// ring keeps the last max bytes written to it. It never blocks and never
// fails, so a chatty stderr can always be drained (BH-042).
type ring struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64
}

func newRing(max int) *ring { return &ring{max: max} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total += int64(len(p))
	if len(p) >= r.max {
		r.buf = append(r.buf[:0], p[len(p)-r.max:]...)
		return len(p), nil
	}
	if over := len(r.buf) + len(p) - r.max; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	r.buf = append(r.buf, p...)
	return len(p), nil
}

// String returns the kept bytes, starting at a line boundary when the ring
// has dropped older bytes.
func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buf
	if r.total > int64(len(b)) {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Total is the number of bytes ever written.
func (r *ring) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// proc is one stdio server process. We start it ourselves, rather than with
// mcp.CommandTransport, to own three things the SDK leaves to us: stderr is
// drained by our goroutine into a ring (BH-042), the exit is noticed the
// moment it happens (BH-041 "die"), and teardown reaches the whole process
// group (a shell wrapper's children included).
type proc struct {
	name   string
	cmd    *exec.Cmd        // the server (unconfined), or nil
	cp     *confine.Process // the server's sandbox (confined), or nil
	tmpDir string           // the confined server's private temp folder
	stdin  *os.File         // our write end of the server's stdin
	stdout *os.File         // our read end of the server's stdout
	stderr *os.File         // our read end of the server's stderr

	errTail *ring // last StderrTailBytes of stderr
	outTail *ring // last bytes read from stdout, for "garbage on stdout" reasons

	exited  chan struct{} // closed when the process has been reaped
	waitErr error         // set before exited is closed
	drained chan struct{} // closed when stderr reached EOF

	initialized atomic.Bool // set after a successful handshake: Close is graceful only then
	signalled   atomic.Bool // set when shutdown sends SIGTERM or SIGKILL
	grace       time.Duration
	closeOnce   sync.Once

	// filter, when set before the transport is used, rewrites each line
	// of stdout (one JSON-RPC message) before the SDK reads it.
	filter func(line []byte) []byte
}

// startProc starts sc's command with the inherit variables of the host
// environment (nil: DefaultInheritEnv) plus sc.Env, in its own process
// group.
//
// Confined (pc has a policy), the server runs under the confinement with
// a private temp folder, and its sandbox ends when it exits; a policy
// that cannot be enforced is the error.
func startProc(sc ServerConfig, inherit []string, tailBytes int, grace time.Duration, pc procConfinement) (*proc, error) {
	if pc.err != nil {
		return nil, fmt.Errorf("confinement: %w", pc.err)
	}
	if pc.policy != nil {
		if err := pc.driver.Check(pc.policy); err != nil {
			return nil, fmt.Errorf("not started: %w", err)
		}
	}
	p := &proc{
		name:    sc.Name,
		errTail: newRing(tailBytes),
		outTail: newRing(512),
		exited:  make(chan struct{}),
		drained: make(chan struct{}),
		grace:   grace,
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd := exec.Command(sc.Command, sc.Args...)
	cmd.Dir = sc.Cwd
	if inherit == nil {
		inherit = DefaultInheritEnv
	}
	var host []string
	for _, k := range inherit {
		if v, ok := os.LookupEnv(k); ok {
			host = append(host, k+"="+v)
		}
	}
	cmd.Env = mergeEnv(host, sc.Env)
	if pc.policy != nil {
		if err := p.startConfined(sc, cmd, pc, inR, outW, errW); err != nil {
			closeAll(inR, inW, outR, outW, errR, errW)
			return nil, err
		}
		closeAll(inR, outW, errW)
		p.stdin, p.stdout, p.stderr = inW, outR, errR
		go func() {
			defer close(p.drained)
			_, _ = io.Copy(p.errTail, errR)
		}()
		go func() {
			p.waitErr = p.cp.Wait()
			if code, sig, ok := p.cp.ExitStatus(); ok && (code != 0 || sig != 0) {
				p.waitErr = &confinedExit{code: code, sig: sig}
			}
			close(p.exited)
		}()
		return p, nil
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("cannot start %q: %w", sc.Command, err)
	}
	closeAll(inR, outW, errW) // the child holds its own copies
	p.cmd, p.stdin, p.stdout, p.stderr = cmd, inW, outR, errR
	go func() {
		defer close(p.drained)
		_, _ = io.Copy(p.errTail, errR)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// mergeEnv returns host with the entries of extra added or replaced.
func mergeEnv(host []string, extra map[string]string) []string {
	out := make([]string, 0, len(host)+len(extra))
	for _, kv := range host {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := extra[k]; over {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

// transport is the mcp.Transport over the process's pipes.
// maxLine bounds one line the SDK reads; the connection's frame filter
// has already replaced or dropped a longer one.
func (p *proc) transport(maxLine int) mcp.Transport {
	return &mcp.IOTransport{
		Reader:        newProcReader(p),
		Writer:        procWriter{p},
		MaxLineLength: maxLine,
	}
}

// procReader hands the server's stdout to the SDK one line (one JSON-RPC
// message) at a time, each through the proc's filter first, and keeps the
// tail of what it read for "garbage on stdout" reasons.
type procReader struct {
	p *proc
	lineReader
}

func newProcReader(p *proc) *procReader {
	r := &procReader{p: p}
	r.lineReader = lineReader{in: bufio.NewReaderSize(p.stdout, 64<<10), f: func(line []byte) []byte {
		_, _ = p.outTail.Write(line)
		return p.rewrite(line)
	}}
	return r
}

// Close is a no-op: the connection is closed by closing stdin (procWriter),
// and stdout is closed by shutdown once the process is gone.
func (*procReader) Close() error { return nil }

// lineReader reads in line by line and returns each line as f rewrites it
// (nil: the line is dropped).
type lineReader struct {
	in      *bufio.Reader
	f       func(line []byte) []byte
	pending []byte // rest of the current line, not yet read
	line    []byte // reused buffer for a line longer than in's buffer
	err     error  // from in, returned once pending is drained
}

func (r *lineReader) Read(b []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		chunk, err := r.in.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			r.line = append(r.line[:0], chunk...)
			for err == bufio.ErrBufferFull {
				chunk, err = r.in.ReadSlice('\n')
				r.line = append(r.line, chunk...)
			}
			chunk = r.line
		}
		r.err = err
		if len(chunk) > 0 {
			r.pending = r.f(chunk)
		}
	}
	n := copy(b, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// rewrite applies the proc's line filter (set by the connection), if any.
func (p *proc) rewrite(line []byte) []byte {
	if p.filter == nil {
		return line
	}
	return p.filter(line)
}

type procWriter struct{ p *proc }

func (w procWriter) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }
func (w procWriter) Close() error                { w.p.shutdown(); return nil }

// hasExited reports whether the process has been reaped within d.
func (p *proc) hasExited(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-p.exited:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// shutdown ends the process as the MCP spec's stdio shutdown asks (basic
// protocol, "Lifecycle: Shutdown"): close stdin, wait up to grace for it to
// exit, SIGTERM its process group, wait a second, SIGKILL. A server that
// never completed the handshake gets no grace. Every wait is bounded; it is
// safe to call more than once.
func (p *proc) shutdown() {
	p.closeOnce.Do(func() {
		_ = p.stdin.Close()
		grace := p.grace
		if !p.initialized.Load() {
			grace = 0
		}
		if !p.hasExited(grace) {
			p.signalled.Store(true)
			p.signalGroup(syscall.SIGTERM)
			if !p.hasExited(time.Second) {
				p.signalGroup(syscall.SIGKILL)
				p.hasExited(2 * time.Second)
			}
		}
		// Children that outlive the server and keep its stderr open are
		// stopped too, so the drain ends.
		select {
		case <-p.drained:
		case <-time.After(200 * time.Millisecond):
			p.signalGroup(syscall.SIGKILL)
			select {
			case <-p.drained:
			case <-time.After(time.Second):
			}
		}
		_ = p.stdout.Close() // unblocks the SDK's reader goroutine
		_ = p.stderr.Close()
		if p.tmpDir != "" {
			_ = os.RemoveAll(p.tmpDir)
		}
	})
}

// signalGroup sends sig to every process of the server: its process
// group, or, confined, its whole sandbox (SIGKILL ends the sandbox).
func (p *proc) signalGroup(sig syscall.Signal) {
	if p.cp != nil {
		if sig == syscall.SIGKILL {
			p.cp.Kill()
		} else {
			p.cp.Terminate()
		}
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// startConfined starts the server of cmd (its resolved command line and
// environment) under pc's policy.
func (p *proc) startConfined(sc ServerConfig, cmd *exec.Cmd, pc procConfinement, in, out, errw *os.File) error {
	if cmd.Err != nil {
		return fmt.Errorf("cannot start %q: %w", sc.Command, cmd.Err)
	}
	path, err := filepath.Abs(cmd.Path)
	if err != nil {
		return fmt.Errorf("cannot start %q: %w", sc.Command, err)
	}
	dir := sc.Cwd
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return fmt.Errorf("cannot start %q: %w", sc.Command, err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return fmt.Errorf("cannot start %q: %w", sc.Command, err)
	}
	tmp, err := os.MkdirTemp("", "aibuddy-mcp-tmp-")
	if err != nil {
		return fmt.Errorf("cannot start %q: the private temp folder: %w", sc.Command, err)
	}
	cp, err := pc.driver.Start(context.Background(), pc.policy, &confine.Command{
		Path: path, Args: cmd.Args, Dir: dir, Env: cmd.Env, Stdin: in, Stdout: out, Stderr: errw,
		TempDir: tmp, ExitWithMain: true,
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("cannot start %q confined (%s): %w", sc.Command, pc.policy.Mode, err)
	}
	p.cp, p.tmpDir = cp, tmp
	return nil
}

// confinedExit is how a confined server ended: the status its sandbox's
// init reported.
type confinedExit struct {
	code int
	sig  syscall.Signal
}

func (e *confinedExit) Error() string {
	if e.sig != 0 {
		return "signal: " + e.sig.String()
	}
	return fmt.Sprintf("exit status %d", e.code)
}

// selfExit reports whether the reaped process ended on its own: with an
// exit status, or by a signal we did not send.
func (p *proc) selfExit() bool {
	var ce *confinedExit
	if errors.As(p.waitErr, &ce) {
		return ce.sig == 0 || !p.signalled.Load()
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return !p.signalled.Load()
		}
	}
	return true
}

// exitReason describes how the process ended: "exited with status 3",
// "killed by signal terminated".
func (p *proc) exitReason() string {
	var ce *confinedExit
	if errors.As(p.waitErr, &ce) {
		if ce.sig != 0 {
			return "killed by signal " + ce.sig.String()
		}
		return fmt.Sprintf("exited with status %d", ce.code)
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if p.waitErr != nil {
		return "ended: " + p.waitErr.Error()
	}
	return "exited with status 0"
}

// stderrLines returns the last few lines of the stderr tail for an error
// message (at most ~500 bytes); StderrTail carries the whole ring.
func (p *proc) stderrLines() string {
	// The drain may lag the exit by a moment.
	select {
	case <-p.drained:
	case <-time.After(100 * time.Millisecond):
	}
	return lastLines(p.errTail.String(), 5, 500)
}

func lastLines(s string, n, max int) string {
	s = strings.TrimSpace(s)
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s = strings.Join(lines, " | ")
	if len(s) > max {
		s = "…" + strings.ToValidUTF8(s[len(s)-max:], "")
	}
	return s
}

// garbage returns the first line of recent stdout that is not JSON, if any:
// the evidence for "answers garbage" (issue 5).
func (p *proc) garbage() string {
	for _, line := range strings.Split(p.outTail.String(), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !json.Valid([]byte(line)) {
			if len(line) > 120 {
				line = line[:120] + "…"
			}
			return line
		}
	}
	return ""
}
