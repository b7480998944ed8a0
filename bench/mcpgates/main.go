// Command mcpgates measures what a host holds from `aibuddy mcp` while many
// upstream MCP servers join (issue 13, "Late servers"): -n fixture servers
// (internal/fixtures/fxtools, real stdio processes, -each tools apiece),
// -held of them held back (each blocks on a named pipe) until the host has
// its first tools/list answer, then let go all at once.
//
// For each binary (-before, when given, and the one measured, -aibuddy or a
// fresh build of ./cmd/aibuddy) and each run, with a fresh data folder (no
// tool counts from an earlier start) it reports:
//
//   - first: wall time from process start to the first tools/list answer,
//     whether tool_search is on it and the count it states, and how many
//     MCP tools it lists directly;
//   - settled: the time from process start to the last
//     notifications/tools/list_changed (the list is taken as settled after
//     -quiet without one), how many notifications came, the count
//     tool_search states then and how many names its index holds (a
//     select: of every fixture tool name: "matched").
//
// The settled list is right when tool_search's stated count and its index
// both equal n*each and no MCP tool is listed directly; the bench prints
// "ok" or what differs, and exits 1 when the measured binary (not -before)
// is not right.
//
//	go run ./bench/mcpgates [-n 70] [-each 6] [-held 70] [-runs 3] [-before OLD_BINARY] [-aibuddy PATH]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
)

func main() {
	n := flag.Int("n", 70, "fixture servers")
	each := flag.Int("each", 6, "tools per fixture server")
	held := flag.Int("held", 70, "servers held back until the host has its first tools/list")
	runs := flag.Int("runs", 3, "runs per binary; medians are reported")
	quiet := flag.Duration("quiet", 2*time.Second, "the list is settled after this long without a list_changed")
	startupWait := flag.String("startup-wait", "1s", "mcp.startupWait for aibuddy")
	before := flag.String("before", "", "an aibuddy binary of another commit, measured first for comparison")
	aibuddy := flag.String("aibuddy", "", "the aibuddy binary to measure (default: go build ./cmd/aibuddy)")
	flag.Parse()
	if err := run(*n, *each, *held, *runs, *quiet, *startupWait, *before, *aibuddy); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgates:", err)
		os.Exit(1)
	}
}

type sample struct {
	first        time.Duration
	firstSearch  bool
	firstStated  int
	firstDirect  int
	settled      time.Duration
	notes        int
	stated       int
	indexed      int
	settledDirec int
}

func run(n, each, held, runs int, quiet time.Duration, startupWait, before, bin string) error {
	dir, err := os.MkdirTemp("", "mcpgates-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	after, err := benchbin.Aibuddy(dir, bin)
	if err != nil {
		return err
	}
	fx := filepath.Join(dir, "fxtools")
	build := exec.Command("go", "build", "-o", fx, "./internal/fixtures/fxtools")
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		build.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./internal/fixtures/fxtools: %w", err)
	}
	type side struct {
		label, bin string
	}
	sides := []side{{"after", after}}
	if before != "" {
		b, err := filepath.Abs(before)
		if err != nil {
			return err
		}
		sides = []side{{"before", b}, {"after", after}}
	}
	fmt.Printf("%d servers x %d tools (%d in all), %d held until the first tools/list; mcp.startupWait %s; %d run(s) per binary, medians\n\n",
		n, each, n*each, held, startupWait, runs)
	fmt.Printf("%-7s | %9s %7s %7s %7s | %9s %6s %7s %8s %7s | %s\n",
		"binary", "first", "search", "stated", "direct", "settled", "notes", "stated", "indexed", "direct", "settled list")
	bad := false
	for _, s := range sides {
		var all []sample
		for r := range runs {
			smp, err := measure(s.bin, fx, filepath.Join(dir, fmt.Sprintf("%s-%d", s.label, r)), n, each, held, quiet, startupWait)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", s.label, r+1, err)
			}
			all = append(all, smp)
		}
		m := median(all)
		verdict := "ok"
		var wrong []string
		if m.stated != n*each {
			wrong = append(wrong, fmt.Sprintf("states %d", m.stated))
		}
		if m.indexed != n*each {
			wrong = append(wrong, fmt.Sprintf("index holds %d", m.indexed))
		}
		if m.settledDirec != 0 {
			wrong = append(wrong, fmt.Sprintf("%d listed directly", m.settledDirec))
		}
		if len(wrong) > 0 {
			verdict = strings.Join(wrong, ", ") + fmt.Sprintf(" (want %d deferred)", n*each)
			if s.label == "after" {
				bad = true
			}
		}
		fmt.Printf("%-7s | %9s %7v %7d %7d | %9s %6d %7d %8d %7d | %s\n", s.label,
			m.first.Round(time.Millisecond), m.firstSearch, m.firstStated, m.firstDirect,
			m.settled.Round(time.Millisecond), m.notes, m.stated, m.indexed, m.settledDirec, verdict)
	}
	fmt.Printf("\n(settled: time from start to the last list_changed; the bench then waits %s more to call it settled)\n", quiet)
	if bad {
		return fmt.Errorf("the measured binary's settled list is not right")
	}
	return nil
}

// median takes each field's median over the runs (the booleans: the
// first run's).
func median(all []sample) sample {
	pick := func(f func(sample) float64) float64 {
		v := make([]float64, len(all))
		for i, s := range all {
			v[i] = f(s)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return sample{
		first:        time.Duration(pick(func(s sample) float64 { return float64(s.first) })),
		firstSearch:  all[0].firstSearch,
		firstStated:  int(pick(func(s sample) float64 { return float64(s.firstStated) })),
		firstDirect:  int(pick(func(s sample) float64 { return float64(s.firstDirect) })),
		settled:      time.Duration(pick(func(s sample) float64 { return float64(s.settled) })),
		notes:        int(pick(func(s sample) float64 { return float64(s.notes) })),
		stated:       int(pick(func(s sample) float64 { return float64(s.stated) })),
		indexed:      int(pick(func(s sample) float64 { return float64(s.indexed) })),
		settledDirec: int(pick(func(s sample) float64 { return float64(s.settledDirec) })),
	}
}

var statedCount = regexp.MustCompile(`Search the (\d+) tools`)

// measure runs one host session against bin.
func measure(bin, fx, dir string, n, each, held int, quiet time.Duration, startupWait string) (sample, error) {
	var smp sample
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return smp, err
	}
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		return smp, err
	}
	servers := map[string]any{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("fx%02d", i)
		args := []string{"-name", name, "-tools", strconv.Itoa(each)}
		if i >= n-held {
			args = append(args, "-wait", gate)
		}
		servers[name] = map[string]any{"command": fx, "args": args}
		for j := range each - 1 {
			names = append(names, fmt.Sprintf("%s__echo%d", name, j))
		}
		names = append(names, name+"__ledger")
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "mcp": map[string]any{"initTimeout": "120s", "startupWait": startupWait}})
	cfg := filepath.Join(dir, "aibuddy.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		return smp, err
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return smp, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	changed := make(chan time.Time, 4096)
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--config", cfg, "--data-dir", filepath.Join(dir, "data"))
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpgates", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- time.Now() }})
	start := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return smp, err
	}
	defer cs.Close()
	list := func() (search bool, stated, direct int, err error) {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			return false, 0, 0, err
		}
		for _, t := range lt.Tools {
			if strings.Contains(t.Name, "__") {
				direct++
			}
			if t.Name == "tool_search" {
				search = true
				if m := statedCount.FindStringSubmatch(t.Description); m != nil {
					stated, _ = strconv.Atoi(m[1])
				}
			}
		}
		return search, stated, direct, nil
	}
	if smp.firstSearch, smp.firstStated, smp.firstDirect, err = list(); err != nil {
		return smp, err
	}
	smp.first = time.Since(start)
	g, err := os.OpenFile(gate, os.O_RDWR, 0)
	if err != nil {
		return smp, err
	}
	defer g.Close()
	last := start.Add(smp.first)
	for done := false; !done; {
		select {
		case at := <-changed:
			smp.notes++
			last = at
		case <-time.After(quiet):
			done = true
		case <-ctx.Done():
			return smp, ctx.Err()
		}
	}
	smp.settled = last.Sub(start)
	var search bool
	if search, smp.stated, smp.settledDirec, err = list(); err != nil {
		return smp, err
	}
	if search {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "select:" + strings.Join(names, ",")}})
		if err != nil {
			return smp, err
		}
		eb, _ := json.Marshal(res.Meta["aibuddy/evidence"])
		var ev struct{ Matched int }
		_ = json.Unmarshal(eb, &ev)
		smp.indexed = ev.Matched
	}
	return smp, nil
}
