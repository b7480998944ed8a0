// Command jobs measures a background job that floods its output (case
// BH-089): `yes incoming-line` runs as a job for -seconds, then job_output
// is called twice, 1 s apart, and job_kill once, through the tools of
// package coretools over a local sandbox and a SQLite store in this
// process. It samples this process's resident memory (VmRSS) every 250 ms
// and prints its start, peak and end, the bytes the job produced, kept
// and dropped, the throughput, and the time each job_output took.
//
// Usage (from the repository root):
//
//	go run ./bench/jobs [-seconds 20] [-maxbytes 67108864] [-chars 30000]
//
// Goal (bench/README.md): the peak RSS stays within 64 MiB of the start
// whatever the job prints (memory stays flat: the output goes to the log
// file and the store, never into memory), and the pipe is drained at the
// producer's speed (bytes produced grow through the whole run).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

func main() {
	seconds := flag.Int("seconds", 20, "how long the job floods before the reads")
	maxBytes := flag.Int64("maxbytes", jobs.DefaultMaxOutputBytes, "jobs.maxOutputBytes")
	chars := flag.Int("chars", coretools.DefaultExecMaxOutputChars, "job_output's character cap")
	flag.Parse()
	if err := run(time.Duration(*seconds)*time.Second, *maxBytes, *chars); err != nil {
		fmt.Fprintln(os.Stderr, "bench/jobs:", err)
		os.Exit(1)
	}
}

func run(flood time.Duration, maxBytes int64, chars int) error {
	tmp, err := os.MkdirTemp("", "bench-jobs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		return err
	}
	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true, Confinement: &confine.Settings{Confinement: "off"}})
	if err != nil {
		return err
	}
	defer sb.Close()
	st, err := sqlitestore.Open(filepath.Join(tmp, "records.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := jobs.New(sb, st, &jobs.Options{LogDir: filepath.Join(tmp, "jobs"), MaxOutputBytes: maxBytes})
	if err != nil {
		return err
	}
	defer r.Close()
	tools := map[string]*tool.Tool{}
	env := registry.Env{Sandbox: sb, Services: map[string]any{jobs.Service: r}}
	for _, g := range coretools.Groups(nil, &coretools.ExecuteOptions{MaxOutputChars: chars}) {
		if g.Key != coretools.ExecuteKey && g.Key != coretools.JobsKey {
			continue
		}
		built, err := g.Build(env)
		if err != nil {
			return err
		}
		for _, t := range built {
			tools[t.Name()] = t
		}
	}
	ctx := tool.WithTaskID(context.Background(), "bench")
	call := func(name string, args any) (*tool.Result, time.Duration) {
		in, _ := json.Marshal(args)
		began := time.Now()
		res := tools[name].Call(ctx, &tool.Call{ID: name, Name: name, Input: in})
		return res, time.Since(began)
	}

	start := rss()
	var mu sync.Mutex
	peak := start
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if v := rss(); v > 0 {
					mu.Lock()
					peak = max(peak, v)
					mu.Unlock()
				}
			}
		}
	}()

	res, _ := call("execute", map[string]any{"command": "yes incoming-line", "background": true})
	if res.IsError {
		return fmt.Errorf("execute background: %s", res.AllText())
	}
	id := res.Evidence["job_id"].(string)
	time.Sleep(flood) // the bench's measured interval: the job floods meanwhile
	first, d1 := call("job_output", map[string]any{"job_id": id})
	time.Sleep(time.Second)
	second, d2 := call("job_output", map[string]any{"job_id": id})
	kill, d3 := call("job_kill", map[string]any{"job_id": id})
	close(stop)
	sampler.Wait()
	end := rss()
	if first.IsError || second.IsError || kill.IsError {
		return fmt.Errorf("a call failed:\n%s\n%s\n%s", first.AllText(), second.AllText(), kill.AllText())
	}
	total := kill.Evidence["bytes_total"].(int64)
	fmt.Printf("flood %s: %s bytes produced (%.0f MiB/s), %s kept (jobs.maxOutputBytes %s), %s dropped\n",
		flood, count(total), float64(total)/(1<<20)/(flood+time.Second).Seconds(), count(kill.Evidence["bytes_kept"].(int64)),
		count(maxBytes), count(kill.Evidence["bytes_dropped"].(int64)))
	fmt.Printf("job_output #1: %s new bytes in %s, %s characters shown; #2: %s new bytes in %s; job_kill: %s (%v pids stopped)\n",
		count(first.Evidence["new_bytes"].(int64)), d1.Round(time.Millisecond), count(first.Evidence[tool.EvidenceShownChars].(int64)),
		count(second.Evidence["new_bytes"].(int64)), d2.Round(time.Millisecond), d3.Round(time.Millisecond), kill.Evidence["stopped_pids"])
	fmt.Printf("RSS: start %s KiB, peak %s KiB (+%s KiB), end %s KiB\n", count(start), count(peak), count(peak-start), count(end))
	if peak-start > 64<<10 {
		return fmt.Errorf("peak RSS grew by %s KiB, over the 64 MiB goal", count(peak-start))
	}
	return nil
}

// rss is this process's resident set in KiB (VmRSS), 0 when unknown.
func rss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
