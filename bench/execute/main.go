// Command execute measures the execute tool on floods of output of several
// shapes, process against process: the built aibuddy program running
//
//	aibuddy call --data-dir TMP -w TMP execute '{"command":CMD}'
//
// with the CLI's own defaults (the full output file in the data folder, the
// call record in its SQLite store), against the same CMD run as
// sh -c 'CMD > /dev/null 2>&1'. For each shape it prints the wall time and
// the peak RSS (wait4 rusage, ru_maxrss: the largest process of the tree)
// of both sides and their ratio, from one run, and asserts that the tool's
// counts (raw bytes in the full output file and in its evidence,
// characters, lines, binary bytes) equal what the command printed.
//
// Usage (from the repository root):
//
//	go run ./bench/execute [-bytes 1073741824] [-runs 1] [-shapes lines,nonl,...] [-aibuddy PATH] [-inprocess [-cpuprofile FILE]]
//
// -inprocess also runs each shape through the tool inside this process
// (coretools.Execute on a local sandbox, no record, no CLI start-up) and
// reports its time and the growth of this process's peak RSS.
//
// Goals (bench/README.md): peak RSS of the aibuddy process < 64 MiB for
// every shape; time ratio printed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// shape is one kind of output: a command that prints exactly n bytes and
// what the tool must count for it.
type shape struct {
	name, what string
	cmd        func(n int64) string
	// want gives the characters, lines and stderr characters the tool's
	// normalization yields for n bytes; binary shapes are checked against
	// the full output file instead (want nil).
	want func(n int64) (chars, lines, stderrChars int64)
}

const (
	progressFrame = "downloading 42% [=============>              ] 1.2 MB/s eta 0:03\r"
	ansiLine      = "\x1b[1;32mPASS\x1b[0m ok   example.com/project/internal/pkg \x1b[2m0.012s\x1b[0m\n"
	utf8Unit      = "héllo wörld — 日本語のテキスト 🙂 "
)

var ansiSeq = regexp.MustCompile("\x1b\\[[0-9;]*[@-~]?") // complete, or cut at the end

func shapes() []shape {
	return []shape{
		{name: "lines", what: "100-character lines (99 + \\n)",
			cmd: func(n int64) string { return fmt.Sprintf("yes %s | head -c %d", strings.Repeat("a", 99), n) },
			want: func(n int64) (int64, int64, int64) {
				return n, (n + 99) / 100, 0
			}},
		{name: "nonl", what: "no newline at all",
			cmd: func(n int64) string { return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", n) },
			want: func(n int64) (int64, int64, int64) {
				return n, 1, 0
			}},
		{name: "cr", what: "progress frames ending in \\r only",
			cmd: func(n int64) string {
				return fmt.Sprintf("yes '%s' | tr '\\n' '\\r' | head -c %d", strings.TrimSuffix(progressFrame, "\r"), n)
			},
			want: func(n int64) (int64, int64, int64) {
				// Only the text after the last lone \r stays; a final \r
				// erases nothing.
				l := int64(len(progressFrame))
				if r := n % l; r != 0 {
					return r, 1, 0
				}
				return l - 1, 1, 0
			}},
		{name: "binary", what: "/dev/urandom",
			cmd: func(n int64) string { return fmt.Sprintf("head -c %d /dev/urandom", n) }},
		{name: "ansi", what: "ANSI-coloured lines",
			cmd: func(n int64) string {
				return fmt.Sprintf("yes \"$(printf '%s')\" | head -c %d", strings.TrimSuffix(strings.ReplaceAll(ansiLine, "\x1b", `\033`), "\n"), n)
			},
			want: func(n int64) (int64, int64, int64) {
				l := int64(len(ansiLine))
				vis := func(s string) int64 { return int64(len(ansiSeq.ReplaceAllString(s, ""))) }
				lines := (n + l - 1) / l
				return n/l*vis(ansiLine) + vis(ansiLine[:n%l]), lines, 0
			}},
		{name: "utf8", what: "one UTF-8 line (2-4 byte characters)",
			cmd: func(n int64) string { return fmt.Sprintf("yes '%s' | tr -d '\\n' | head -c %d", utf8Unit, n) },
			want: func(n int64) (int64, int64, int64) {
				u := int64(len(utf8Unit))
				return n/u*int64(utf8.RuneCountInString(utf8Unit)) + runesCut(utf8Unit[:n%u]), 1, 0
			}},
		{name: "stderr", what: "no newline, on stderr",
			cmd: func(n int64) string { return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' e >&2", n) },
			want: func(n int64) (int64, int64, int64) {
				return n, 1, n
			}},
	}
}

// runesCut counts the characters of s as the tool does: a character cut at
// the end is one U+FFFD.
func runesCut(s string) int64 {
	var n int64
	for len(s) > 0 {
		if !utf8.FullRuneInString(s) {
			return n + 1
		}
		_, size := utf8.DecodeRuneInString(s)
		s, n = s[size:], n+1
	}
	return n
}

// measurement is one process's wall time and peak RSS.
type measurement struct {
	wall time.Duration
	rss  int64 // bytes
}

func main() {
	size := flag.Int64("bytes", 1<<30, "bytes each command prints")
	runs := flag.Int("runs", 1, "runs of each side per shape, alternating; the median is reported")
	only := flag.String("shapes", "", "comma-separated shapes to run (default all: lines,nonl,cr,binary,ansi,utf8,stderr)")
	bin := flag.String("aibuddy", "", "the aibuddy program to measure (default: built from ./cmd/aibuddy into a temporary folder)")
	inproc := flag.Bool("inprocess", false, "also run each shape through the tool inside this process")
	cpuprofile := flag.String("cpuprofile", "", "with -inprocess: write a CPU profile of the in-process tool runs to this file")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "bench-execute-")
	check(err)
	defer os.RemoveAll(tmp)
	*bin, err = benchbin.Aibuddy(tmp, *bin)
	check(err)
	ws := filepath.Join(tmp, "ws")
	check(os.Mkdir(ws, 0o700))

	var sel []shape
	for _, s := range shapes() {
		if *only == "" || slices.Contains(strings.Split(*only, ","), s.name) {
			sel = append(sel, s)
		}
	}
	if len(sel) == 0 {
		check(fmt.Errorf("no shape named in -shapes %q", *only))
	}

	// The floor: any aibuddy call process, whatever it prints.
	floor, _, err := aibuddy(*bin, tmp, ws, "true")
	check(err)
	fmt.Printf("aibuddy: %s\nfloor (aibuddy call execute true): %v, peak RSS %s\n\n", *bin, floor.wall.Round(time.Millisecond), mib(floor.rss))
	fmt.Printf("%-7s %-38s %7s | %9s %9s %6s | %9s %9s %9s | %s\n", "shape", "what", "bytes", "sh", "aibuddy", "ratio", "sh RSS", "ab RSS", "ab-floor", "counts")
	failed := false
	for _, s := range sel {
		cmd := s.cmd(*size)
		var base, ours []measurement
		var verdict string
		for range *runs {
			b, err := baseline(cmd)
			check(err)
			base = append(base, b)
			o, res, err := aibuddy(*bin, tmp, ws, cmd)
			check(err)
			ours = append(ours, o)
			verdict = verify(s, *size, res)
			if res.path != "" {
				os.Remove(res.path) // 1 GiB of disk per run
			}
		}
		b, o := med(base), med(ours)
		fmt.Printf("%-7s %-38s %7s | %9v %9v %6.2f | %9s %9s %9s | %s\n", s.name, s.what, count(*size),
			b.wall.Round(time.Millisecond), o.wall.Round(time.Millisecond), float64(o.wall)/float64(b.wall),
			mib(b.rss), mib(o.rss), mib(o.rss-floor.rss), verdict)
		if verdict != "equal" {
			failed = true
		}
	}
	if *inproc {
		fmt.Println()
		if *cpuprofile != "" {
			f, err := os.Create(*cpuprofile)
			check(err)
			check(pprof.StartCPUProfile(f))
		}
		inProcess(sel, *size, ws)
		pprof.StopCPUProfile()
	}
	if failed {
		fmt.Fprintln(os.Stderr, "bench: the tool's counts differ from what the command printed")
		os.Exit(1)
	}
}

// baseline runs sh -c 'CMD > /dev/null 2>&1' as a process.
func baseline(cmd string) (measurement, error) {
	c := exec.Command("/bin/sh", "-c", "{ "+cmd+"; } > /dev/null 2>&1")
	start := time.Now()
	if err := c.Run(); err != nil {
		return measurement{}, fmt.Errorf("baseline %q: %w", cmd, err)
	}
	return measurement{time.Since(start), maxRSS(c.ProcessState)}, nil
}

// callResult is what the bench reads from aibuddy call --json.
type callResult struct {
	isError  bool
	text     string
	evidence map[string]any
	path     string // full output file
}

// aibuddy runs aibuddy call execute as a process, with a data folder of its
// own under tmp and no settings file.
func aibuddy(bin, tmp, ws, cmd string) (measurement, callResult, error) {
	input, _ := json.Marshal(map[string]any{"command": cmd, "timeout_ms": 600000})
	data, err := os.MkdirTemp(tmp, "data-")
	if err != nil {
		return measurement{}, callResult{}, err
	}
	c := exec.Command(bin, "call", "--json", "--data-dir", data, "-w", ws, "execute", "-")
	c.Stdin = bytes.NewReader(input)
	c.Env = cleanEnv()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	err = c.Run()
	m := measurement{time.Since(start), maxRSS(c.ProcessState)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return m, callResult{}, err
	}
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Evidence map[string]any `json:"evidence"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return m, callResult{}, fmt.Errorf("aibuddy call: %v: %s %s", err, out.String(), errb.String())
	}
	res := callResult{isError: r.IsError, evidence: r.Evidence}
	for _, t := range r.Content {
		res.text += t.Text
	}
	res.path, _ = r.Evidence["full_output_path"].(string)
	return m, res, nil
}

// cleanEnv is the environment without aibuddy's own variables, so no
// settings file or data folder of the user's is used.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIBUDDY_") {
			env = append(env, kv)
		}
	}
	return env
}

// verify compares the tool's counts with what the command printed and
// returns "equal" or what differs.
func verify(s shape, n int64, r callResult) string {
	if r.isError {
		return "error result: " + firstLine(r.text)
	}
	num := func(k string) int64 {
		f, _ := r.evidence[k].(float64)
		return int64(f)
	}
	var diffs []string
	expect := func(what string, got, want int64) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s %d, want %d", what, got, want))
		}
	}
	fi, err := os.Stat(r.path)
	if err != nil {
		return "no full output file: " + firstLine(r.text)
	}
	expect("file bytes", fi.Size(), n)
	expect("output_bytes", num("output_bytes"), n)
	if s.want != nil {
		chars, lines, stderr := s.want(n)
		expect("output_chars", num("output_chars"), chars)
		expect("output_lines", num("output_lines"), lines)
		expect("stderr_chars", num("stderr_chars"), stderr)
		expect("binary_bytes", num("binary_bytes"), 0)
	} else {
		// Binary: everything from the first NUL on is counted, not shown.
		at, err := firstNUL(r.path)
		if err != nil {
			return err.Error()
		}
		expect("binary_bytes", num("binary_bytes"), n-at)
	}
	if len(diffs) > 0 {
		return strings.Join(diffs, "; ")
	}
	return "equal"
}

func firstNUL(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var off int64
	for {
		k, err := f.Read(buf)
		if i := bytes.IndexByte(buf[:k], 0); i >= 0 {
			return off + int64(i), nil
		}
		off += int64(k)
		if err == io.EOF {
			return off, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// inProcess runs each shape through the tool in this process (no CLI, no
// record, the full output file kept) and reports the tool's wall time and
// this process's peak RSS after each shape.
func inProcess(sel []shape, n int64, ws string) {
	sb, err := localsandbox.New(ws, nil)
	check(err)
	defer sb.Close()
	outdir, err := os.MkdirTemp("", "bench-execute-out-")
	check(err)
	defer os.RemoveAll(outdir)
	t := coretools.Execute(sb, &coretools.ExecuteOptions{OutputDir: outdir, MaxTimeout: 10 * time.Minute})
	fmt.Printf("in-process (coretools.Execute, full output file kept, no events):\n")
	fmt.Printf("%-7s %9s | %9s | %s\n", "shape", "bytes", "tool", "peak RSS of this process so far")
	for _, s := range sel {
		input, _ := json.Marshal(map[string]any{"command": s.cmd(n), "timeout_ms": 600000})
		start := time.Now()
		res := t.Call(context.Background(), &tool.Call{ID: "bench-" + s.name, Input: input})
		d := time.Since(start)
		if res.IsError {
			check(errors.New(firstLine(res.AllText())))
		}
		if p, _ := res.Evidence["full_output_path"].(string); p != "" {
			os.Remove(p)
		}
		var ru syscall.Rusage
		check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
		fmt.Printf("%-7s %9s | %9v | %s\n", s.name, count(n), d.Round(time.Millisecond), mib(ru.Maxrss*1024))
	}
}

func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024 // Linux: KiB
	}
	return 0
}

func med(ms []measurement) measurement {
	s := slices.Clone(ms)
	slices.SortFunc(s, func(a, b measurement) int { return int(a.wall - b.wall) })
	r := s[len(s)/2]
	for _, m := range ms {
		r.rss = max(r.rss, m.rss) // the worst peak of any run
	}
	return r
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func count(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprint(n)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
