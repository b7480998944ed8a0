// Command mcpstartup measures what `aibuddy mcp` costs a host at start-up
// when one upstream MCP server offers many tools (issue 10): a fixture MCP
// server (this program with -role fixture, the Go MCP SDK's server over
// stdio) serves -n tools with realistic input schemas, and two whole
// processes list it:
//
//   - direct: an MCP Go SDK client process (this program with -role
//     direct) starts the fixture server and lists every tool (all pages);
//   - aibuddy: `aibuddy mcp --mcp-config` with the fixture server as its
//     one upstream, started by this process as the host, which waits for
//     the first tools/list answer, then calls tool_search (a query and a
//     select:) and one activated tool through call_tool.
//
// For each side it prints the median wall time from process start to the
// first tools/list answer (direct: to the full list), the peak RSS of the
// measured process (the direct client; aibuddy, without the fixture
// server each starts), and the ratios aibuddy/direct. It asserts the tool
// counts agree: the direct client lists -n tools, and aibuddy's tool_search
// defers -n tools from the fixture server and loads the one selected.
//
//	go run ./bench/mcpstartup [-n 10000] [-runs 5] [-aibuddy PATH]
//
// Without -aibuddy it builds ./cmd/aibuddy into a temporary folder first
// (run it from the repository root).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	role := flag.String("role", "", "internal: fixture (serve the tools) or direct (list them as a plain client)")
	n := flag.Int("n", 10000, "tools the fixture server offers")
	toolsFile := flag.String("tools", "", "internal: the JSON array of tools the fixture serves")
	runs := flag.Int("runs", 5, "runs of each side, alternating; medians are reported")
	aibuddy := flag.String("aibuddy", "", "aibuddy binary (default: go build ./cmd/aibuddy)")
	flag.Parse()
	var err error
	switch *role {
	case "fixture":
		err = serveFixture(*toolsFile)
	case "direct":
		err = listDirect(*toolsFile)
	case "":
		err = bench(*n, *runs, *aibuddy)
	default:
		err = fmt.Errorf("unknown -role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpstartup:", err)
		os.Exit(1)
	}
}

// fixtureTools builds n deterministic tools whose schemas look like those
// of real servers (GitHub, Jira, databases): 2 to 9 properties with
// descriptions, enums, bounds, formats, arrays of strings and of objects,
// nested objects with required fields, and now and then $defs with $ref.
func fixtureTools(n int) []*mcp.Tool {
	resources := []string{"issue", "pull_request", "repository", "branch", "commit", "release", "label", "milestone",
		"project", "workflow", "artifact", "secret", "webhook", "team", "member", "invoice", "customer", "ticket",
		"dashboard", "query", "table", "bucket", "object", "queue", "message", "calendar_event", "document", "page"}
	verbs := []string{"list", "get", "create", "update", "delete", "search", "archive", "restore", "export", "import",
		"assign", "close", "reopen", "merge", "sync", "count"}
	words := strings.Fields("the a of for with by from in to and or which that this each only when its all new " +
		"owner name identifier state filter sort order page size limit cursor after before since until label " +
		"title body content status priority assignee reviewer author date time zone region project scope token")
	rng := rand.New(rand.NewPCG(1, 2))
	sentence := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = words[rng.IntN(len(words))]
		}
		s := strings.Join(w, " ")
		return strings.ToUpper(s[:1]) + s[1:] + "."
	}
	prop := func(name string) map[string]any {
		p := map[string]any{"description": sentence(6 + rng.IntN(10))}
		switch rng.IntN(8) {
		case 0:
			p["type"] = "integer"
			p["minimum"] = 1
			p["maximum"] = 100
			p["default"] = 30
		case 1:
			p["type"] = "string"
			p["enum"] = []string{"open", "closed", "all"}
		case 2:
			p["type"] = "boolean"
		case 3:
			p["type"] = "array"
			p["items"] = map[string]any{"type": "string", "minLength": 1}
			p["maxItems"] = 50
		case 4:
			p["type"] = "string"
			p["format"] = "date-time"
		case 5:
			p["type"] = "object"
			p["properties"] = map[string]any{
				"key":   map[string]any{"type": "string", "description": sentence(5)},
				"value": map[string]any{"type": "string", "description": sentence(5)},
			}
			p["required"] = []string{"key"}
			p["additionalProperties"] = false
		case 6:
			p["type"] = "array"
			p["items"] = map[string]any{"type": "object", "properties": map[string]any{
				"path":    map[string]any{"type": "string", "description": sentence(4)},
				"line":    map[string]any{"type": "integer", "minimum": 1},
				"comment": map[string]any{"type": "string"},
			}, "required": []string{"path", "comment"}}
		default:
			p["type"] = "string"
			p["minLength"] = 1
			p["pattern"] = "^[A-Za-z0-9_.-]+$"
		}
		return p
	}
	paramNames := strings.Fields("owner repo number title body state labels assignees milestone sort direction " +
		"per_page page since until query ref sha path branch base head draft reason tag visibility")
	tools := make([]*mcp.Tool, 0, n)
	for i := range n {
		res, verb := resources[i%len(resources)], verbs[(i/len(resources))%len(verbs)]
		props := map[string]any{}
		var required []string
		k := 2 + rng.IntN(8)
		for _, j := range rng.Perm(len(paramNames))[:k] {
			props[paramNames[j]] = prop(paramNames[j])
			if rng.IntN(3) == 0 {
				required = append(required, paramNames[j])
			}
		}
		schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			slices.Sort(required)
			schema["required"] = required
		}
		if i%10 == 0 {
			schema["$defs"] = map[string]any{"Actor": map[string]any{"type": "object", "properties": map[string]any{
				"login": map[string]any{"type": "string"}, "id": map[string]any{"type": "integer"}}, "required": []string{"login"}}}
			props["actor"] = map[string]any{"$ref": "#/$defs/Actor", "description": sentence(5)}
		}
		tools = append(tools, &mcp.Tool{
			Name:        fmt.Sprintf("%s_%s_%05d", verb, res, i),
			Description: fmt.Sprintf("%s %s. %s %s", strings.ToUpper(verb[:1])+verb[1:], strings.ReplaceAll(res, "_", " "), sentence(8+rng.IntN(12)), sentence(6)),
			InputSchema: schema,
		})
	}
	return tools
}

// serveFixture serves the tools in the JSON array file path over stdio,
// in tools/list pages of pageSize (nextCursor is the next offset), and
// answers every call with its tool name and arguments. It speaks
// newline-delimited JSON-RPC itself rather than through the SDK's server:
// the SDK's AddTool re-encodes every schema, which would make the fixture,
// not the client, the cost being measured.
func serveFixture(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(b, &tools); err != nil {
		return err
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	send := func(id json.RawMessage, result any) error {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		if err != nil {
			return err
		}
		out.Write(b)
		out.WriteByte('\n')
		return out.Flush()
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string          `json:"protocolVersion"`
				Cursor          string          `json:"cursor"`
				Name            string          `json:"name"`
				Arguments       json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("fixture: bad frame: %v", err)
		}
		if len(m.ID) == 0 {
			continue // a notification
		}
		switch m.Method {
		case "initialize":
			err = send(m.ID, map[string]any{"protocolVersion": m.Params.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo":   map[string]any{"name": "fixture", "version": "1.0"}})
		case "tools/list":
			from, _ := strconv.Atoi(m.Params.Cursor)
			to := min(from+pageSize, len(tools))
			res := map[string]any{"tools": tools[from:to]}
			if to < len(tools) {
				res["nextCursor"] = strconv.Itoa(to)
			}
			err = send(m.ID, res)
		case "tools/call":
			err = send(m.ID, map[string]any{"content": []any{map[string]any{"type": "text",
				"text": "called " + m.Params.Name + " with " + string(m.Params.Arguments)}}})
		default:
			err = send(m.ID, map[string]any{})
		}
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// pageSize is the fixture's tools/list page, the Go SDK server's default.
const pageSize = mcp.DefaultPageSize

// self is the command line that runs this program with role over the
// tools file.
func self(role, tools string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, "-role", role, "-tools", tools), nil
}

// listDirect is the direct side: a plain SDK client lists every tool of
// the fixture server and prints the count as one JSON line.
func listDirect(tools string) error {
	ctx := context.Background()
	cmd, err := self("fixture", tools)
	if err != nil {
		return err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1.0"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer sess.Close()
	count := 0
	for _, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		count++
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]int{"tools": count})
}

type sample struct {
	ready  time.Duration // process start -> tools/list answered
	cpu    time.Duration // user + system CPU of the measured process, whole life
	search time.Duration // tool_search query + select: + one call (aibuddy only)
	rss    int64         // peak RSS of the measured process, bytes
	tools  int           // tools reachable: listed (direct) or deferred + listed MCP tools (aibuddy)
}

func runDirect(tools string) (sample, error) {
	cmd, err := self("direct", tools)
	if err != nil {
		return sample{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return sample{}, err
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	ready := time.Since(start)
	if err != nil {
		_ = cmd.Wait()
		return sample{}, fmt.Errorf("direct client: %v", err)
	}
	var got struct{ Tools int }
	if err := json.Unmarshal(line, &got); err != nil {
		return sample{}, err
	}
	if err := cmd.Wait(); err != nil {
		return sample{}, fmt.Errorf("direct client: %v", err)
	}
	rss, cpu := usage(cmd)
	return sample{ready: ready, rss: rss, cpu: cpu, tools: got.Tools}, nil
}

var deferredFrom = regexp.MustCompile(`fixture \((\d+)\)`)

func runAibuddy(tools []*mcp.Tool, toolsFile, bin, dir string) (sample, error) {
	ctx := context.Background()
	fixture, err := self("fixture", toolsFile)
	if err != nil {
		return sample{}, err
	}
	cfg := filepath.Join(dir, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fixture": map[string]any{"command": fixture.Path, "args": fixture.Args[1:]}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		return sample{}, err
	}
	// The settings only raise mcp.startupWait (default 5 s), so that a
	// slow start on a loaded machine is measured instead of answered
	// without the fixture's tools.
	settings := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(settings, []byte(`{"mcp":{"startupWait":"120s","initTimeout":"120s"}}`), 0o600); err != nil {
		return sample{}, err
	}
	cmd := exec.Command(bin, "mcp", "--config", settings, "--mcp-config", cfg, "--workspace", dir, "--data-dir", filepath.Join(dir, "data"))
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0"}, nil)
	start := time.Now()
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return sample{}, err
	}
	first, err := sess.ListTools(ctx, nil)
	ready := time.Since(start)
	if err != nil {
		_ = sess.Close()
		return sample{}, err
	}
	s := sample{ready: ready}
	for _, t := range first.Tools {
		if strings.HasPrefix(t.Name, "fixture__") {
			s.tools++
		}
		if t.Name == "tool_search" {
			if m := deferredFrom.FindStringSubmatch(t.Description); m != nil {
				d, _ := strconv.Atoi(m[1])
				s.tools += d
			}
		}
	}
	// The first tool_search answer and activation, then a call of the
	// activated tool: what a host does next.
	last := tools[len(tools)-1]
	schema := last.InputSchema.(map[string]any)
	t0 := time.Now()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search",
		Arguments: map[string]any{"query": last.Description}})
	if err == nil && res.IsError {
		err = fmt.Errorf("tool_search: %s", text(res))
	}
	if err == nil {
		res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search",
			Arguments: map[string]any{"query": "select:fixture__" + last.Name}})
	}
	if err == nil && (res.IsError || !strings.Contains(text(res), "fixture__"+last.Name)) {
		err = fmt.Errorf("tool_search select: did not load %s: %s", last.Name, text(res))
	}
	if err == nil {
		args := map[string]any{}
		req, _ := schema["required"].([]string)
		for _, r := range req {
			args[r] = sampleValue(schema["properties"].(map[string]any)[r].(map[string]any))
		}
		res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool",
			Arguments: map[string]any{"name": "fixture__" + last.Name, "arguments": args}})
		if err == nil && (res.IsError || !strings.Contains(text(res), "called "+last.Name)) {
			err = fmt.Errorf("call of %s: %s", last.Name, text(res))
		}
	}
	s.search = time.Since(t0)
	if cerr := sess.Close(); err == nil && cerr != nil && cmd.ProcessState == nil {
		err = cerr
	}
	if err != nil {
		return sample{}, err
	}
	s.rss, s.cpu = usage(cmd)
	return s, nil
}

// sampleValue is a value valid for one generated property schema.
func sampleValue(p map[string]any) any {
	if e, ok := p["enum"].([]string); ok {
		return e[0]
	}
	switch p["type"] {
	case "integer":
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return map[string]any{"key": "k"}
	case nil: // $ref Actor
		return map[string]any{"login": "octocat"}
	}
	if p["format"] == "date-time" {
		return "2025-01-02T03:04:05Z"
	}
	return "x"
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// usage is the peak RSS (bytes) and the CPU time of an ended process.
func usage(cmd *exec.Cmd) (int64, time.Duration) {
	if cmd.ProcessState == nil {
		return 0, 0
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() // Maxrss is KiB on linux
	}
	return 0, 0
}

func bench(n, runs int, bin string) error {
	dir, err := os.MkdirTemp("", "bench-mcpstartup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin, err = benchbin.Aibuddy(dir, bin); err != nil {
		return err
	}
	tools := fixtureTools(n)
	b, err := json.Marshal(tools)
	if err != nil {
		return err
	}
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, b, 0o600); err != nil {
		return err
	}
	var direct, ours []sample
	for i := range runs + 1 { // the first round warms the caches and is not counted
		d, err := runDirect(toolsFile)
		if err != nil {
			return err
		}
		a, err := runAibuddy(tools, toolsFile, bin, dir)
		if err != nil {
			return err
		}
		if d.tools != n || a.tools != n {
			return fmt.Errorf("tool counts differ: fixture offers %d, direct client listed %d, aibuddy reaches %d", n, d.tools, a.tools)
		}
		if i > 0 {
			direct, ours = append(direct, d), append(ours, a)
		}
	}
	med := func(s []sample, f func(sample) float64) float64 {
		v := make([]float64, len(s))
		for i, x := range s {
			v[i] = f(x)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	dReady, aReady := med(direct, func(x sample) float64 { return ms(x.ready) }), med(ours, func(x sample) float64 { return ms(x.ready) })
	dCPU, aCPU := med(direct, func(x sample) float64 { return ms(x.cpu) }), med(ours, func(x sample) float64 { return ms(x.cpu) })
	mib := func(x sample) float64 { return float64(x.rss) / (1 << 20) }
	dRSS, aRSS := med(direct, mib), med(ours, mib)
	aSearch := med(ours, func(x sample) float64 { return ms(x.search) })
	fmt.Printf("fixture server: %d tools, %.1f MB of tools/list in pages of %d; %d runs per side (medians)\n",
		n, float64(len(b))/1e6, pageSize, runs)
	fmt.Printf("%-36s %12s %12s %8s\n", "", "direct", "aibuddy", "ratio")
	fmt.Printf("%-36s %9.0f ms %9.0f ms %8.2f\n", "start -> first tools/list answer", dReady, aReady, aReady/dReady)
	fmt.Printf("%-36s %9.0f ms %9.0f ms %8.2f\n", "CPU of the process (user+sys)", dCPU, aCPU, aCPU/dCPU)
	fmt.Printf("%-36s %8.1f MiB %8.1f MiB %8.2f\n", "peak RSS of the process", dRSS, aRSS, aRSS/dRSS)
	fmt.Printf("%-36s %12d %12d\n", "tools reachable", direct[0].tools, ours[0].tools)
	fmt.Printf("aibuddy: tool_search query + select: + one call_tool: %.0f ms\n", aSearch)
	return nil
}
