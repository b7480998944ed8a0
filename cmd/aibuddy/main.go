// Command aibuddy is the tool plane for LLM agents on the command line: it
// serves built-in tools to MCP hosts (aibuddy mcp), runs single tool calls
// (aibuddy call) and explains the effective tool set (aibuddy tools).
//
// Profiling (hidden, for bench/): with $AIBUDDY_CPUPROFILE set to a file
// path the whole process is CPU-profiled into it (pprof format, written
// when the command returns); $AIBUDDY_MEMPROFILE likewise writes an
// allocation profile (every allocation sampled, so slower) at the end.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/aibuddy/aibuddy/internal/cli"
)

func main() {
	// SIGINT (Ctrl-C) and SIGTERM cancel the command with cli.Stopped as
	// the cause: calls in flight are stopped, records kept, and the exit
	// code is 128 + the signal (130 for Ctrl-C). Later signals are
	// absorbed while the command winds down (bounded by its own waits).
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		sig, _ := s.(syscall.Signal)
		cancel(cli.Stopped{Signal: sig})
	}()
	stop := profile()
	code := cli.Main(ctx, os.Args[1:], cli.Options{})
	cancel(nil)
	stop()
	os.Exit(code)
}

// profile starts the profiles $AIBUDDY_CPUPROFILE and $AIBUDDY_MEMPROFILE
// ask for and returns what writes them; a profile that cannot be made is
// skipped with a note on stderr.
func profile() (stop func()) {
	cpu, mem := os.Getenv("AIBUDDY_CPUPROFILE"), os.Getenv("AIBUDDY_MEMPROFILE")
	var cf *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			os.Stderr.WriteString("aibuddy: AIBUDDY_CPUPROFILE: " + err.Error() + "\n")
		} else {
			cf = f
		}
	}
	if mem != "" {
		runtime.MemProfileRate = 1
	}
	return func() {
		if cf != nil {
			pprof.StopCPUProfile()
			_ = cf.Close()
		}
		if mem != "" {
			if f, err := os.Create(mem); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				_ = f.Close()
			}
		}
	}
}
