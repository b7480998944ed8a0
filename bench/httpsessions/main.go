// Command httpsessions measures what abandoned HTTP sessions cost
// `aibuddy mcp --http` (issue 11: 3,000 abandoned sessions held 1.49 GB,
// never freed): it starts aibuddy as a process, opens -n sessions over
// plain HTTP (initialize, notifications/initialized, tools/list and one
// read_file call each, so each session has per-run tool state), abandons
// them without DELETE, and samples the resident memory of the aibuddy
// process (VmRSS from /proc/PID/status) and its live Go heap (the heap
// marked live at the last garbage collection, from GODEBUG=gctrace=1 on
// its stderr) before, right after the sessions, and every -sample until
// -wait after the idle timeout has passed. It also probes every abandoned
// session's id after the idle timeout: an expired session gets 404.
//
//	go run ./bench/httpsessions [-n 3000] [-waves 2] [-idle 20s] [-wait 2m30s] [-aibuddy PATH]
//
// With -waves 2 (the default) a second wave follows the first's expiry:
// its growth over the first wave's highest VmRSS shows whether the freed
// memory is reused.
//
// -idle is written as mcp.sessionIdleTimeout to a settings file; -idle 0
// writes no settings file (the default applies, 30 min, beyond the run;
// use it for a binary that does not know the key). Every request carries
// Authorization: Bearer with the token of $AIBUDDY_TOKEN, which the bench
// sets for the process (a binary without authentication ignores it).
// Without -aibuddy it builds ./cmd/aibuddy into a temporary folder first.
//
// The heap of an expired session is garbage at once, but an idle Go
// process collects only every 2 minutes (forced GC) and returns freed
// pages to the system later still (the scavenger), so the live heap drops
// within about 2 minutes of the expiry and VmRSS, if at all, after that.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
)

func main() {
	n := flag.Int("n", 3000, "sessions to open and abandon")
	idle := flag.Duration("idle", 20*time.Second, "mcp.sessionIdleTimeout for the server (0: no settings file)")
	wait := flag.Duration("wait", 150*time.Second, "how long to keep sampling after the idle timeout has passed")
	sample := flag.Duration("sample", 5*time.Second, "time between samples after the sessions")
	workers := flag.Int("workers", 8, "sessions opened at once")
	waves := flag.Int("waves", 2, "waves of -n sessions, each followed by the idle timeout and -wait")
	aibuddy := flag.String("aibuddy", "", "aibuddy binary (default: go build ./cmd/aibuddy)")
	flag.Parse()
	if err := bench(*n, *waves, *idle, *wait, *sample, *workers, *aibuddy); err != nil {
		fmt.Fprintln(os.Stderr, "httpsessions:", err)
		os.Exit(1)
	}
}

const token = "bench0123456789abcdef0123456789abcdef0123456789abcdef0123456789"

func bench(n, waves int, idle, wait, sample time.Duration, workers int, bin string) error {
	dir, err := os.MkdirTemp("", "httpsessions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin, err = benchbin.Aibuddy(dir, bin); err != nil {
		return err
	}
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(strings.Repeat("a line of the workspace\n", 200)), 0o644)
	args := []string{"mcp", "--http", "127.0.0.1:0", "--workspace", ws, "--data-dir", filepath.Join(dir, "data")}
	if idle > 0 {
		settings := filepath.Join(dir, "aibuddy.json")
		doc := fmt.Sprintf(`{"mcp": {"sessionIdleTimeout": %q}}`, idle)
		if err := os.WriteFile(settings, []byte(doc), 0o644); err != nil {
			return err
		}
		args = append(args, "--config", settings)
	}
	cmd := exec.Command(bin, args...)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "AIBUDDY_") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "AIBUDDY_TOKEN="+token, "GODEBUG=gctrace=1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	url := ""
	sc := bufio.NewScanner(stderr)
	for url == "" && sc.Scan() {
		url = regexp.MustCompile(`http://[0-9.:]+/mcp`).FindString(sc.Text())
	}
	if url == "" {
		return fmt.Errorf("aibuddy printed no address")
	}
	var live heapLive
	go func() {
		for sc.Scan() {
			live.parse(sc.Text())
		}
	}()
	pid := cmd.Process.Pid

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	// One session first, so the baseline includes what any session loads
	// once (the tool set, SQLite pages, the o200k vocabulary).
	if _, err := session(client, url); err != nil {
		return err
	}
	time.Sleep(time.Second)
	base, baseHeap := rss(pid), live.get()
	fmt.Printf("aibuddy mcp --http, %d waves of %d sessions abandoned (initialize, tools/list, read_file each; no DELETE), mcp.sessionIdleTimeout %s\n",
		waves, n, orDefault(idle))
	fmt.Printf("%-30s %10s %12s   (live heap: marked live at the last GC)\n", "when", "VmRSS", "live heap")
	fmt.Printf("%-30s %10s %12s\n", "after 1 session (baseline)", mib(base), mib(baseHeap.bytes))
	var peak int64
	for wave := 1; wave <= waves; wave++ {
		start, pre := time.Now(), rss(pid)
		ids, err := openSessions(client, url, n, workers)
		if err != nil {
			return err
		}
		opened := time.Now()
		after, afterHeap := rss(pid), live.get()
		fmt.Printf("%-30s %10s %12s   (RSS +%s over the wave's start, %s per session; opened in %s, %.0f/s)\n",
			fmt.Sprintf("wave %d: after %d sessions", wave, n), mib(after), mib(afterHeap.bytes), mib(after-pre),
			kib((after-pre)/int64(n)), opened.Sub(start).Round(time.Millisecond), float64(n)/opened.Sub(start).Seconds())
		if wave > 1 {
			fmt.Printf("%-30s RSS %+.1f MiB over wave 1's highest (freed memory reused, or more held)\n", "", float64(after-peak)/(1<<20))
		}
		end := opened.Add(idle + wait)
		if idle == 0 {
			end = opened.Add(wait)
		}
		low, lowHeap := after, afterHeap.bytes
		peak = max(peak, after)
		probed := false
		for time.Now().Before(end) {
			time.Sleep(sample)
			v, h := rss(pid), live.get()
			peak = max(peak, v)
			low, lowHeap = min(low, v), min(lowHeap, h.bytes)
			note := ""
			if h.at.After(opened) {
				note = fmt.Sprintf("GC #%d at +%s", h.n, h.at.Sub(opened).Round(time.Second))
			}
			fmt.Printf("%-30s %10s %12s   %s\n", fmt.Sprintf("  +%s", time.Since(opened).Round(time.Second)), mib(v), mib(h.bytes), note)
			if !probed && idle > 0 && time.Since(opened) > idle+2*time.Second {
				probed = true
				gone, err := probe(client, url, ids)
				if err != nil {
					return err
				}
				fmt.Printf("%-30s %d of %d abandoned session ids get 404 (expired)\n", "", gone, n)
			}
		}
		fmt.Printf("wave %d lowest: VmRSS %s (%s of the wave's growth returned to the system), live heap %s (%s of its growth freed)\n",
			wave, mib(low), pct(after-low, after-base), mib(lowHeap), pct(afterHeap.bytes-lowHeap, afterHeap.bytes-baseHeap.bytes))
	}
	return nil
}

// openSessions opens n sessions, workers at a time, and returns their
// ids.
func openSessions(client *http.Client, url string, n, workers int) ([]string, error) {
	var next, failed atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	ids := make([]string, n)
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				sid, err := session(client, url)
				if err != nil {
					failed.Add(1)
					once.Do(func() { firstErr = err })
				}
				ids[i-1] = sid
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		return nil, fmt.Errorf("%d of %d sessions failed; first: %v", failed.Load(), n, firstErr)
	}
	client.CloseIdleConnections()
	return ids, nil
}

// probe asks each session id for tools/list and counts the 404s (the
// server knows no such session).
func probe(c *http.Client, url string, ids []string) (int, error) {
	gone := 0
	for _, sid := range ids {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			gone++
		}
	}
	return gone, nil
}

// heapLive follows gctrace lines ("gc 12 @3.021s 1%: ... 40->41->20 MB,
// 42 MB goal, ..."): the last one's live heap (the third number).
type heapLive struct {
	mu   sync.Mutex
	last gcSample
}

type gcSample struct {
	n      int
	bytes  int64
	at     time.Time
	forced bool
}

var gcLine = regexp.MustCompile(`^gc (\d+) @[\d.]+s .*?(\d+)->(\d+)->(\d+) MB`)

func (h *heapLive) parse(line string) {
	m := gcLine.FindStringSubmatch(line)
	if m == nil {
		return
	}
	n, _ := strconv.Atoi(m[1])
	mb, _ := strconv.ParseInt(m[4], 10, 64)
	h.mu.Lock()
	h.last = gcSample{n: n, bytes: mb << 20, at: time.Now(), forced: strings.Contains(line, "(forced)")}
	h.mu.Unlock()
}

func (h *heapLive) get() gcSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// session opens one session, gives it per-run state, and abandons it;
// it returns the session's id.
func session(c *http.Client, url string) (string, error) {
	sid := ""
	post := func(body string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s: HTTP %d: %s", body[:min(len(body), 60)], resp.StatusCode, b)
		}
		if sid == "" {
			sid = resp.Header.Get("Mcp-Session-Id")
		}
		if strings.Contains(string(b), `"isError":true`) {
			return fmt.Errorf("tool error: %s", b)
		}
		return nil
	}
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bench", "version": "1"}}})
	for _, body := range []string{string(init),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"}}}`} {
		if err := post(body); err != nil {
			return "", err
		}
	}
	return sid, nil
}

// rss is the resident set of pid in bytes (VmRSS), or -1.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return kb * 1024
			}
		}
	}
	return -1
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
func kib(b int64) string { return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10)) }
func pct(a, b int64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
}
func orDefault(d time.Duration) string {
	if d == 0 {
		return "default (30m; no settings file)"
	}
	return d.String()
}
