// Command mcpproxy measures what one call through `aibuddy mcp` adds over
// calling the same tool without it, process against process.
//
// A host (an MCP Go SDK client in this process) holds two stdio sessions
// open at once and calls them in alternation, the same calls on both:
//
//   - mode "echo": the direct side is an MCP server process with an echo
//     tool (this program re-executed as a Go fixture server, or with
//     -upstream everything the reference server
//     node_modules/@modelcontextprotocol/server-everything); the proxy side
//     is an `aibuddy mcp` process configured with that same server
//     (--mcp-config), called as fx__echo. It measures the whole gateway:
//     the second hop plus the records aibuddy keeps of every call.
//   - mode "builtin": aibuddy's own ls tool, served by `aibuddy mcp` (which
//     records every call) and by this program re-executed as the same
//     gateway (mcpserver over the built-in registry and a local sandbox)
//     without the recorder. It measures the records alone.
//
// For each side it prints the median and p99 latency of one call (request
// written to response read, as the host sees it), the added median in
// microseconds and the ratio proxy/direct, and asserts that every side
// returned the same content for every call. With -against OLD a second
// aibuddy binary is a third side of the same run (before/after side by
// side, under the same load).
//
//	go run ./bench/mcpproxy                     # both modes, 2,000 calls each
//	go run ./bench/mcpproxy -mode echo -n 5000 -upstream everything
//	go run ./bench/mcpproxy -aibuddy ./aibuddy  # an existing binary
//	go run ./bench/mcpproxy -against ./aibuddy-main
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/skills"
)

// envServe makes this program an MCP server on stdio: "echo" or
// "builtin:<workspace>".
const envServe = "MCPPROXY_SERVE"

func main() {
	if v := os.Getenv(envServe); v != "" {
		if err := serve(v); err != nil {
			fmt.Fprintln(os.Stderr, "mcpproxy server:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 2000, "timed calls per side and mode")
	warm := flag.Int("warmup", 100, "untimed calls per side first")
	mode := flag.String("mode", "both", "echo, builtin or both")
	upstream := flag.String("upstream", "go", "echo server: go (this program as a fixture) or everything (node server-everything)")
	bin := flag.String("aibuddy", "", "aibuddy binary (default: go build ./cmd/aibuddy into a temporary folder)")
	against := flag.String("against", "", "a second aibuddy binary (another commit) measured in the same run, as a third side")
	flag.StringVar(&recordsSync, "sync", "", `aibuddy's records.sync setting: "normal" or "full" (default: aibuddy's default)`)
	flag.Parse()
	if err := run(*n, *warm, *mode, *upstream, *bin, *against); err != nil {
		fmt.Fprintln(os.Stderr, "mcpproxy:", err)
		os.Exit(1)
	}
}

// recordsSync is the -sync flag.
var recordsSync string

// settingsArgs writes aibuddy's settings into dir and returns the flags
// that pass them: records.sync when -sync is given, and count gates wide
// enough that every upstream tool is listed directly (server-everything
// has more tools than the default gate of 10 per server; the bench
// measures proxying, not discovery).
func settingsArgs(dir string) ([]string, error) {
	cfg := map[string]any{"discovery": map[string]any{"perServer": 1000, "total": 1000}}
	if recordsSync != "" {
		cfg["records"] = map[string]any{"sync": recordsSync}
	}
	p := filepath.Join(dir, "aibuddy.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return nil, err
	}
	return []string{"--config", p}, nil
}

func run(n, warm int, mode, upstream, bin, against string) error {
	tmp, err := os.MkdirTemp("", "mcpproxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin, err = benchbin.Aibuddy(tmp, bin); err != nil {
		return err
	}
	bins := []string{bin}
	if against != "" {
		a, err := filepath.Abs(against)
		if err != nil {
			return err
		}
		bins = append(bins, a)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx := context.Background()
	if mode == "echo" || mode == "both" {
		if err := benchEcho(ctx, n, warm, tmp, bins, self, upstream); err != nil {
			return fmt.Errorf("echo: %w", err)
		}
	}
	if mode == "builtin" || mode == "both" {
		if err := benchBuiltin(ctx, n, warm, tmp, bins, self); err != nil {
			return fmt.Errorf("builtin: %w", err)
		}
	}
	return nil
}

// echoServer is the command line of the echo server.
func echoServer(self, upstream string) (string, []string, []string, error) {
	switch upstream {
	case "go":
		return self, nil, []string{envServe + "=echo"}, nil
	case "everything":
		wd, _ := os.Getwd()
		js := filepath.Join(wd, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
		if _, err := os.Stat(js); err != nil {
			return "", nil, nil, fmt.Errorf("server-everything not found (run from the repository root): %w", err)
		}
		return "node", []string{js, "stdio"}, nil, nil
	}
	return "", nil, nil, fmt.Errorf("-upstream %q: want go or everything", upstream)
}

func benchEcho(ctx context.Context, n, warm int, tmp string, bins []string, self, upstream string) error {
	cmdName, args, env, err := echoServer(self, upstream)
	if err != nil {
		return err
	}
	dir := filepath.Join(tmp, "echo")
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o700); err != nil {
		return err
	}
	envMap := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envMap[k] = v
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fx": map[string]any{"command": cmdName, "args": args, "env": envMap}}})
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return err
	}

	dc := exec.Command(cmdName, args...)
	dc.Env = append(os.Environ(), env...)
	direct, err := connect(ctx, dc, "echo")
	if err != nil {
		return fmt.Errorf("direct server: %w", err)
	}
	defer direct.Close()
	extra, err := settingsArgs(dir)
	if err != nil {
		return err
	}
	sides := []side{{direct, "echo", dc}}
	for k, b := range bins {
		pc := exec.Command(b, append([]string{"mcp", "--mcp-config", cfgPath, "--data-dir", filepath.Join(dir, fmt.Sprint("data", k)), "--workspace", filepath.Join(dir, "ws")}, extra...)...)
		proxy, err := connect(ctx, pc, "fx__echo")
		if err != nil {
			return fmt.Errorf("aibuddy mcp (%s): %w", b, err)
		}
		defer proxy.Close()
		sides = append(sides, side{proxy, "fx__echo", pc})
	}
	call := func(i int) map[string]any { return map[string]any{"message": fmt.Sprintf("hello %d", i)} }
	got, err := measure(ctx, n, warm, sides, call)
	if err != nil {
		return err
	}
	report(fmt.Sprintf("echo (%s upstream): direct server vs aibuddy mcp --mcp-config", upstream), n, got)
	return nil
}

func benchBuiltin(ctx context.Context, n, warm int, tmp string, bins []string, self string) error {
	dir := filepath.Join(tmp, "builtin")
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return err
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("file%02d.txt", i)), []byte("x\n"), 0o600); err != nil {
			return err
		}
	}
	dc := exec.Command(self)
	dc.Env = append(os.Environ(), envServe+"=builtin:"+ws)
	direct, err := connect(ctx, dc, "ls")
	if err != nil {
		return fmt.Errorf("direct gateway: %w", err)
	}
	defer direct.Close()
	extra, err := settingsArgs(dir)
	if err != nil {
		return err
	}
	sides := []side{{direct, "ls", dc}}
	for k, b := range bins {
		pc := exec.Command(b, append([]string{"mcp", "--data-dir", filepath.Join(dir, fmt.Sprint("data", k)), "--workspace", ws}, extra...)...)
		proxy, err := connect(ctx, pc, "ls")
		if err != nil {
			return fmt.Errorf("aibuddy mcp (%s): %w", b, err)
		}
		defer proxy.Close()
		sides = append(sides, side{proxy, "ls", pc})
	}
	call := func(i int) map[string]any { return map[string]any{"path": "."} }
	got, err := measure(ctx, n, warm, sides, call)
	if err != nil {
		return err
	}
	report("builtin ls: the same gateway without records vs aibuddy mcp", n, got)
	return nil
}

// connect starts cmd as an MCP server and waits until it lists tool want.
func connect(ctx context.Context, cmd *exec.Cmd, want string) (*mcp.ClientSession, error) {
	// cmd.Process is set once Connect has started it; side reads it.
	cmd.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpproxy-bench", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := s.ListTools(ctx, nil)
		if err != nil {
			s.Close()
			return nil, err
		}
		for _, t := range res.Tools {
			if t.Name == want {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("tool %s not listed after 30 s", want)
		}
		time.Sleep(50 * time.Millisecond) // upstream servers join after initialize
	}
}

// side is one server under measurement.
type side struct {
	s    *mcp.ClientSession
	tool string
	cmd  *exec.Cmd
}

// sample is one side's measurements: the latency of each timed call and
// the server process's CPU time over them (-1 when unknown).
type sample struct {
	lat []time.Duration
	cpu time.Duration
}

// measure calls every session in turn (warm untimed, then n timed each;
// the side that goes first rotates) and returns the latencies of each;
// every call's results must hold the same content on all sides.
func measure(ctx context.Context, n, warm int, sides []side,
	args func(i int) map[string]any) ([]sample, error) {
	out := make([]sample, len(sides))
	one := func(sd side, a map[string]any) (string, time.Duration, error) {
		t0 := time.Now()
		res, err := sd.s.CallTool(ctx, &mcp.CallToolParams{Name: sd.tool, Arguments: a})
		el := time.Since(t0)
		if err != nil {
			return "", 0, err
		}
		if res.IsError {
			return "", 0, fmt.Errorf("%s returned an error: %s", sd.tool, text(res))
		}
		return text(res), el, nil
	}
	cpu := make([]time.Duration, len(sides))
	texts := make([]string, len(sides))
	lats := make([]time.Duration, len(sides))
	for i := range warm + n {
		if i == warm {
			for j, sd := range sides {
				cpu[j] = cpuTime(sd.cmd)
			}
		}
		a := args(i)
		// Rotate which side goes first, so none always runs on a cache
		// another warmed.
		for k := range sides {
			j := (i + k) % len(sides)
			var err error
			if texts[j], lats[j], err = one(sides[j], a); err != nil {
				return nil, fmt.Errorf("call %d (side %d): %w", i, j, err)
			}
		}
		for j := 1; j < len(sides); j++ {
			if texts[j] != texts[0] {
				return nil, fmt.Errorf("call %d: results differ:\ndirect: %q\nside %d: %q", i, texts[0], j, texts[j])
			}
		}
		if i >= warm {
			for j := range sides {
				out[j].lat = append(out[j].lat, lats[j])
			}
		}
	}
	for j, sd := range sides {
		out[j].cpu = since(cpu[j], cpuTime(sd.cmd))
	}
	return out, nil
}

func since(a, b time.Duration) time.Duration {
	if a < 0 || b < 0 {
		return -1
	}
	return b - a
}

// cpuTime is the user+system CPU time of the process so far, from
// /proc/<pid>/stat (Linux; -1 elsewhere). Its own threads only, not its
// children.
func cpuTime(cmd *exec.Cmd) time.Duration {
	if cmd.Process == nil {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return -1
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15, in clock ticks (USER_HZ, 100 on Linux).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return -1
	}
	var ut, st int64
	if _, err := fmt.Sscan(f[11], &ut); err != nil {
		return -1
	}
	if _, err := fmt.Sscan(f[12], &st); err != nil {
		return -1
	}
	return time.Duration(ut+st) * (time.Second / 100)
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func report(title string, n int, got []sample) {
	d := got[0]
	dm, d99 := quantile(d.lat, 0.5), quantile(d.lat, 0.99)
	cpu := func(c time.Duration) string {
		if c < 0 {
			return "?"
		}
		return us(c / time.Duration(n))
	}
	names := []string{"direct", "aibuddy", "against"}
	fmt.Printf("%s, %d calls each, results equal\n", title, n)
	fmt.Printf("  %-8s median %9s  p99 %9s  server CPU/call %8s\n", names[0], us(dm), us(d99), cpu(d.cpu))
	for j, p := range got[1:] {
		pm, p99 := quantile(p.lat, 0.5), quantile(p.lat, 0.99)
		own := "?"
		if d.cpu >= 0 && p.cpu >= 0 {
			own = us((p.cpu - d.cpu) / time.Duration(n))
		}
		fmt.Printf("  %-8s median %9s  p99 %9s  server CPU/call %8s | added median %9s  p99 %9s  CPU %8s  ratio %.2f\n",
			names[j+1], us(pm), us(p99), cpu(p.cpu), us(pm-dm), us(p99-d99), own, float64(pm)/float64(dm))
	}
	pm := quantile(got[1].lat, 0.5)
	verdict := "met"
	if pm-dm > goalAdded {
		verdict = "NOT met"
	}
	fmt.Printf("  goal (issue 10): at most %s added per call: %s (aibuddy added median %s)\n", us(goalAdded), verdict, us(pm-dm))
	if len(got) > 2 {
		am := quantile(got[2].lat, 0.5)
		fmt.Printf("  aibuddy vs against: added median %s vs %s\n", us(pm-dm), us(am-dm))
	}
}

// goalAdded is issue 10's goal for aibuddy's own time per call through
// `aibuddy mcp`: the median latency it adds over the direct side.
const goalAdded = 100 * time.Microsecond

// serve runs this program as a stdio MCP server.
func serve(what string) error {
	ctx := context.Background()
	switch {
	case what == "echo":
		// The echo tool of server-everything: "Echo: <message>".
		s := mcp.NewServer(&mcp.Implementation{Name: "mcpproxy-echo", Version: "1"}, nil)
		type in struct {
			Message string `json:"message" jsonschema:"the message to echo"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes back the input"},
			func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + a.Message}}}, nil, nil
			})
		return s.Run(ctx, &mcp.StdioTransport{})
	case strings.HasPrefix(what, "builtin:"):
		ws := strings.TrimPrefix(what, "builtin:")
		sb, err := localsandbox.New(ws, nil)
		if err != nil {
			return err
		}
		data, err := os.MkdirTemp("", "mcpproxy-direct-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(data)
		cfg := &config.Config{}
		reg := cli.BuiltinRegistry(cfg, data, emptySkills())
		set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb})
		if err != nil {
			return err
		}
		// The same approval policy as aibuddy mcp's default: the gate
		// runs on both sides.
		return mcpserver.New(set, &mcpserver.Options{Pipeline: pipeline.New(&pipeline.Options{Policy: cli.Policy(cfg)})}).Run(ctx, &mcp.StdioTransport{})
	}
	return errors.New(envServe + ": want echo or builtin:<workspace>")
}

func emptySkills() *skills.Catalog {
	cat, _ := skills.Load(nil)
	return cat
}
