// Command paths measures what issue 11 found slow in the file tools' path
// handling, process against process: each run is one `aibuddy call --json
// read_file '{...}'` of the built binary (or -bin, e.g. a build of an older
// commit), the way a user runs it.
//
//   - depth: a file at the bottom of N nested folders ("d/d/…/d/f.txt").
//     Path resolution used to cost a system call per component for each
//     component (quadratic: 10,000 levels took 374 s); now one per
//     component. The tree is made once per depth with the *at calls (such
//     a path is far over PATH_MAX). With -raise (default) a settings file
//     lifts sandbox.maxPathDepth and sandbox.maxPathBytes above the depth
//     so the walk itself is timed; an older binary that rejects those keys
//     runs with -raise=false. The last row runs the default bound on
//     10,000 levels: refused at once.
//   - sparse: a 10 GiB sparse file. read_file used to read and hash all of
//     it; now it reads at most sandbox.maxReadBytes (64 MiB) and says what
//     the digest covers (evidence sha256_bytes).
//
// It prints the median wall time of -runs runs per case, the floor (a
// read_file of a one-line file), and what the result said.
//
//	go run ./bench/paths                          # this tree's binary
//	go run ./bench/paths -bin /tmp/aibuddy-old -raise=false -depths 250,1000,2000
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
)

func main() {
	binFlag := flag.String("bin", "", "aibuddy binary to measure (default: build ./cmd/aibuddy)")
	depths := flag.String("depths", "250,1000,2000,4000", "comma-separated folder depths to time")
	runs := flag.Int("runs", 3, "runs per case (median)")
	raise := flag.Bool("raise", true, "raise sandbox.maxPathDepth/maxPathBytes above each depth (false for a binary without those keys)")
	sparseGiB := flag.Int64("sparse-gib", 10, "size of the sparse file in GiB (0 skips it)")
	flag.Parse()
	if err := run(*binFlag, *depths, *runs, *raise, *sparseGiB); err != nil {
		fmt.Fprintln(os.Stderr, "bench/paths:", err)
		os.Exit(1)
	}
}

type result struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError  bool           `json:"isError"`
	Evidence map[string]any `json:"evidence"`
}

func run(binFlag, depths string, runs int, raise bool, sparseGiB int64) error {
	tmp, err := os.MkdirTemp("", "bench-paths-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := benchbin.Aibuddy(tmp, binFlag)
	if err != nil {
		return err
	}
	fmt.Printf("aibuddy: %s\nruns: %d per case (median wall time of the whole process)\n\n", bin, runs)
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ws, "one.txt"), []byte("one line\n"), 0o644); err != nil {
		return err
	}
	call := func(settings, input string) (time.Duration, result, error) {
		args := []string{"call", "--json", "--data-dir", filepath.Join(tmp, "data"), "-w", ws}
		if settings != "" {
			cfg := filepath.Join(tmp, "settings.json")
			if err := os.WriteFile(cfg, []byte(settings), 0o644); err != nil {
				return 0, result{}, err
			}
			args = append(args, "--config", cfg)
		}
		args = append(args, "read_file", input)
		var times []time.Duration
		var res result
		for range runs {
			cmd := exec.Command(bin, args...)
			cmd.Env = cleanEnv()
			start := time.Now()
			out, _ := cmd.Output() // a refusal exits non-zero with a JSON result
			times = append(times, time.Since(start))
			res = result{}
			if err := json.Unmarshal(out, &res); err != nil {
				return 0, res, fmt.Errorf("read_file %.80s: %v: %.300s", input, err, out)
			}
		}
		slices.Sort(times)
		return times[len(times)/2], res, nil
	}
	row := func(what string, d time.Duration, res result) {
		said := "ok"
		if res.IsError && len(res.Content) > 0 {
			said = res.Content[0].Text
			if _, reason, ok := strings.Cut(said, "path too deep or too long"); ok {
				said = "refused: too deep" + reason
			}
		} else if b, ok := res.Evidence["sha256_bytes"].(float64); ok {
			said = fmt.Sprintf("sha256 of the first %s bytes", commas(int(b)))
		} else if b, ok := res.Evidence["bytes"].(float64); ok {
			said = fmt.Sprintf("sha256 of all %s bytes", commas(int(b)))
		}
		if len(said) > 110 {
			said = said[:110] + "…"
		}
		fmt.Printf("%-34s %10s  %s\n", what, d.Round(time.Millisecond), said)
	}

	d, res, err := call("", `{"path":"one.txt"}`)
	if err != nil {
		return err
	}
	row("floor: a one-line file", d, res)

	made := 0
	for _, f := range strings.Split(depths, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-depths: %q is not a depth", f)
		}
		if err := deepen(ws, made, n); err != nil {
			return err
		}
		made = max(made, n)
		p := strings.Repeat("d/", n) + "f.txt"
		settings := ""
		if raise {
			settings = fmt.Sprintf(`{"sandbox": {"maxPathDepth": %d, "maxPathBytes": %d}}`, n+10, 2*n+100)
		}
		d, res, err := call(settings, fmt.Sprintf(`{"path":%q}`, p))
		if err != nil {
			return err
		}
		row(fmt.Sprintf("depth %s", commas(n)), d, res)
	}
	if raise {
		if err := deepen(ws, made, 10000); err != nil {
			return err
		}
		d, res, err := call("", fmt.Sprintf(`{"path":%q}`, strings.Repeat("d/", 10000)+"f.txt"))
		if err != nil {
			return err
		}
		row("depth 10,000, default bound", d, res)
	}

	if sparseGiB > 0 {
		p := filepath.Join(ws, "sparse.bin")
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		if err := f.Truncate(sparseGiB << 30); err != nil {
			f.Close()
			return fmt.Errorf("sparse file: %w", err)
		}
		f.Close()
		d, res, err := call("", `{"path":"sparse.bin"}`)
		if err != nil {
			return err
		}
		row(fmt.Sprintf("sparse file, %d GiB", sparseGiB), d, res)
	}
	return nil
}

// deepen extends the chain of folders "d" under ws from have levels to n,
// one component at a time relative to the folder above, and puts f.txt at
// level n.
func deepen(ws string, have, n int) error {
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { unix.Close(fd) }()
	for i := range n {
		if i >= have {
			if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
				return fmt.Errorf("level %d: %w", i+1, err)
			}
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("level %d: %w", i+1, err)
		}
		unix.Close(fd)
		fd = next
	}
	f, err := unix.Openat(fd, "f.txt", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	unix.Write(f, []byte("at the bottom\n"))
	return unix.Close(f)
}

// cleanEnv is the environment without AIBUDDY_* settings.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIBUDDY_") {
			env = append(env, kv)
		}
	}
	return env
}

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
