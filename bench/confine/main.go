// Command confine measures what the OS confinement of execute costs, side
// by side with sandbox.confinement "off", through the execute tool in this
// process (coretools.Execute on a local sandbox):
//
// The two sides alternate call by call (after one warm-up call each).
//
//   - start-up: the median wall time of `true` over -runs calls per side
//     (goal: confined adds at most 10 ms);
//   - a flood: `cat` of a -bytes file of 100-character lines (default
//     1 GiB), the tool reading, normalizing and capping all of it, median
//     of -floods calls per side (goal: confined at most 1.3x off).
//
// Usage (from the repository root):
//
//	go run ./bench/confine [-runs 50] [-floods 1] [-bytes 1073741824] [-mode workspace-write] [-network off]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

func main() {
	runs := flag.Int("runs", 50, "calls of `true` per side")
	floods := flag.Int("floods", 1, "flood calls per side")
	size := flag.Int64("bytes", 1<<30, "bytes of the flood file")
	mode := flag.String("mode", "workspace-write", "the confined side's sandbox.confinement")
	network := flag.String("network", "off", "the confined side's sandbox.network (limited needs -domains)")
	domains := flag.String("domains", "", "comma-separated sandbox.allowedDomains for -network limited")
	flag.Parse()
	if err := run(*runs, *floods, *size, *mode, *network, *domains); err != nil {
		fmt.Fprintln(os.Stderr, "bench/confine:", err)
		os.Exit(1)
	}
}

type side struct {
	name string
	exec *tool.Tool
	sb   *localsandbox.Sandbox
}

func run(runs, floods int, size int64, mode, network, domains string) error {
	ws, err := os.MkdirTemp("", "bench-confine-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	flood := filepath.Join(ws, "flood.txt")
	if err := writeFlood(flood, size); err != nil {
		return err
	}
	set := confine.Settings{Confinement: mode, Network: network}
	if domains != "" {
		set.AllowedDomains = strings.Split(domains, ",")
	}
	var sides []side
	for _, s := range []struct {
		name string
		set  confine.Settings
	}{{"off", confine.Settings{Confinement: "off"}}, {"confined", set}} {
		sb, err := localsandbox.New(ws, &localsandbox.Options{Confinement: &s.set, NoTempSweep: true})
		if err != nil {
			return err
		}
		defer sb.Close()
		if !sb.Supports("exec") {
			return fmt.Errorf("%s: %v", s.name, sb.CheckOp("exec"))
		}
		sides = append(sides, side{name: s.name, exec: coretools.Execute(sb, nil), sb: sb})
	}
	if c := sides[1].sb.Confinement(); c.Enforced {
		fmt.Printf("confined side: driver %s, mode %s, network %s; layers: %s\n\n", c.Driver, c.Mode, c.Network, strings.Join(c.Layers, "; "))
	}
	call := func(s side, cmd string) (time.Duration, error) {
		in, _ := json.Marshal(map[string]any{"command": cmd, "timeout_ms": 600000})
		start := time.Now()
		res := s.exec.Call(context.Background(), &tool.Call{ID: "bench", Name: "execute", Input: in})
		d := time.Since(start)
		if res.IsError || res.Evidence["exit_code"] != 0 {
			return d, fmt.Errorf("%s: %s failed:\n%s", s.name, cmd, res.AllText())
		}
		return d, nil
	}
	// The sides alternate call by call, so a change in the machine's load
	// falls on both alike.
	medians := func(cmd string, n int) (out, mins [2]time.Duration, err error) {
		var ds [2][]time.Duration
		for _, s := range sides { // warm-up: page cache, probe
			if _, err := call(s, cmd); err != nil {
				return out, mins, err
			}
		}
		for range n {
			for i, s := range sides {
				d, err := call(s, cmd)
				if err != nil {
					return out, mins, err
				}
				ds[i] = append(ds[i], d)
			}
		}
		for i := range ds {
			slices.Sort(ds[i])
			out[i], mins[i] = ds[i][len(ds[i])/2], ds[i][0]
		}
		return out, mins, nil
	}
	trues, trueMins, err := medians("true", runs)
	if err != nil {
		return err
	}
	cats, catMins, err := medians("cat flood.txt", floods)
	if err != nil {
		return err
	}
	fmt.Printf("%-34s %12s %12s %-32s %12s %12s\n", "command", "off", "confined", "median: confined vs off", "min off", "min confined")
	fmt.Printf("%-34s %12s %12s %-32s %12s %12s\n", fmt.Sprintf("true (%d calls)", runs), round(trues[0]), round(trues[1]),
		fmt.Sprintf("%+.1f ms (goal <= +10 ms)", float64(trues[1]-trues[0])/float64(time.Millisecond)), round(trueMins[0]), round(trueMins[1]))
	fmt.Printf("%-34s %12s %12s %-32s %12s %12s\n", fmt.Sprintf("cat %s of lines (%d calls)", human(size), floods), round(cats[0]), round(cats[1]),
		fmt.Sprintf("%.2fx (goal <= 1.3x)", float64(cats[1])/float64(cats[0])), round(catMins[0]), round(catMins[1]))
	return nil
}

func writeFlood(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	line := []byte(strings.Repeat("a", 99) + "\n")
	buf := make([]byte, 0, 1<<20)
	for len(buf)+len(line) <= cap(buf) {
		buf = append(buf, line...)
	}
	for left := size; left > 0; {
		n := min(int64(len(buf)), left)
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	return f.Close()
}

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}
