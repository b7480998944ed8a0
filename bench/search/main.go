// Command search benchmarks aibuddy's grep and glob tools against ripgrep
// on the Go source tree ($(go env GOROOT)/src, about 11,000 files): the
// same pattern, the same ignore rules (.gitignore honoured by both, hidden
// files skipped by both), several runs each; it prints the median wall time
// of each and the ratio ours/rg. Goal: at most 1.5x for a literal, a
// regular expression and a glob of **/*.go.
//
// Ours runs in-process through the tool (tool.Call on the grep/glob tool
// over a local sandbox, with the result bound raised so that both report
// every match); rg runs as a process writing to a pipe that is discarded.
//
//	go run ./bench/search            # 5 runs each
//	go run ./bench/search -runs 9 -root /some/tree
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

type scenario struct {
	name  string
	tool  string
	input map[string]any
	rg    []string
}

func main() {
	runs := flag.Int("runs", 5, "timed runs of each side (after one warm-up)")
	root := flag.String("root", "", "tree to search (default $(go env GOROOT)/src)")
	only := flag.String("only", "", "run only the scenarios whose name contains this word (literal, regex, glob)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of our side to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fail("%v", err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *root == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			fail("go env GOROOT: %v", err)
		}
		*root = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	if _, err := exec.LookPath("rg"); err != nil {
		fail("ripgrep (rg) is not installed: apt-get install ripgrep")
	}
	sb, err := localsandbox.New(*root, nil)
	if err != nil {
		fail("%v", err)
	}
	const huge = 10_000_000
	tools := coretools.Filesystem(sb, &coretools.FSOptions{
		SearchMaxResults: huge, MaxOutputChars: huge, SearchTimeout: 10 * time.Minute, SearchMaxLineChars: 400})
	byName := map[string]*tool.Tool{}
	for _, t := range tools {
		byName[t.Name()] = t
	}
	scenarios := []scenario{
		{"literal  context.Context", "grep", map[string]any{"pattern": "context.Context", "literal": true},
			[]string{"--no-require-git", "-n", "-F", "context.Context"}},
		{"regex    func \\w+\\(ctx", "grep", map[string]any{"pattern": `func \w+\(ctx context\.Context`},
			[]string{"--no-require-git", "-n", `func \w+\(ctx context\.Context`}},
		{"glob     **/*.go", "glob", map[string]any{"pattern": "**/*.go"},
			[]string{"--no-require-git", "--files", "-g", "*.go"}},
	}
	fmt.Printf("tree: %s\nruns: %d (medians; one warm-up run each first)\n\n", *root, *runs)
	fmt.Printf("%-26s %12s %12s %8s %10s\n", "scenario", "aibuddy", "rg", "ratio", "results")
	for _, sc := range scenarios {
		if !strings.Contains(sc.name, *only) {
			continue
		}
		input, _ := json.Marshal(sc.input)
		ours := func() (time.Duration, int) {
			start := time.Now()
			res := byName[sc.tool].Call(context.Background(), &tool.Call{Name: sc.tool, Input: input})
			d := time.Since(start)
			if res.IsError {
				fail("%s: %s", sc.name, res.AllText())
			}
			return d, strings.Count(res.AllText(), "\n")
		}
		theirs := func() (time.Duration, int) {
			cmd := exec.Command("rg", sc.rg...)
			cmd.Dir = *root
			stdout, _ := cmd.StdoutPipe()
			start := time.Now()
			if err := cmd.Start(); err != nil {
				fail("rg: %v", err)
			}
			n, _ := io.Copy(io.Discard, stdout)
			_ = cmd.Wait()
			return time.Since(start), int(n)
		}
		ours()
		theirs()
		var a, b []time.Duration
		var lines int
		for range *runs {
			d, n := ours()
			a = append(a, d)
			lines = n
			d, _ = theirs()
			b = append(b, d)
		}
		ma, mb := median(a), median(b)
		fmt.Printf("%-26s %12s %12s %7.2fx %10d\n", sc.name, ma.Round(time.Millisecond), mb.Round(time.Millisecond),
			float64(ma)/float64(mb), lines)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench/search: "+format+"\n", args...)
	os.Exit(1)
}
