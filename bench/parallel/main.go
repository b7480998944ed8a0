// Command parallel measures what running the read-only calls of one model
// turn at once saves: a turn of 4 reads of 50 ms each against a turn of
// one such read, through agent.Run (issue 14: "a turn of 4 reads of 50 ms
// each takes ≤ 1.3× one read, not 4×").
//
// Every part is real except the model: the agent drives the calls
// through the pipeline (records in a SQLite store, Parameters,
// Authorization, Verification, projection) to an MCP server process
// (this program re-executed, on stdio, through mcpclient) whose
// slow_read tool (readOnlyHint) returns a file's bytes after -work (a
// read on a slow network file system); the model is the Anthropic
// adapter talking HTTP to a local server that replays a turn with the
// calls, then an answer. Both sides do the same work per call.
//
// For each side it prints the median and the slowest of -runs batches (the
// time from the turn's first tool_call event to its last tool_result
// event, as a client of the run sees it) and the ratio to one read; a
// third side runs the 4 reads with agent.maxParallelCalls 1, what the
// agent did before. It exits 1 when a call fails or a result is not the
// file's content.
//
//	go run ./bench/parallel                 # 4 reads of 50 ms, 20 runs per side
//	go run ./bench/parallel -n 8 -runs 50   # 8 reads a turn
//	go run ./bench/parallel -work 200ms
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// envServe makes this program the MCP server: its value is the work time
// of one read (a Go duration).
const envServe = "PARALLEL_BENCH_SERVE"

func main() {
	if v := os.Getenv(envServe); v != "" {
		if err := serve(v); err != nil {
			fmt.Fprintln(os.Stderr, "parallel server:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 4, "reads in the parallel turn")
	runs := flag.Int("runs", 20, "timed turns per side")
	work := flag.Duration("work", 50*time.Millisecond, "time one read takes in the MCP server")
	flag.Parse()
	if err := run(*n, *runs, *work); err != nil {
		fmt.Fprintln(os.Stderr, "parallel:", err)
		os.Exit(1)
	}
}

// serve runs the MCP server: slow_read {"path"} returns the file's bytes
// work after the call arrived.
func serve(workArg string) error {
	work, err := time.ParseDuration(workArg)
	if err != nil {
		return err
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "parallel-bench", Version: "1"}, nil)
	type in struct {
		Path string `json:"path" jsonschema:"the file to read"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "slow_read", Description: "Read a file from slow storage.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			t := time.NewTimer(work)
			defer t.Stop()
			b, err := os.ReadFile(a.Path)
			if err != nil {
				return nil, nil, err
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	return s.Run(context.Background(), &mcp.StdioTransport{})
}

// replay is the model API: each request is answered by the next body of
// script, round after round (a turn with the calls, then the answer).
type replay struct {
	mu     sync.Mutex
	script []string
	next   int
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	body := r.script[r.next%len(r.script)]
	r.next++
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, body)
}

// sse frames Anthropic Messages stream events.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		typ := e[len(`{"type":"`):]
		typ = typ[:strings.IndexByte(typ, '"')]
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, e)
	}
	return b.String()
}

const msgStart = `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":1}}}`

// callTurn is a streamed turn that reads each of paths with
// fx__slow_read.
func callTurn(paths []string) string {
	evs := []string{msgStart}
	for i, p := range paths {
		evs = append(evs,
			fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d","name":"fx__slow_read","input":{}}}`, i, i),
			fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%q}}`, i, fmt.Sprintf(`{"path":%q}`, p)),
			fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	evs = append(evs, `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":60}}`, `{"type":"message_stop"}`)
	return sse(evs...)
}

var answer = sse(msgStart,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Read."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`,
	`{"type":"message_stop"}`)

// side is one way of running the turn.
type side struct {
	name  string
	reads int
	limit int // agent.maxParallelCalls; 0 the default
}

func run(n, runs int, work time.Duration) error {
	dir, err := os.MkdirTemp("", "parallel-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return err
	}
	var paths []string
	want := map[string]string{}
	for i := range n {
		p := filepath.Join(ws, fmt.Sprintf("file%d.txt", i))
		content := strings.Repeat(fmt.Sprintf("line %d of file %d\n", i, i), 100)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
		paths = append(paths, p)
		want[p] = content
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx := context.Background()
	mgr := mcpclient.Connect(ctx, []mcpclient.ServerConfig{{Name: "fx", Type: "stdio", Command: self,
		Env: map[string]string{envServe: work.String()}}}, &mcpclient.Options{})
	defer mgr.Close()
	tools := mgr.Tools()["fx"]
	if len(tools) != 1 {
		return fmt.Errorf("the MCP server did not connect: %+v", mgr.Servers())
	}
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		return err
	}
	defer sb.Close()
	reg := registry.New(coretools.Groups(nil, nil), coretools.Metas, nil)
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb,
		MCP: []capability.MCPServer{{Name: "fx", Connected: true, Tools: tools}}})
	if err != nil {
		return err
	}
	st, err := sqlitestore.Open(filepath.Join(dir, "records.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()

	sides := []side{{"1 read", 1, 0}, {fmt.Sprintf("%d reads", n), n, 0}, {fmt.Sprintf("%d reads, maxParallelCalls 1", n), n, 1}}
	fmt.Printf("one read: %s in the MCP server process; %d timed turns per side (after 2 untimed), median and slowest batch\n\n", work, runs)
	fmt.Printf("%-32s %10s %10s %8s\n", "side", "median", "slowest", "ratio")
	var base time.Duration
	for _, sd := range sides {
		api := &replay{script: []string{callTurn(paths[:sd.reads]), answer}}
		srv := httptest.NewServer(api)
		model := anthropicmodel.New(anthropicmodel.Options{APIKey: "bench", BaseURL: srv.URL, Model: "claude-sonnet-4-5",
			MaxTokens: 1024, MaxRetries: -1, Strategy: provider.ActiveTools})
		a := agent.New(agent.Options{Model: model, ModelName: "claude-sonnet-4-5", Set: set, Store: st, Workspace: ws,
			MaxParallelCalls: sd.limit})
		var times []time.Duration
		for i := range runs + 2 {
			d, err := turn(ctx, a, want)
			if err != nil {
				srv.Close()
				return fmt.Errorf("%s: %w", sd.name, err)
			}
			if i >= 2 {
				times = append(times, d)
			}
		}
		srv.Close()
		slices.Sort(times)
		med := times[len(times)/2]
		if base == 0 {
			base = med
		}
		fmt.Printf("%-32s %10s %10s %7.2fx\n", sd.name, med.Round(10*time.Microsecond), times[len(times)-1].Round(10*time.Microsecond),
			float64(med)/float64(base))
	}
	fmt.Printf("\ngoal: %d reads ≤ 1.3x one read\n", n)
	return nil
}

// turn runs one task and returns the time from its first tool_call event
// to its last tool_result event; every result must be its file's content.
func turn(ctx context.Context, a *agent.Agent, want map[string]string) (time.Duration, error) {
	var first, last time.Time
	for ev, err := range a.Run(ctx, "read the files") {
		switch ev.Kind {
		case agent.EventToolCall:
			if first.IsZero() {
				first = time.Now()
			}
		case agent.EventToolResult:
			last = time.Now()
			var in struct{ Path string }
			if e := json.Unmarshal(ev.Input, &in); e != nil {
				return 0, e
			}
			if ev.Result.IsError || len(ev.Result.Content) == 0 || ev.Result.Content[0].Text != want[in.Path] {
				return 0, fmt.Errorf("call %s (%s): not the file's content: %+v", ev.CallID, in.Path, ev.Result)
			}
		case agent.EventDone:
			if err != nil {
				return 0, err
			}
			if ev.Summary.Stop != agent.StopEndTurn {
				return 0, errors.New("the run stopped with " + string(ev.Summary.Stop))
			}
		}
	}
	return last.Sub(first), nil
}
