package localsandbox

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// gatedWriter counts what it is given; its first Write blocks until gate
// is closed, so the reader falls behind the command on purpose.
type gatedWriter struct {
	gate <-chan struct{}
	n    atomic.Int64
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	<-w.gate
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// Output a command wrote before it ended is read to its end even when the
// reader is still behind when the drain grace runs out: with no process of
// the command left, nothing can hold the pipes open, so the grace does not
// cut them. (CI under load lost 600 KB of execute's 4.3 MB
// TestExecuteBH047TrueTotals output this way: up to the 1 MiB pipe buffer
// was still unread 250 ms after the shell's exit.) The reader here is held
// until Exec's trace shows the grace's end: reading on ("drain-settling")
// or the old cut ("drain-fired").
func TestExecReadsWhatTheEndedCommandLeftInThePipe(t *testing.T) {
	if !pipeGrows(t) {
		t.Skip("the pipe buffer cannot be raised to 1 MiB here (fs.pipe-max-size)")
	}
	const size = 800_000
	for _, tc := range []struct {
		name string
		opts *Options
	}{
		{"default", nil},
		{"confinement off", &Options{Confinement: &confine.Settings{Confinement: "off"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{}
			if tc.opts != nil {
				opts = *tc.opts
			}
			opts.DrainGrace = 2 * time.Second
			sb, _ := newExecSandbox(t, &opts)
			gate := make(chan struct{})
			var once sync.Once
			var steps []string
			sb.trace = func(e execTrace) { // Exec's own goroutine only
				steps = append(steps, e.what)
				if e.what == "drain-settling" || e.what == "drain-fired" {
					once.Do(func() { close(gate) })
				}
			}
			w := &gatedWriter{gate: gate}
			res, err := sb.Exec(context.Background(), sandbox.ExecRequest{
				Command: "head -c " + strconv.Itoa(size) + " /dev/zero | tr '\\0' x", Stdout: w, Timeout: hangBound})
			once.Do(func() { close(gate) })
			if err != nil || res.ExitCode != 0 || res.TimedOut {
				t.Fatalf("res %+v err %v", res, err)
			}
			got := strings.Join(steps, " ")
			if w.n.Load() != size || res.Lingering || !strings.Contains(got, "drain-settling") || strings.Contains(got, "drain-fired") {
				t.Errorf("read %d of %d bytes, lingering %v, steps %q: want all of it, read on past the grace", w.n.Load(), size, res.Lingering, got)
			}
		})
	}
}

// With a background writer still running, the grace still ends reading
// (the pipes are not waited on forever), the command's writer is killed
// and Lingering says so: the settle applies only when nothing is left.
func TestExecDrainGraceStillCutsALiveWriter(t *testing.T) {
	sb, _ := newExecSandbox(t, &Options{DrainGrace: 300 * time.Millisecond})
	var steps []string
	sb.trace = func(e execTrace) { steps = append(steps, e.what) }
	r := runExec(t, context.Background(), sb, sandbox.ExecRequest{Command: "(while :; do echo tick; done) &"})
	if r.err != nil || !r.res.Lingering || !strings.Contains(r.out, "tick") {
		t.Fatalf("res %+v err %v", r.res, r.err)
	}
	if got := strings.Join(steps, " "); strings.Contains(got, "drain-settling") || !strings.Contains(got, "drain-fired") {
		t.Errorf("steps %q: a live writer's output is cut at the grace", got)
	}
}

// pipeGrows reports whether growPipe raises a new pipe to 1 MiB here.
func pipeGrows(t *testing.T) bool {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(w)
	const fGetPipeSz = 1032
	n, _, e := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), fGetPipeSz, 0)
	return e == 0 && n >= 1<<20
}
