package e2bsandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	procpb "github.com/aibuddy/aibuddy/internal/envdspec/process"
	"github.com/aibuddy/aibuddy/sandbox"
)

// supervisor is the shell script Exec starts (as "setsid /bin/sh -c
// supervisor", or under the spooler when re-attach is on): envd does not
// give a process its own group and signals only its pid, so setsid makes
// a new session and group led by the process envd started (its pid, from
// the start event, is the group id Exec stops with "kill -- -PID"; the
// supervisor reads the group id from /proc and does not count the
// spooler, its parent, as a member). It runs the command with stdin from /dev/null, waits
// for the shell, and when other members of the group still run (holding
// the output open) it waits until the command has run the drain grace in
// all and a quarter of it after the exit, then writes "CODE lingering" to
// the status file and kills the group, itself included; members left that
// do not hold the output are killed the same way after "CODE swept". Linux only
// (/proc). Arguments: command, status file, grace and quarter in
// centiseconds, "env" or "inherit", then the environment.
const supervisor = `cmd=$1 st=$2 g=$3 q=$4 mode=$5
shift 5
tick() { read -r T _ </proc/uptime; T=${T%.*}${T#*.}; T=${T#0}; }
# G: this group's id (the supervisor's pid, or the spooler's that runs it)
pgid() { IFS= read -r l </proc/$$/stat; l=${l##*) }; set -- $l; G=$3; }
pgid
# members [holding]: is another live process in this group (holding the
# output pipes, with "holding")?
members() {
  for f in /proc/[0-9]*/stat; do
    IFS= read -r l 2>/dev/null <"$f" || continue
    p=${l%% *}
    [ "$p" = "$$" ] && continue
    [ "$p" = "$PPID" ] && continue
    l=${l##*) }
    set -- $l
    [ "$3" = "$G" ] || continue
    [ "$1" = Z ] && continue
    [ -z "$holding" ] && return 0
    # (no redirection here: it would change this shell's own fd 2)
    if [ /proc/$p/fd/1 -ef /proc/$$/fd/1 ] || [ /proc/$p/fd/2 -ef /proc/$$/fd/2 ]; then return 0; fi
  done
  return 1
}
tick; s0=$T
# The command's stdin is the supervisor's (envd's pipe when the request
# has Stdin, else the null device), given explicitly: an asynchronous
# list would otherwise get /dev/null.
exec 3<&0
if [ "$mode" = env ]; then
  env -i "$@" /bin/sh -c "$cmd" <&3 3<&- &
else
  /bin/sh -c "$cmd" <&3 3<&- &
fi
exec 3<&-
wait $!; code=$?
holding=1
if members; then
  tick; due=$((s0 + g)); [ $((T + q)) -gt "$due" ] && due=$((T + q))
  while members; do
    tick
    if [ "$T" -ge "$due" ]; then
      printf '%s lingering\n' "$code" >"$st"
      kill -s KILL 0
    fi
    sleep 0.02
  done
fi
holding=
if members; then
  printf '%s swept\n' "$code" >"$st"
  kill -s KILL 0
fi
exit $code
`

// spooler is the shell script that runs the supervisor (as "setsid
// /bin/sh -c spooler") when re-attach is on: it copies the supervisor's
// stdout and stderr both to envd's pipes and to the files out and err in
// the spool folder (through two fifos and two tee processes in sessions
// of their own, so the supervisor's group checks do not count them), and
// exits with the supervisor's status after the copies end. After a
// re-attach (envd's Connect does not replay what the process wrote while
// no stream was attached), Exec reads the rest of the output from these
// files from the byte offsets it had delivered. Arguments: the spool
// folder, then the supervisor's command line.
const spooler = `d=$1; shift
if ! { mkdir -m 700 "$d" && mkfifo "$d/o" "$d/e"; }; then
  echo "aibuddy-exec: cannot make the output spool $d" >&2; exit 125
fi
setsid tee "$d/out" <"$d/o" & a=$!
setsid tee "$d/err" <"$d/e" >&2 & b=$!
"$@" >"$d/o" 2>"$d/e"
c=$?
wait $a $b
exit $c
`

// Exec runs req.Command in the sandbox with /bin/sh -c through envd's
// process.Start (a server stream: a start event with the pid, data events
// with stdout and stderr chunks, keepalives, an end event with the exit
// code), with the contract of localsandbox's Exec:
//
//   - Working directory: req.Dir resolved inside the sandbox (outside the
//     workspace: ErrOutsideWorkspace; missing: ErrNotFound; a file:
//     ErrNotDir); nothing starts then.
//   - The command runs in its own session and process group (setsid),
//     stdin /dev/null (StartRequest.stdin false as well).
//   - Environment: req.Env, when non-nil, is the whole environment (env
//     -i); nil means the sandbox's default environment (envd's, never
//     the host's).
//   - Output chunks go to req.Stdout / req.Stderr as the data events
//     arrive, one at a time; none after Exec returns.
//   - Stopping: at req.Timeout (TimedOut) or when ctx is done
//     (Cancelled), the whole group gets SIGTERM ("kill -s TERM -- -PID"
//     in the sandbox, and SendSignal SIGTERM to the pid), then SIGKILL
//     after Options.KillDelay; cancellation thus reaches the sandbox.
//   - Lingering: descendants holding the output after the shell exits are
//     read until the command has run Options.DrainGrace and a quarter of
//     it after the exit, then the group is killed and Lingering is set.
//     No process of the group outlives the call. Escaped is 0: a
//     descendant that left the group (its own setsid) is not tracked.
//   - Re-attach: a stream that breaks before the end event is re-attached
//     with Process.Connect and the output the command wrote meanwhile is
//     read from the sandbox's spool, so the writers see one continuous
//     output (see the package doc; Options.ReattachRetries,
//     Options.ReattachBackoff). A process that ended and that envd forgot
//     meanwhile: the result (ExitCode -1) and an Execution error saying
//     the exit status is unknown.
//
// ExitCode is the shell's exit status (a shell ended by a signal N shows
// as 128+N, the supervisor's view), -1 when Exec stopped the command.
// Timeouts and cancellation are results; the error is non-nil when
// nothing ran (ctx done first, a bad Dir, envd refusing the start), and,
// with a non-nil result, when the stream broke for good (re-attach off or
// failed, the process unknown to envd, the spool unreadable).
func (s *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (*sandbox.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("e2bsandbox: exec: %w", err)
	}
	dir, err := s.resolve(ctx, sandbox.OpExec, req.Dir, true)
	if err != nil {
		return nil, err
	}
	switch {
	case !dir.exists():
		return nil, &sandbox.PathError{Op: sandbox.OpExec, Path: req.Dir, Err: notFound{}}
	case !dir.isDir():
		return nil, &sandbox.PathError{Op: sandbox.OpExec, Path: req.Dir, Err: sandbox.ErrNotDir}
	}
	id := randHex(8)
	status := "/tmp/aibuddy-exec-" + id + ".status"
	args := []string{"/bin/sh", "-c", supervisor, "aibuddy-exec", req.Command, status,
		strconv.FormatInt(int64(s.opts.DrainGrace/(10*time.Millisecond)), 10),
		strconv.FormatInt(int64(s.opts.DrainGrace/(40*time.Millisecond)), 10)}
	if req.Env != nil {
		args = append(append(args, "env"), req.Env...)
	} else {
		args = append(args, "inherit")
	}
	reattach := s.opts.ReattachRetries > 0
	spool := ""
	if reattach {
		spool = "/tmp/aibuddy-exec-" + id + ".spool"
		args = append([]string{"/bin/sh", "-c", spooler, "aibuddy-spool", spool}, args...)
		defer s.remove(context.WithoutCancel(ctx), spool)
	}
	withStdin := req.Stdin != nil
	cwd := dir.abs
	sreq := connect.NewRequest(&procpb.StartRequest{
		Process: &procpb.ProcessConfig{Cmd: "setsid", Args: args, Cwd: &cwd},
		Tag:     ptr("aibuddy-exec-" + id),
		Stdin:   &withStdin,
	})
	// The streams outlive ctx: after a cancellation Exec still stops the
	// group and reads the end; they are cancelled when Exec returns.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	start := time.Now()
	stream, err := s.proc.Start(sctx, sreq)
	if err != nil {
		return nil, fmt.Errorf("e2bsandbox: Execution: %w", s.rpcErr("Process.Start", err))
	}
	defer stream.Close()

	// One attachment at a time feeds events: the Start stream (gen 0),
	// then each Connect (gen 1, 2, …); events of an older one are
	// dropped.
	events := make(chan event)
	gen := 0
	go pump(sctx, 0, stream.Receive, func() *procpb.ProcessEvent { return stream.Msg().GetEvent() }, stream.Err, events)

	res := &sandbox.ExecResult{ExitCode: -1}
	var pid uint32
	var timeoutC, killC, giveUpC <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	done := ctx.Done()
	stopped := false
	detached := false      // a stream broke and no Connect has given its start event yet
	attempts := 0          // Connect attempts since the last break
	var delivered [2]int64 // stdout, stderr bytes written to req's writers
	reattached := 0
	stop := func(sig procpb.Signal) {
		if pid != 0 {
			s.signalGroup(ctx, pid, sig)
		}
	}
	// begin stops the command; true when Exec is done (it was detached:
	// with no stream to watch the end on, the group is killed at once).
	begin := func() bool {
		stopped = true
		done, timeoutC = nil, nil
		if detached {
			stop(procpb.Signal_SIGNAL_SIGKILL)
			res.Duration = time.Since(start)
			return true
		}
		stop(procpb.Signal_SIGNAL_SIGTERM)
		t := time.NewTimer(s.opts.KillDelay)
		killC = t.C
		return false
	}
	write := func(i int, w io.Writer, b []byte) {
		if w != nil {
			_, _ = w.Write(b)
		}
		delivered[i] += int64(len(b))
	}
	for {
		select {
		case <-done:
			res.Cancelled = true
			if begin() {
				return res, nil
			}
		case <-timeoutC:
			res.TimedOut = true
			if begin() {
				return res, nil
			}
		case <-killC:
			killC = nil
			stop(procpb.Signal_SIGNAL_SIGKILL)
			giveUpC = time.After(s.opts.KillDelay + 5*time.Second)
		case <-giveUpC:
			res.Duration = time.Since(start)
			return res, nil
		case e := <-events:
			if e.gen != gen {
				continue
			}
			if e.err != nil || e.ev == nil {
				res.Duration = time.Since(start)
				if pid == 0 {
					return nil, fmt.Errorf("e2bsandbox: Execution: the start stream ended before the process started: %w", s.rpcErr("Process.Start", orEOF(e.err)))
				}
				if stopped { // stopping already: make sure of it
					s.signalGroup(ctx, pid, procpb.Signal_SIGNAL_SIGKILL)
					return res, nil
				}
				if !reattach {
					s.signalGroup(ctx, pid, procpb.Signal_SIGNAL_SIGKILL)
					return res, fmt.Errorf("e2bsandbox: Execution: the output stream of pid %d broke (%v); re-attach is off (sandbox.e2b.reattachRetries), so the process group was killed; exit status unknown: run the command again", pid, orEOF(e.err))
				}
				if gen > 0 && connect.CodeOf(e.err) == connect.CodeNotFound {
					// The process ended while no stream was attached and
					// envd no longer knows it: its output is in the spool,
					// its exit status is lost.
					out := "its whole output was delivered (from the spool)"
					if cerr := s.catchUp(ctx, spool, delivered, req); cerr != nil {
						out = "its output past the break is missing (" + cerr.Error() + ")"
					}
					return res, fmt.Errorf("e2bsandbox: Execution: the output stream of pid %d broke and the process ended before Exec could re-attach (envd Process.Connect: %v); %s, but its exit status is unknown: check the command's effects or run it again", pid, e.err, out)
				}
				if attempts >= s.opts.ReattachRetries {
					s.signalGroup(ctx, pid, procpb.Signal_SIGNAL_SIGKILL)
					return res, fmt.Errorf("e2bsandbox: Execution: the output stream of pid %d broke and %d re-attach attempts failed (last: %v); the process group was killed; exit status unknown: check the sandbox's network (sandbox.e2b.envdURL), raise sandbox.e2b.reattachRetries, or run the command again", pid, attempts, orEOF(e.err))
				}
				attempts++
				detached = true
				gen++
				go s.reattach(sctx, gen, pid, s.opts.ReattachBackoff<<(attempts-1), events)
				continue
			}
			switch ev := e.ev.GetEvent().(type) {
			case *procpb.ProcessEvent_Start:
				if gen > 0 { // re-attached
					detached, attempts = false, 0
					reattached++
					continue
				}
				pid = ev.Start.GetPid()
				if req.Started != nil {
					req.Started(int(pid))
				}
				if withStdin {
					go s.feedStdin(sctx, pid, req.Stdin)
				}
				if stopped { // stopped before the pid was known
					stop(procpb.Signal_SIGNAL_SIGTERM)
				}
			case *procpb.ProcessEvent_Data:
				if gen > 0 {
					continue // the spool has it, at the right offset
				}
				switch o := ev.Data.GetOutput().(type) {
				case *procpb.ProcessEvent_DataEvent_Stdout:
					write(0, req.Stdout, o.Stdout)
				case *procpb.ProcessEvent_DataEvent_Stderr:
					write(1, req.Stderr, o.Stderr)
				case *procpb.ProcessEvent_DataEvent_Pty:
					write(0, req.Stdout, o.Pty)
				}
			case *procpb.ProcessEvent_End:
				var cerr error
				if gen > 0 {
					cerr = s.catchUp(ctx, spool, delivered, req)
				}
				res.Duration = time.Since(start)
				if stopped {
					return res, nil
				}
				end := ev.End
				if end.GetExited() {
					res.ExitCode = int(end.GetExitCode())
				} else if code, lingering, ok := s.readStatus(ctx, status); ok {
					// Ended by a signal: the supervisor's own kill after a
					// drain grace leaves the status file.
					res.ExitCode, res.Lingering = code, lingering
				}
				if cerr != nil {
					return res, fmt.Errorf("e2bsandbox: Execution: pid %d ended (exit %d) after %d re-attaches, but %v: the output past the break is missing; run the command again for it", pid, res.ExitCode, reattached, cerr)
				}
				return res, nil
			}
		}
	}
}

// event is one event (or the end of a stream, err) of attachment gen.
type event struct {
	gen int
	ev  *procpb.ProcessEvent
	err error
}

// pump forwards a stream's events to out, then its end (err, or
// io.ErrUnexpectedEOF when the stream ended cleanly without an end
// event), until ctx is done.
func pump(ctx context.Context, gen int, receive func() bool, msg func() *procpb.ProcessEvent, errf func() error, out chan<- event) {
	for receive() {
		select {
		case out <- event{gen: gen, ev: msg()}:
		case <-ctx.Done():
			return
		}
	}
	select {
	case out <- event{gen: gen, err: orEOF(errf())}:
	case <-ctx.Done():
	}
}

// reattach waits backoff, then calls envd's Process.Connect for pid and
// forwards its events as attachment gen (its failure as the end of
// that attachment).
func (s *Sandbox) reattach(ctx context.Context, gen int, pid uint32, backoff time.Duration, out chan<- event) {
	t := time.NewTimer(backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return
	}
	stream, err := s.proc.Connect(ctx, connect.NewRequest(&procpb.ConnectRequest{
		Process: &procpb.ProcessSelector{Selector: &procpb.ProcessSelector_Pid{Pid: pid}},
	}))
	if err != nil {
		select {
		case out <- event{gen: gen, err: err}:
		case <-ctx.Done():
		}
		return
	}
	defer stream.Close()
	pump(ctx, gen, stream.Receive, func() *procpb.ProcessEvent { return stream.Msg().GetEvent() }, stream.Err, out)
}

// catchUp writes the output past delivered (stdout, stderr byte counts)
// from the spool files to req's writers, streamed by "tail -c +N" in the
// sandbox.
func (s *Sandbox) catchUp(ctx context.Context, spool string, delivered [2]int64, req sandbox.ExecRequest) error {
	no := false
	stream, err := s.proc.Start(ctx, connect.NewRequest(&procpb.StartRequest{
		Process: &procpb.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", `tail -c +"$1" -- "$3/out" 2>/dev/null && tail -c +"$2" -- "$3/err" >&2 2>/dev/null`, "aibuddy-spool",
			strconv.FormatInt(delivered[0]+1, 10), strconv.FormatInt(delivered[1]+1, 10), spool}},
		Stdin: &no,
	}))
	if err != nil {
		return fmt.Errorf("reading the output spool failed: %w", s.rpcErr("Process.Start", err))
	}
	defer stream.Close()
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().GetEvent().(type) {
		case *procpb.ProcessEvent_Data:
			if b := ev.Data.GetStdout(); len(b) > 0 && req.Stdout != nil {
				_, _ = req.Stdout.Write(b)
			}
			if b := ev.Data.GetStderr(); len(b) > 0 && req.Stderr != nil {
				_, _ = req.Stderr.Write(b)
			}
		case *procpb.ProcessEvent_End:
			if !ev.End.GetExited() || ev.End.GetExitCode() != 0 {
				return fmt.Errorf("reading the output spool %s in the sandbox failed (%s)", spool, ev.End.GetStatus())
			}
			return nil
		}
	}
	return fmt.Errorf("reading the output spool failed: %w", s.rpcErr("Process.Start", orEOF(stream.Err())))
}

func orEOF(err error) error {
	if err == nil {
		return io.ErrUnexpectedEOF
	}
	return err
}

func ptr[T any](v T) *T { return &v }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// signalGroup stops the process group pid leads: SendSignal to the pid
// (the spec's call, which envd sends to that one process) and "kill -s
// SIG -- -PID" for the group, both under a context of their own so a
// cancelled ctx still reaches the sandbox.
func (s *Sandbox) signalGroup(ctx context.Context, pid uint32, sig procpb.Signal) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.KillDelay+10*time.Second)
	defer cancel()
	name := "TERM"
	if sig == procpb.Signal_SIGNAL_SIGKILL {
		name = "KILL"
	}
	_, _ = s.proc.SendSignal(kctx, connect.NewRequest(&procpb.SendSignalRequest{
		Process: &procpb.ProcessSelector{Selector: &procpb.ProcessSelector_Pid{Pid: pid}},
		Signal:  sig,
	}))
	_, _ = s.run(kctx, "/bin/sh", "-c", `kill -s "$1" -- "-$2" 2>/dev/null; exit 0`, "aibuddy-kill", name, strconv.FormatUint(uint64(pid), 10))
}

// run starts a helper process and waits for its end, returning its
// stdout; for small internal commands only.
func (s *Sandbox) run(ctx context.Context, cmd string, args ...string) (string, error) {
	no := false
	stream, err := s.proc.Start(ctx, connect.NewRequest(&procpb.StartRequest{
		Process: &procpb.ProcessConfig{Cmd: cmd, Args: args},
		Stdin:   &no,
	}))
	if err != nil {
		return "", s.rpcErr("Process.Start", err)
	}
	defer stream.Close()
	var out strings.Builder
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().GetEvent().(type) {
		case *procpb.ProcessEvent_Data:
			out.Write(ev.Data.GetStdout())
		case *procpb.ProcessEvent_End:
			if !ev.End.GetExited() || ev.End.GetExitCode() != 0 {
				return out.String(), fmt.Errorf("%s ended: %s", cmd, ev.End.GetStatus())
			}
			return out.String(), nil
		}
	}
	if err := stream.Err(); err != nil {
		return out.String(), s.rpcErr("Process.Start", err)
	}
	return out.String(), errors.New("the stream ended without an end event")
}

// readStatus reads and removes the supervisor's status file.
func (s *Sandbox) readStatus(ctx context.Context, p string) (code int, lingering, ok bool) {
	b, err := s.download(ctx, sandbox.OpExec, p, 64)
	if err != nil {
		return 0, false, false
	}
	s.remove(context.WithoutCancel(ctx), p)
	f := strings.Fields(string(b))
	if len(f) != 2 || (f[1] != "lingering" && f[1] != "swept") {
		return 0, false, false
	}
	code, err = strconv.Atoi(f[0])
	return code, f[1] == "lingering", err == nil
}

// feedStdin copies r to the process's stdin with SendInput, in pieces of
// at most 64 KiB, then closes it with CloseStdin (envd's
// process.Process calls), until r ends, an RPC fails (the process ended)
// or ctx is done (Exec returned). stdin is closed whatever ended the
// copy, so a command reading it sees its end rather than wait.
func (s *Sandbox) feedStdin(ctx context.Context, pid uint32, r io.Reader) {
	sel := &procpb.ProcessSelector{Selector: &procpb.ProcessSelector_Pid{Pid: pid}}
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			in := &procpb.ProcessInput{Input: &procpb.ProcessInput_Stdin{Stdin: append([]byte(nil), buf[:n]...)}}
			if _, serr := s.proc.SendInput(ctx, connect.NewRequest(&procpb.SendInputRequest{Process: sel, Input: in})); serr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_, _ = s.proc.CloseStdin(ctx, connect.NewRequest(&procpb.CloseStdinRequest{Process: sel}))
}
