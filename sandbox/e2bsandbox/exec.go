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
// supervisor"): envd does not give a process its own group and signals
// only its pid, so the supervisor is the leader of a new session and
// group (its pid, from the start event, is the group id Exec stops with
// "kill -- -PID"). It runs the command with stdin from /dev/null, waits
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
# members [holding]: is another live process in this group (holding the
# output pipes, with "holding")?
members() {
  for f in /proc/[0-9]*/stat; do
    IFS= read -r l 2>/dev/null <"$f" || continue
    p=${l%% *}
    [ "$p" = "$$" ] && continue
    l=${l##*) }
    set -- $l
    [ "$3" = "$$" ] || continue
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
//
// ExitCode is the shell's exit status (a shell ended by a signal N shows
// as 128+N, the supervisor's view), -1 when Exec stopped the command.
// Timeouts and cancellation are results; the error is non-nil only when
// nothing ran (ctx done first, a bad Dir, envd refusing the start).
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
	withStdin := req.Stdin != nil
	cwd := dir.abs
	sreq := connect.NewRequest(&procpb.StartRequest{
		Process: &procpb.ProcessConfig{Cmd: "setsid", Args: args, Cwd: &cwd},
		Tag:     ptr("aibuddy-exec-" + id),
		Stdin:   &withStdin,
	})
	// The stream outlives ctx: after a cancellation Exec still stops the
	// group and reads the end; it is cancelled when Exec returns.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	start := time.Now()
	stream, err := s.proc.Start(sctx, sreq)
	if err != nil {
		return nil, fmt.Errorf("e2bsandbox: Execution: %w", s.rpcErr("Process.Start", err))
	}
	defer stream.Close()

	type event struct {
		ev  *procpb.ProcessEvent
		err error
	}
	events := make(chan event)
	go func() {
		defer close(events)
		for stream.Receive() {
			select {
			case events <- event{ev: stream.Msg().GetEvent()}:
			case <-sctx.Done():
				return
			}
		}
		select {
		case events <- event{err: stream.Err()}:
		case <-sctx.Done():
		}
	}()

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
	stop := func(sig procpb.Signal) {
		if pid != 0 {
			s.signalGroup(ctx, pid, sig)
		}
	}
	begin := func() {
		stopped = true
		done, timeoutC = nil, nil
		stop(procpb.Signal_SIGNAL_SIGTERM)
		t := time.NewTimer(s.opts.KillDelay)
		killC = t.C
	}
	write := func(w io.Writer, b []byte) {
		if w != nil {
			_, _ = w.Write(b)
		}
	}
	for {
		select {
		case <-done:
			res.Cancelled = true
			begin()
		case <-timeoutC:
			res.TimedOut = true
			begin()
		case <-killC:
			killC = nil
			stop(procpb.Signal_SIGNAL_SIGKILL)
			giveUpC = time.After(s.opts.KillDelay + 5*time.Second)
		case <-giveUpC:
			res.Duration = time.Since(start)
			return res, nil
		case e, ok := <-events:
			if !ok {
				res.Duration = time.Since(start)
				return res, nil
			}
			if e.err != nil || e.ev == nil {
				res.Duration = time.Since(start)
				if pid == 0 {
					return nil, fmt.Errorf("e2bsandbox: Execution: the start stream ended before the process started: %w", s.rpcErr("Process.Start", orEOF(e.err)))
				}
				if !stopped { // the stream broke: the command may still run
					s.signalGroup(ctx, pid, procpb.Signal_SIGNAL_SIGKILL)
					return res, fmt.Errorf("e2bsandbox: Execution: the output stream of pid %d broke (%v); the process group was killed", pid, orEOF(e.err))
				}
				return res, nil
			}
			switch ev := e.ev.GetEvent().(type) {
			case *procpb.ProcessEvent_Start:
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
				switch o := ev.Data.GetOutput().(type) {
				case *procpb.ProcessEvent_DataEvent_Stdout:
					write(req.Stdout, o.Stdout)
				case *procpb.ProcessEvent_DataEvent_Stderr:
					write(req.Stderr, o.Stderr)
				case *procpb.ProcessEvent_DataEvent_Pty:
					write(req.Stdout, o.Pty)
				}
			case *procpb.ProcessEvent_End:
				res.Duration = time.Since(start)
				if stopped {
					return res, nil
				}
				end := ev.End
				if end.GetExited() {
					res.ExitCode = int(end.GetExitCode())
					return res, nil
				}
				// Ended by a signal: the supervisor's own kill after a
				// drain grace leaves the status file.
				if code, lingering, ok := s.readStatus(ctx, status); ok {
					res.ExitCode, res.Lingering = code, lingering
				}
				return res, nil
			}
		}
	}
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
