// Command search benchmarks aibuddy's grep and glob against ripgrep,
// process against process, the way a user runs either: each run of ours
// is one `aibuddy call --json grep '{...}'` (or glob) process of the built
// binary, each run of theirs one `rg` process, on the same tree with the
// same pattern and the same rules (.gitignore honoured by both, hidden
// files skipped by both). Both sides count every result: ours reports the
// full count in its evidence ("total"; the text shows the newest 100), rg
// prints every matching line or file, which the bench counts; the bench
// fails when the two counts differ or ours was cut short (partial).
//
// It prints, per tree and scenario, the median wall time and the median
// CPU time (user + system) of each side and the ratios ours/rg. Goal: at
// most 1.5x wall for each scenario.
//
// Trees: $(go env GOROOT)/src (-root), and a bigger one of -big-mb MB
// (default 850) made once by copying the first tree into -big-dir until it
// holds that many bytes (kept for the next run; -big-mb 0 skips it).
//
//	go run ./bench/search                    # 5 runs each, both trees
//	go run ./bench/search -runs 9 -big-mb 0 -only insensitive
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type scenario struct {
	name  string
	tool  string
	input map[string]any
	rg    []string
}

var scenarios = []scenario{
	{"literal", "grep", map[string]any{"pattern": "context.Context", "literal": true},
		[]string{"-n", "-F", "context.Context"}},
	{"regex", "grep", map[string]any{"pattern": `func \w+\(ctx context\.Context`},
		[]string{"-n", `func \w+\(ctx context\.Context`}},
	{"insensitive literal", "grep", map[string]any{"pattern": "context.context", "literal": true, "ignore_case": true},
		[]string{"-n", "-i", "-F", "context.context"}},
	{"insensitive regex", "grep", map[string]any{"pattern": `func \w+\(CTX context\.context`, "ignore_case": true},
		[]string{"-n", "-i", `func \w+\(CTX context\.context`}},
	{"glob **/*.go", "glob", map[string]any{"pattern": "**/*.go"},
		[]string{"--files", "-g", "*.go", "-g", "!.*"}},
}

// sample is one process run: wall time, CPU time (user + system), peak
// resident memory in KiB, and the results it counted.
type sample struct {
	wall, cpu time.Duration
	rssKiB    int64
	count     int
}

func main() {
	runs := flag.Int("runs", 5, "timed runs of each side per scenario (after one warm-up each), alternating")
	root := flag.String("root", "", "first tree (default $(go env GOROOT)/src)")
	bigMB := flag.Int("big-mb", 850, "size in MB (10^6 bytes) of the second tree, copies of the first; 0 skips it")
	bigDir := flag.String("big-dir", "", "where the second tree is made and kept (default $TMPDIR/aibuddy-bench-search-<MB>mb)")
	bin := flag.String("bin", "", "aibuddy binary to run (default: go build ./cmd/aibuddy into a temporary folder)")
	only := flag.String("only", "", "run only the scenarios whose name contains this word (literal, regex, insensitive, glob)")
	flag.Parse()

	if _, err := exec.LookPath("rg"); err != nil {
		fail("ripgrep (rg) is not installed: apt-get install ripgrep")
	}
	tmp, err := os.MkdirTemp("", "bench-search-")
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	if *root == "" {
		*root = filepath.Join(goEnv("GOROOT"), "src")
	}
	if *bin == "" {
		*bin = filepath.Join(tmp, "aibuddy")
		fmt.Fprintf(os.Stderr, "building %s ...\n", *bin)
		cmd := exec.Command("go", "build", "-o", *bin, "./cmd/aibuddy")
		cmd.Dir = filepath.Dir(goEnv("GOMOD"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fail("go build: %v", err)
		}
	}
	// The search timeout is raised so that a slow walk shows as slow
	// rather than as a partial result of other work than rg's.
	settings := filepath.Join(tmp, "settings.json")
	if err := os.WriteFile(settings, []byte(`{"limits":{"searchTimeout":"10m"}}`), 0o644); err != nil {
		fail("%v", err)
	}
	trees := []string{*root}
	if *bigMB > 0 {
		if *bigDir == "" {
			*bigDir = filepath.Join(os.TempDir(), fmt.Sprintf("aibuddy-bench-search-%dmb", *bigMB))
		}
		if err := makeTree(*root, *bigDir, int64(*bigMB)*1_000_000); err != nil {
			fail("making the %d MB tree: %v", *bigMB, err)
		}
		trees = append(trees, *bigDir)
	}
	rgVersion, _ := exec.Command("rg", "--version").Output()
	fmt.Printf("aibuddy: %s\nripgrep: %s\nruns: %d per side (medians; one warm-up run each first; sides alternate)\n",
		*bin, strings.SplitN(string(rgVersion), "\n", 2)[0], *runs)

	mismatch := false
	for _, tree := range trees {
		files, size := treeSize(tree)
		fmt.Printf("\ntree: %s (%d files, %d MB)\n", tree, files, size/1_000_000)
		fmt.Printf("%-20s %9s %9s %6s   %9s %9s %6s   %8s %8s   %9s\n",
			"scenario", "aibuddy", "rg", "ratio", "cpu ours", "cpu rg", "ratio", "rss ours", "rss rg", "results")
		for _, sc := range scenarios {
			if !strings.Contains(sc.name, *only) {
				continue
			}
			input, _ := json.Marshal(sc.input)
			ours := func() sample {
				return run(exec.Command(*bin, "call", "--json", "-c", settings, "--data-dir", filepath.Join(tmp, "data"),
					"-w", tree, sc.tool, string(input)), tree, oursCount(sc.name))
			}
			theirs := func() sample {
				return run(exec.Command("rg", append([]string{"--no-require-git"}, sc.rg...)...), tree, countLines)
			}
			ours()
			theirs()
			var a, b []sample
			for range *runs {
				a = append(a, ours())
				b = append(b, theirs())
			}
			wa, wb := median(a, func(s sample) time.Duration { return s.wall }), median(b, func(s sample) time.Duration { return s.wall })
			ca, cb := median(a, func(s sample) time.Duration { return s.cpu }), median(b, func(s sample) time.Duration { return s.cpu })
			ra, rb := medianInt(a, func(s sample) int64 { return s.rssKiB }), medianInt(b, func(s sample) int64 { return s.rssKiB })
			results := strconv.Itoa(a[0].count)
			for _, s := range append(a, b...) {
				if s.count != a[0].count {
					results = fmt.Sprintf("MISMATCH: aibuddy %d, rg %d", a[0].count, b[0].count)
					mismatch = true
					break
				}
			}
			fmt.Printf("%-20s %9s %9s %5.2fx   %9s %9s %5.2fx   %7dM %7dM   %9s\n", sc.name,
				ms(wa), ms(wb), float64(wa)/float64(wb), ms(ca), ms(cb), float64(ca)/float64(cb), ra>>10, rb>>10, results)
		}
	}
	if mismatch {
		fail("the two sides counted different results")
	}
}

// run starts cmd in dir, reads its whole output, and returns its times,
// peak memory and what count makes of the output.
func run(cmd *exec.Cmd, dir string, count func(name string, out []byte) int) sample {
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = io.Discard
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil && (cmd.ProcessState == nil || cmd.ProcessState.ExitCode() > 1) {
		fail("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	st := cmd.ProcessState
	var rss int64
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	return sample{wall: wall, cpu: st.UserTime() + st.SystemTime(), rssKiB: rss, count: count(cmd.Args[0], out.Bytes())}
}

// oursCount reads the full count from the JSON result's evidence.
func oursCount(scenario string) func(string, []byte) int {
	return func(_ string, out []byte) int {
		var res struct {
			IsError  bool `json:"isError"`
			Evidence struct {
				Total   *int `json:"total"`
				Partial bool `json:"partial"`
			} `json:"evidence"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			fail("%s: aibuddy printed no JSON result: %v\n%s", scenario, err, out)
		}
		if res.IsError || res.Evidence.Total == nil || res.Evidence.Partial {
			fail("%s: aibuddy: error %v, partial %v, total %v: %s", scenario, res.IsError, res.Evidence.Partial, res.Evidence.Total, res.Content)
		}
		return *res.Evidence.Total
	}
}

// countLines counts rg's output lines: one per matching line or file.
func countLines(_ string, out []byte) int { return bytes.Count(out, []byte{'\n'}) }

// makeTree fills dst with copies of src (dst/copy-00, copy-01, ...) until
// it holds at least size bytes of regular files; a tree already made for
// the same source and size is kept.
func makeTree(src, dst string, size int64) error {
	marker := filepath.Join(dst, ".bench-tree")
	want := fmt.Sprintf("source %s\nbytes %d\n", src, size)
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		return nil
	}
	fmt.Fprintf(os.Stderr, "copying %s into %s until it holds %d MB ...\n", src, dst, size/1_000_000)
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	var copied int64
	for i := 0; copied < size; i++ {
		base := filepath.Join(dst, fmt.Sprintf("copy-%02d", i))
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if copied >= size {
				return filepath.SkipAll
			}
			rel, _ := filepath.Rel(src, p)
			to := filepath.Join(base, rel)
			switch {
			case d.IsDir():
				return os.MkdirAll(to, 0o755)
			case d.Type().IsRegular():
				n, err := copyFile(p, to)
				copied += n
				return err
			}
			return nil // symlinks and special files are not copied
		})
		if err != nil {
			return err
		}
	}
	return os.WriteFile(marker, []byte(want), 0o644)
}

func copyFile(from, to string) (int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return 0, err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm()|0o200)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(to, fi.ModTime(), fi.ModTime())
	}
	return n, err
}

func treeSize(root string) (files int, size int64) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				files++
				size += fi.Size()
			}
		}
		return nil
	})
	return files, size
}

func goEnv(key string) string {
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		fail("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

func median(s []sample, f func(sample) time.Duration) time.Duration {
	v := make([]time.Duration, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func medianInt(s []sample, f func(sample) int64) int64 {
	v := make([]int64, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench/search: "+format+"\n", args...)
	os.Exit(1)
}
