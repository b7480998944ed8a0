// Command execute measures the execute tool's cost on a flood of output:
// the wall time of a command printing 1 GiB through the tool (live events
// off, projection on) against the same command piped to cat > /dev/null,
// and this process's peak RSS.
//
// Usage:
//
//	go run ./bench/execute [-bytes 1073741824] [-runs 3] [-events] [-outdir DIR]
//
// Goal (bench/README.md): ratio <= 1.3 and peak RSS < 64 MiB.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

func main() {
	size := flag.Int64("bytes", 1<<30, "bytes the command prints")
	runs := flag.Int("runs", 3, "runs of each; the median is reported")
	events := flag.Bool("events", false, "also emit every chunk as a client event (to a discarding sink)")
	outdir := flag.String("outdir", "", "keep the full output in this directory (ExecuteOptions.OutputDir)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the tool runs to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}

	gen := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' 'a' | fold -w 100", *size)
	ws, err := os.MkdirTemp("", "bench-execute-")
	check(err)
	defer os.RemoveAll(ws)
	sb, err := localsandbox.New(ws, nil)
	check(err)
	defer sb.Close()
	t := coretools.Execute(sb, &coretools.ExecuteOptions{OutputDir: *outdir})
	input, _ := json.Marshal(map[string]any{"command": gen, "timeout_ms": 600000})

	var sink func(tool.Event)
	if *events {
		sink = func(tool.Event) {}
	}
	var base, ours []time.Duration
	var last *tool.Result
	for range *runs {
		start := time.Now()
		cmd := exec.Command("/bin/sh", "-c", gen+" | cat > /dev/null")
		check(cmd.Run())
		base = append(base, time.Since(start))

		start = time.Now()
		last = t.Call(context.Background(), &tool.Call{ID: "bench", Input: input, Events: sink})
		ours = append(ours, time.Since(start))
		if last.IsError {
			fmt.Fprintln(os.Stderr, last.AllText()[:min(500, len(last.AllText()))])
			os.Exit(1)
		}
		runtime.GC()
	}
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	b, o := median(base), median(ours)
	fmt.Printf("command:        %s\n", gen)
	fmt.Printf("baseline (| cat > /dev/null): %v (runs %v)\n", b.Round(time.Millisecond), round(base))
	fmt.Printf("execute tool:                 %v (runs %v)\n", o.Round(time.Millisecond), round(ours))
	fmt.Printf("ratio:          %.2f (goal <= 1.3)\n", float64(o)/float64(b))
	fmt.Printf("peak RSS:       %.1f MiB (goal < 64 MiB)\n", float64(ru.Maxrss)/1024) // Linux: KiB
	fmt.Printf("our CPU:        user %v, sys %v over %d tool runs\n",
		time.Duration(ru.Utime.Nano()).Round(time.Millisecond), time.Duration(ru.Stime.Nano()).Round(time.Millisecond), *runs)
	fmt.Printf("evidence:       output_chars=%v output_lines=%v shown_chars=%v\n",
		last.Evidence["output_chars"], last.Evidence["output_lines"], last.Evidence["shown_chars"])
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func round(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
