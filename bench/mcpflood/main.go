// Command mcpflood measures what a notification flood from an upstream MCP
// server costs (issue 10): a fixture MCP server (this program with -role
// fixture) answers a call of its tool "flood" by sending -n notifications
// in a tight loop (notifications/message, notifications/progress and
// notifications/tools/list_changed in turn) and then the result; two whole
// processes take the same flood:
//
//   - direct: an MCP Go SDK client process (-role direct) calls "flood" on
//     the fixture server itself, with a logging handler, a progress token
//     and a list_changed handler, as a host would;
//   - aibuddy: `aibuddy mcp --mcp-config` with the fixture server as its
//     upstream, started by this process as the MCP host, which calls
//     fixture__flood through it (with a progress token) and, while the
//     flood runs, calls fixture__echo to check calls still work.
//
// For each side it prints the CPU time (user + system, from
// /proc/<pid>/stat) the measured process spent from the call to its result,
// and again a second later (aibuddy's list_changed refresh runs after the
// debounce), the wall time of the call, and the ratio aibuddy/direct.
//
//	go run ./bench/mcpflood [-n 200000] [-runs 3] [-aibuddy PATH]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	role := flag.String("role", "", "internal: fixture (serve the flood) or direct (take it as a plain client)")
	n := flag.Int("n", 200000, "notifications in one flood")
	runs := flag.Int("runs", 3, "runs of each side, alternating; medians are reported")
	bin := flag.String("aibuddy", "", "aibuddy binary (default: go build ./cmd/aibuddy)")
	flag.Parse()
	var err error
	switch *role {
	case "fixture":
		err = serveFixture()
	case "direct":
		err = runDirectClient(*n)
	case "":
		err = bench(*n, *runs, *bin)
	default:
		err = fmt.Errorf("unknown -role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpflood:", err)
		os.Exit(1)
	}
}

// serveFixture speaks newline-delimited JSON-RPC on stdio: two tools,
// "flood" ({"n": count}) and "echo".
func serveFixture() error {
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var mu sync.Mutex
	send := func(v any, flush bool) {
		b, _ := json.Marshal(v)
		mu.Lock()
		out.Write(b)
		out.WriteByte('\n')
		if flush {
			out.Flush()
		}
		mu.Unlock()
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var wg sync.WaitGroup
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
				Arguments       struct {
					N int `json:"n"`
				} `json:"arguments"`
				Meta struct {
					ProgressToken any `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || len(m.ID) == 0 {
			continue
		}
		reply := func(result any) {
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result}, true)
		}
		switch m.Method {
		case "initialize":
			reply(map[string]any{"protocolVersion": m.Params.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{}},
				"serverInfo":   map[string]any{"name": "fixture", "version": "1.0"}})
		case "tools/list":
			reply(map[string]any{"tools": []any{
				map[string]any{"name": "flood", "inputSchema": map[string]any{"type": "object",
					"properties": map[string]any{"n": map[string]any{"type": "integer"}}}},
				map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}}})
		case "tools/call":
			if m.Params.Name != "flood" {
				reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo"}}})
				continue
			}
			token := m.Params.Meta.ProgressToken
			if token == nil {
				token = "none"
			}
			n := m.Params.Arguments.N
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n {
					var note map[string]any
					switch i % 3 {
					case 0:
						note = map[string]any{"method": "notifications/message", "params": map[string]any{
							"level": "info", "logger": "fixture", "data": "step " + strconv.Itoa(i) + " of the flood"}}
					case 1:
						note = map[string]any{"method": "notifications/progress", "params": map[string]any{
							"progressToken": token, "progress": i, "total": n, "message": "working"}}
					default:
						note = map[string]any{"method": "notifications/tools/list_changed"}
					}
					note["jsonrpc"] = "2.0"
					send(note, false)
				}
				reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("flooded %d", n)}}})
			}()
		default:
			reply(map[string]any{})
		}
	}
	wg.Wait()
	return sc.Err()
}

// cpu is the user + system CPU time of a process so far.
func cpu(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which ends at the last ')').
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil // USER_HZ 100
}

func self(role string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, "-role", role), nil
}

// runDirectClient is the direct side: one flood through a plain SDK
// client; it prints its own CPU over the call and a second after, and the
// call's wall time, as one JSON line.
func runDirectClient(n int) error {
	ctx := context.Background()
	cmd, err := self("fixture")
	if err != nil {
		return err
	}
	var logs, progress, changed int
	var mu sync.Mutex
	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1.0"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { mu.Lock(); logs++; mu.Unlock() },
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress++
			mu.Unlock()
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { mu.Lock(); changed++; mu.Unlock() },
	})
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer sess.Close()
	pid := os.Getpid()
	c0, _ := cpu(pid)
	t0 := time.Now()
	params := &mcp.CallToolParams{Name: "flood", Arguments: map[string]any{"n": n}}
	params.SetProgressToken("direct-1")
	res, err := sess.CallTool(ctx, params)
	wall := time.Since(t0)
	if err != nil || res.IsError {
		return fmt.Errorf("flood call: %v %v", err, res)
	}
	c1, _ := cpu(pid)
	time.Sleep(time.Second)
	c2, _ := cpu(pid)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"cpu": c1 - c0, "cpu_after": c2 - c0, "wall": wall})
}

type sample struct {
	cpu, cpuAfter, wall time.Duration
	echo                time.Duration // aibuddy: an echo call made during the flood
}

func runDirect(n int) (sample, error) {
	cmd, err := self("direct")
	if err != nil {
		return sample{}, err
	}
	cmd.Args = append(cmd.Args, "-n", strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return sample{}, fmt.Errorf("direct client: %v", err)
	}
	var got struct {
		CPU      time.Duration `json:"cpu"`
		CPUAfter time.Duration `json:"cpu_after"`
		Wall     time.Duration `json:"wall"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return sample{}, err
	}
	return sample{cpu: got.CPU, cpuAfter: got.CPUAfter, wall: got.Wall}, nil
}

func runAibuddy(n int, bin, dir string) (sample, string, error) {
	ctx := context.Background()
	fixture, err := self("fixture")
	if err != nil {
		return sample{}, "", err
	}
	cfg := filepath.Join(dir, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fixture": map[string]any{"command": fixture.Path, "args": fixture.Args[1:]}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		return sample{}, "", err
	}
	cmd := exec.Command(bin, "mcp", "--mcp-config", cfg, "--workspace", dir, "--data-dir", filepath.Join(dir, "data"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return sample{}, "", err
	}
	defer sess.Close()
	pid := cmd.Process.Pid
	c0, err := cpu(pid)
	if err != nil {
		return sample{}, "", err
	}
	var s sample
	done := make(chan error, 1)
	t0 := time.Now()
	go func() {
		params := &mcp.CallToolParams{Name: "fixture__flood", Arguments: map[string]any{"n": n}}
		params.SetProgressToken("host-1")
		res, err := sess.CallTool(ctx, params)
		if err == nil && res.IsError {
			err = fmt.Errorf("flood call: %v", res.Content)
		}
		s.wall = time.Since(t0)
		done <- err
	}()
	// A call made while the flood runs must still be answered.
	time.Sleep(100 * time.Millisecond)
	e0 := time.Now()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "fixture__echo", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		return sample{}, "", fmt.Errorf("echo during the flood: %v %v", err, res)
	}
	s.echo = time.Since(e0)
	if err := <-done; err != nil {
		return sample{}, "", err
	}
	c1, _ := cpu(pid)
	time.Sleep(time.Second)
	c2, _ := cpu(pid)
	s.cpu, s.cpuAfter = c1-c0, c2-c0
	return s, stderr.String(), nil
}

func bench(n, runs int, bin string) error {
	dir, err := os.MkdirTemp("", "bench-mcpflood-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin, err = benchbin.Aibuddy(dir, bin); err != nil {
		return err
	}
	var direct, ours []sample
	var lastLog string
	for range runs {
		d, err := runDirect(n)
		if err != nil {
			return err
		}
		a, log, err := runAibuddy(n, bin, dir)
		if err != nil {
			return err
		}
		direct, ours, lastLog = append(direct, d), append(ours, a), log
	}
	med := func(s []sample, f func(sample) time.Duration) float64 {
		v := make([]float64, len(s))
		for i, x := range s {
			v[i] = float64(f(x)) / float64(time.Millisecond)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	fmt.Printf("flood: %d notifications (message, progress, list_changed in turn) in one call; %d runs per side (medians)\n", n, runs)
	fmt.Printf("%-44s %10s %10s %8s\n", "", "direct", "aibuddy", "ratio")
	for _, row := range []struct {
		name string
		f    func(sample) time.Duration
	}{
		{"CPU of the process, call -> result", func(x sample) time.Duration { return x.cpu }},
		{"CPU of the process, call -> result + 1 s", func(x sample) time.Duration { return x.cpuAfter }},
		{"wall time of the flood call", func(x sample) time.Duration { return x.wall }},
	} {
		d, a := med(direct, row.f), med(ours, row.f)
		fmt.Printf("%-44s %7.0f ms %7.0f ms %8.2f\n", row.name, d, a, a/d)
	}
	fmt.Printf("aibuddy: a call made during the flood took %.0f ms\n", med(ours, func(x sample) time.Duration { return x.echo }))
	for _, line := range strings.Split(lastLog, "\n") {
		if strings.Contains(line, "notifications") {
			fmt.Println("aibuddy log:", line)
		}
	}
	return nil
}
