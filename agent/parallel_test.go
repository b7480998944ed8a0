package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
	"github.com/aibuddy/aibuddy/provider/chatmodel"
	"github.com/aibuddy/aibuddy/provider/openaimodel"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// These tests drive batches of parallel tool calls (issue 14 item 1, case
// file 10-parallel-calls.md) through agent.Run with the real adapters
// against replayed provider streams, the real filesystem tools on a local
// sandbox and an in-process MCP server, fx, whose tools take a set time.
// Durations are fake time (testing/synctest): what a test asserts about
// time is exact, and nothing sleeps for real.

// fx is an MCP server as a run sees it: fx__slow (read-only) and
// fx__plain (no annotations) take dur[name] and answer "result of
// <name>"; fx__fail fails at once; fx__stall waits for cancellation;
// fx__stuck prints "partial-bytes" and then ignores cancellation until
// release is closed.
type fx struct {
	mu      sync.Mutex
	dur     map[string]time.Duration
	release chan struct{}
}

func (f *fx) server() capability.MCPServer {
	ro := &tool.Annotations{ReadOnlyHint: true}
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"additionalProperties":false}`)
	name := func(call *tool.Call) string {
		var in struct{ Name string }
		_ = json.Unmarshal(call.Input, &in)
		return in.Name
	}
	work := func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		n := name(call)
		f.mu.Lock()
		d := f.dur[n]
		f.mu.Unlock()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return tool.Text("result of " + n), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	tools := []*tool.Tool{
		tool.MustDefine(tool.Spec{Name: "fx__slow", Description: "Look something up (read-only).", InputSchema: schema, Annotations: ro, Handler: work}),
		tool.MustDefine(tool.Spec{Name: "fx__plain", Description: "Do something (no annotations).", InputSchema: schema, Handler: work}),
		tool.MustDefine(tool.Spec{Name: "fx__fail", Description: "Fail.", InputSchema: schema, Annotations: ro,
			Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
				return nil, tool.Errorf(tool.Execution, "fx__fail: the upstream refused %q", name(call))
			}}),
		tool.MustDefine(tool.Spec{Name: "fx__stall", Description: "Stall until cancelled.", InputSchema: schema, Annotations: ro,
			Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}}),
		tool.MustDefine(tool.Spec{Name: "fx__stuck", Description: "Ignore cancellation.", InputSchema: schema, Annotations: ro,
			Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
				call.Emit(tool.Event{Kind: tool.EventStdout, Data: []byte("partial-bytes")})
				<-f.release
				return tool.Text("too late"), nil
			}}),
	}
	return capability.MCPServer{Name: "fx", Connected: true, Tools: tools}
}

// fxSet is the built-in filesystem and execute tools on a local sandbox in
// ws, fx's tools, and the tracker's 12 (deferred: tool_search is there).
func fxSet(t *testing.T, ws string, f *fx) *capability.Set {
	t.Helper()
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	reg := registry.New(coretools.Groups(nil, nil), coretools.Metas, nil)
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb, MCP: []capability.MCPServer{f.server(), (&tracker{}).server()}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// inMemory is an http.RoundTripper that serves each request with h in
// the caller's goroutine: the adapters' real HTTP clients, no socket, so
// a synctest bubble holds the whole exchange.
type inMemory struct{ h http.Handler }

func (m inMemory) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// wcall is one tool call a replayed model turn makes.
type wcall struct{ id, name, input string }

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// wireKinds are the three wire formats the batch tests replay.
var wireKinds = []string{"anthropic", "responses", "chat"}

func chatChunk(choice string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"llama3","system_fingerprint":"fp_1","choices":[` + choice + `],"usage":null}`
}

const chatUsage = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"llama3","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}}`

func chatSSE(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// callTurn is one streamed model turn that makes calls, in kind's wire
// format (Anthropic Messages, OpenAI Responses, Chat Completions streams
// as their API references give them).
func callTurn(kind string, calls []wcall) string {
	switch kind {
	case "anthropic":
		evs := []string{anthStart}
		for i, c := range calls {
			evs = append(evs,
				fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}`, i, js(c.id), js(c.name)),
				fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, js(c.input)),
				fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		}
		evs = append(evs, `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":60}}`, anthStop)
		return sseEvents(evs...)
	case "responses":
		evs := []string{`{"type":"response.created","sequence_number":0,"response":` + oaResponse("in_progress", "") + `}`}
		seq := 1
		var items []string
		for i, c := range calls {
			added := fmt.Sprintf(`{"id":"fc_%d","type":"function_call","status":"in_progress","arguments":"","call_id":%s,"name":%s}`, i, js(c.id), js(c.name))
			done := fmt.Sprintf(`{"id":"fc_%d","type":"function_call","status":"completed","arguments":%s,"call_id":%s,"name":%s}`, i, js(c.input), js(c.id), js(c.name))
			evs = append(evs, oaItem("added", seq, i, added),
				fmt.Sprintf(`{"type":"response.function_call_arguments.done","sequence_number":%d,"item_id":"fc_%d","output_index":%d,"arguments":%s}`, seq+1, i, i, js(c.input)),
				oaItem("done", seq+2, i, done))
			seq += 3
			items = append(items, done)
		}
		evs = append(evs, fmt.Sprintf(`{"type":"response.completed","sequence_number":%d,"response":%s}`, seq, oaResponse("completed", strings.Join(items, ","))))
		return sseEvents(evs...)
	default:
		var chunks []string
		for i, c := range calls {
			chunks = append(chunks, chatChunk(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}]},"logprobs":null,"finish_reason":null}`,
				i, js(c.id), js(c.name), js(c.input))))
		}
		chunks = append(chunks, chatChunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}`), chatUsage)
		return chatSSE(chunks...)
	}
}

// answerTurn is a streamed final answer in kind's wire format ("Issue 7
// is open.").
func answerTurn(kind string) string {
	switch kind {
	case "anthropic":
		return anthropicReplay[1]
	case "responses":
		return openAIReplay[1]
	default:
		return chatSSE(chatChunk(`{"index":0,"delta":{"role":"assistant","content":"Issue 7 is open."},"logprobs":null,"finish_reason":null}`),
			chatChunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}`), chatUsage)
	}
}

// wireModel is kind's real adapter over an in-memory replay of turns.
func wireModel(t *testing.T, kind string, turns ...string) (provider.Model, *wire) {
	t.Helper()
	client := &http.Client{}
	zero := 0
	switch kind {
	case "anthropic":
		api := &wire{t: t, path: "/v1/messages", replay: turns}
		client.Transport = inMemory{api}
		return anthropicmodel.New(anthropicmodel.Options{APIKey: "test-key", BaseURL: "http://wire.test", Model: "claude-sonnet-4-5",
			MaxTokens: 1024, MaxRetries: -1, HTTPClient: client, Strategy: provider.ActiveTools}), api
	case "responses":
		api := &wire{t: t, path: "/v1/responses", replay: turns}
		client.Transport = inMemory{api}
		return openaimodel.New(openaimodel.Options{APIKey: "sk-test", BaseURL: "http://wire.test/v1/", Model: "gpt-5.4",
			HTTPClient: client, MaxRetries: &zero, Strategy: provider.ActiveTools}), api
	default:
		api := &wire{t: t, path: "/v1/chat/completions", replay: turns}
		client.Transport = inMemory{api}
		return chatmodel.New(chatmodel.Options{APIKey: "local", BaseURL: "http://wire.test/v1/", Model: "llama3",
			HTTPClient: client, MaxRetries: &zero}), api
	}
}

// wireResult is one tool result as a request carries it.
type wireResult struct {
	ID      string
	Text    string
	IsError bool
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, p := range x {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// resultsOf returns the tool results of a request body in the order the
// body holds them, and the index of the user message (Anthropic) or item
// or message (OpenAI) of each.
func resultsOf(t *testing.T, kind string, body []byte) (out []wireResult, at []int) {
	t.Helper()
	var req struct {
		Messages []map[string]any `json:"messages"`
		Input    []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	switch kind {
	case "anthropic":
		for i, m := range req.Messages {
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				if bm["type"] == "tool_result" {
					isErr, _ := bm["is_error"].(bool)
					out = append(out, wireResult{ID: fmt.Sprint(bm["tool_use_id"]), Text: textOf(bm["content"]), IsError: isErr})
					at = append(at, i)
				}
			}
		}
	case "responses":
		for i, it := range req.Input {
			if it["type"] == "function_call_output" {
				out = append(out, wireResult{ID: fmt.Sprint(it["call_id"]), Text: textOf(it["output"])})
				at = append(at, i)
			}
		}
	default:
		for i, m := range req.Messages {
			if m["role"] == "tool" {
				out = append(out, wireResult{ID: fmt.Sprint(m["tool_call_id"]), Text: textOf(m["content"])})
				at = append(at, i)
			}
		}
	}
	return out, at
}

// permutations of xs, each a new slice.
func permutations[T any](xs []T) [][]T {
	if len(xs) <= 1 {
		return [][]T{slices.Clone(xs)}
	}
	var out [][]T
	for i := range xs {
		rest := append(slices.Clone(xs[:i]), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]T{xs[i]}, p...))
		}
	}
	return out
}

// TestParallelBatchOverTheWire is BH-070 and BH-071 over the three wire
// formats: one turn makes three read-only calls (tu_a, tu_b, tu_c) that
// take 300, 10 and 100 ms in every permutation. The calls run at once (the
// batch takes as long as its slowest call, not the sum), tool_result
// events come in completion order each with its call id, and the next
// request carries the results in call order, each with its own id and a
// first line naming its call ("[tu_a fx__slow {"name":"a"}]"), in one
// user message (Anthropic) or consecutive items or messages (OpenAI):
// byte for byte the same request whatever the completion order.
func TestParallelBatchOverTheWire(t *testing.T) {
	calls := []wcall{{"tu_a", "fx__slow", `{"name":"a"}`}, {"tu_b", "fx__slow", `{"name":"b"}`}, {"tu_c", "fx__slow", `{"name":"c"}`}}
	durs := []time.Duration{300 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}
	for _, kind := range wireKinds {
		t.Run(kind, func(t *testing.T) {
			var first []byte
			for _, p := range permutations(durs) {
				synctest.Test(t, func(t *testing.T) {
					f := &fx{dur: map[string]time.Duration{"a": p[0], "b": p[1], "c": p[2]}}
					model, api := wireModel(t, kind, callTurn(kind, calls), answerTurn(kind))
					a := agent.New(agent.Options{Model: model, ModelName: "m", Set: fxSet(t, t.TempDir(), f)})
					var began, ended time.Time
					var completed []string
					for ev, err := range a.Run(context.Background(), "look up a, b and c") {
						switch ev.Kind {
						case agent.EventToolCall:
							if began.IsZero() {
								began = time.Now()
							}
						case agent.EventToolResult:
							ended = time.Now()
							completed = append(completed, ev.ProviderCallID)
							if ev.CallID == "" || ev.CallID == ev.ProviderCallID {
								t.Errorf("result event of %s carries call id %q", ev.ProviderCallID, ev.CallID)
							}
						case agent.EventDone:
							if err != nil || ev.Summary.Stop != agent.StopEndTurn || ev.Summary.Calls != 3 {
								t.Fatalf("err %v summary %+v", err, ev.Summary)
							}
						}
					}
					if took, want := ended.Sub(began), slices.Max(p); took != want {
						t.Errorf("durations %v: the batch took %s, want %s (its slowest call)", p, took, want)
					}
					order := []string{"tu_a", "tu_b", "tu_c"}
					slices.SortStableFunc(order, func(x, y string) int {
						return int(f.dur[x[3:]] - f.dur[y[3:]])
					})
					if !slices.Equal(completed, order) {
						t.Errorf("durations %v: result events %v, want completion order %v", p, completed, order)
					}
					reqs := api.requests()
					if len(reqs) != 2 {
						t.Fatalf("%d requests", len(reqs))
					}
					got, at := resultsOf(t, kind, reqs[1])
					want := []wireResult{{"tu_a", "[tu_a fx__slow {\"name\":\"a\"}]\nresult of a", false},
						{"tu_b", "[tu_b fx__slow {\"name\":\"b\"}]\nresult of b", false},
						{"tu_c", "[tu_c fx__slow {\"name\":\"c\"}]\nresult of c", false}}
					if !slices.Equal(got, want) {
						t.Errorf("durations %v: results in request 2: %+v, want %+v", p, got, want)
					}
					if kind == "anthropic" && (len(at) != 3 || at[0] != at[2]) {
						t.Errorf("results not in one user message: message indexes %v", at)
					} else if kind != "anthropic" && (len(at) != 3 || at[1] != at[0]+1 || at[2] != at[1]+1) {
						t.Errorf("results not consecutive: indexes %v", at)
					}
					if first == nil {
						first = reqs[1]
					} else if string(reqs[1]) != string(first) {
						t.Errorf("durations %v: request 2 differs from the first permutation's:\n%s\n%s", p, reqs[1], first)
					}
				})
			}
		})
	}
}

// batchRun runs one turn of calls over kind's replayed wire (the real
// adapter; an answer follows) inside the caller's synctest bubble and
// returns the events and the summary; every request must pair its calls
// for every provider shape.
func batchRun(t *testing.T, kind string, opts agent.Options, calls ...provider.Block) ([]agent.Event, *agent.Summary) {
	t.Helper()
	var wc []wcall
	for _, c := range calls {
		wc = append(wc, wcall{c.ID, c.Name, string(c.Input)})
	}
	model, api := wireModel(t, kind, callTurn(kind, wc), answerTurn(kind))
	opts.Model, opts.ModelName = model, "m"
	var evs []agent.Event
	var sum *agent.Summary
	for ev, err := range agent.New(opts).Run(context.Background(), "go") {
		evs = append(evs, ev)
		if ev.Kind == agent.EventDone {
			if err != nil || ev.Summary.Stop != agent.StopEndTurn {
				t.Fatalf("run: %v %+v", err, ev.Summary)
			}
			sum = ev.Summary
		}
	}
	if n := len(api.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	for _, sh := range shapes {
		if err := agent.Validate(agent.Rebuild(sum.Transcript, nil), sh); err != nil {
			t.Error(err)
		}
	}
	return evs, sum
}

// batchTime is the fake time from the batch's first call to its last
// result.
func batchTime(evs []agent.Event, at []time.Time) time.Duration {
	var first, last time.Time
	for i, ev := range evs {
		if ev.Kind == agent.EventToolCall && first.IsZero() {
			first = at[i]
		}
		if ev.Kind == agent.EventToolResult {
			last = at[i]
		}
	}
	return last.Sub(first)
}

// TestParallelLimitAndTheAloneRule: four 50 ms calls of a read-only tool
// take 50 ms at the default limit (4), 100 ms at agent.maxParallelCalls
// 2 and 200 ms at 1; four calls of a tool without annotations take 200
// ms (they run alone) unless settings name it in agent.parallelTools.
func TestParallelLimitAndTheAloneRule(t *testing.T) {
	four := func(name string) []provider.Block {
		var out []provider.Block
		for i := range 4 {
			out = append(out, use(fmt.Sprintf("p%d", i), name, fmt.Sprintf(`{"name":"n%d"}`, i)))
		}
		return out
	}
	for _, tc := range []struct {
		what  string
		tool  string
		limit int
		par   []string
		want  time.Duration
	}{
		{"read-only, default limit", "fx__slow", 0, nil, 50 * time.Millisecond},
		{"read-only, limit 2", "fx__slow", 2, nil, 100 * time.Millisecond},
		{"read-only, limit 1", "fx__slow", 1, nil, 200 * time.Millisecond},
		{"no annotations", "fx__plain", 0, nil, 200 * time.Millisecond},
		{"no annotations, in parallelTools", "fx__plain", 0, []string{"fx__*"}, 50 * time.Millisecond},
	} {
		t.Run(tc.what, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fx{dur: map[string]time.Duration{"n0": 50 * time.Millisecond, "n1": 50 * time.Millisecond, "n2": 50 * time.Millisecond, "n3": 50 * time.Millisecond}}
				var at []time.Time
				opts := agent.Options{Set: fxSet(t, t.TempDir(), f), MaxParallelCalls: tc.limit, ParallelTools: tc.par}
				m := &scripted{turns: []func(*provider.Request) []provider.Block{static(four(tc.tool)...), static(say("done"))}}
				opts.Model = m
				var evs []agent.Event
				for ev, err := range agent.New(opts).Run(context.Background(), "go") {
					evs, at = append(evs, ev), append(at, time.Now())
					if ev.Kind == agent.EventDone && (err != nil || ev.Summary.Calls != 4 || len(ev.Summary.Failures) != 0) {
						t.Fatalf("err %v summary %+v", err, ev.Summary)
					}
				}
				if got := batchTime(evs, at); got != tc.want {
					t.Errorf("the batch took %s, want %s", got, tc.want)
				}
				checkRequests(t, m)
			})
		})
	}
}

// TestParallelExecuteRunsAlone: execute waits for the calls before it and
// the calls after it wait for execute (no annotations that make a shell
// command safe to overlap), while reads on either side need no wait of
// their own: the events show one call at a time around it.
func TestParallelExecuteRunsAlone(t *testing.T) {
	ws := t.TempDir()
	for _, n := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(ws, n), []byte(n+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := &fx{}
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("r1", "read_file", `{"path":"a.txt"}`), use("x1", "execute", `{"command":"cat a.txt b.txt"}`), use("r2", "read_file", `{"path":"b.txt"}`)),
		static(say("done")),
	}}
	evs, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: fxSet(t, ws, f)}).Run(context.Background(), "go"), time.Minute, nil)
	if err != nil || sum.Calls != 3 || len(sum.Failures) != 0 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	var seq []string
	for _, ev := range evs {
		switch ev.Kind {
		case agent.EventToolCall:
			seq = append(seq, "call "+ev.ProviderCallID)
		case agent.EventToolResult:
			seq = append(seq, "result "+ev.ProviderCallID)
		}
	}
	if want := "call r1,result r1,call x1,result x1,call r2,result r2"; strings.Join(seq, ",") != want {
		t.Errorf("events %v, want %s", seq, want)
	}
	checkRequests(t, m)
}

// TestParallelSiblingsSurviveAFailure: one call of the batch fails
// (Execution) and one names no tool (Discovery); the two slow reads and a
// tool_search beside them run to the end and keep their results, and the
// failures are counted by stage.
func TestParallelSiblingsSurviveAFailure(t *testing.T) {
	for _, kind := range wireKinds {
		t.Run(kind, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { siblingsSurvive(t, kind) }) })
	}
}

func siblingsSurvive(t *testing.T, kind string) {
	f := &fx{dur: map[string]time.Duration{"a": 100 * time.Millisecond, "b": 100 * time.Millisecond}}
	_, sum := batchRun(t, kind, agent.Options{Set: fxSet(t, t.TempDir(), f)},
		use("s1", "fx__slow", `{"name":"a"}`), use("f1", "fx__fail", `{"name":"x"}`),
		use("s2", "fx__slow", `{"name":"b"}`), use("u1", "no_such_tool", `{}`), use("q1", "tool_search", `{"query":"look something up"}`))
	if sum.Calls != 5 || sum.Failures[tool.Execution] != 1 || sum.Failures[tool.Discovery] != 1 {
		t.Fatalf("summary %+v", sum)
	}
	res := lastResults(sum.Transcript)
	texts := []string{}
	for _, b := range res {
		texts = append(texts, fmt.Sprintf("%v %s", b.IsError, allText([]provider.Message{{Blocks: []provider.Block{b}}})))
	}
	if len(res) != 5 || res[4].IsError || res[0].IsError || !strings.Contains(texts[0], "result of a") ||
		!res[1].IsError || !strings.Contains(texts[1], "the upstream refused") ||
		res[2].IsError || !strings.Contains(texts[2], "result of b") || !res[3].IsError {
		t.Errorf("results: %q", texts)
	}
}

// lastResults is the tool_result blocks of the transcript's last user
// message that has any.
func lastResults(msgs []provider.Message) []provider.Block {
	for i := len(msgs) - 1; i >= 0; i-- {
		var out []provider.Block
		for _, b := range msgs[i].Blocks {
			if b.Type == provider.ToolResult {
				out = append(out, b)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// overlapWatch is a middleware that sees which calls of a batch are in
// flight at once, by the path they name. A call named in meet waits (in
// fake time) until its partner has entered too, and fails if the partner
// never comes: proof that the two overlap.
type overlapWatch struct {
	mu       sync.Mutex
	inFlight map[string]int // by path as given, cleaned
	maxOn    map[string]int
	entered  map[string]chan struct{} // by provider call id
	meet     map[string]string        // provider call id -> partner's
	order    []string                 // provider call ids in the order they entered
}

func (w *overlapWatch) middleware(next pipeline.Handler) pipeline.Handler {
	return func(ctx context.Context, call *tool.Call) *tool.Result {
		var in struct{ Path string }
		_ = json.Unmarshal(call.Input, &in)
		key := filepath.Base(in.Path)
		w.mu.Lock()
		w.inFlight[key]++
		w.maxOn[key] = max(w.maxOn[key], w.inFlight[key])
		w.order = append(w.order, call.ProviderID)
		close(w.entered[call.ProviderID])
		partner, ok := w.meet[call.ProviderID]
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			w.inFlight[key]--
			w.mu.Unlock()
		}()
		if ok {
			select {
			case <-w.entered[partner]:
			case <-time.After(time.Hour): // fake time: only when nothing else can happen
				return tool.ErrorResult(tool.Errorf(tool.Execution, "%s never ran beside %s", partner, call.ProviderID), call.Name)
			}
		}
		return next(ctx, call)
	}
}

// TestParallelEditsToOnePathAreSerialized is BH-074: edits of nums.txt
// spelled "nums.txt", "./nums.txt" and by its absolute path in one turn
// all land, one after another in call order (never two at once), while a
// write of another file runs beside the first of them. A fourth edit
// whose old_string the first one already replaced fails naming the call
// that changed the file during the batch.
func TestParallelEditsToOnePathAreSerialized(t *testing.T) {
	for _, kind := range wireKinds {
		t.Run(kind, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { editsSerialized(t, kind) }) })
	}
}

func editsSerialized(t *testing.T, kind string) {
	ws := t.TempDir()
	var nums strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&nums, "%d\n", i)
	}
	if err := os.WriteFile(filepath.Join(ws, "nums.txt"), []byte(nums.String()), 0o640); err != nil {
		t.Fatal(err)
	}
	ids := []string{"e1", "e2", "e3", "w1", "e4"}
	w := &overlapWatch{inFlight: map[string]int{}, maxOn: map[string]int{}, entered: map[string]chan struct{}{},
		meet: map[string]string{"e1": "w1", "w1": "e1"}}
	for _, id := range ids {
		w.entered[id] = make(chan struct{})
	}
	_, sum := batchRun(t, kind, agent.Options{Set: fxSet(t, ws, &fx{}), Workspace: ws, Middleware: []agent.Middleware{w.middleware}},
		use("e1", "edit_file", `{"path":"nums.txt","old_string":"\n50\n","new_string":"\nFIFTY\n"}`),
		use("e2", "edit_file", `{"path":"./nums.txt","old_string":"\n75\n","new_string":"\nSEVENTY-FIVE\n"}`),
		use("e3", "edit_file", `{"path":`+js(filepath.Join(ws, "nums.txt"))+`,"old_string":"\n25\n","new_string":"\nTWENTY-FIVE\n"}`),
		use("w1", "write_file", `{"path":"other.txt","content":"other\n"}`),
		use("e4", "edit_file", `{"path":"nums.txt","old_string":"\n50\n","new_string":"\nfifty\n"}`))
	want := strings.NewReplacer("\n50\n", "\nFIFTY\n", "\n75\n", "\nSEVENTY-FIVE\n", "\n25\n", "\nTWENTY-FIVE\n").Replace(nums.String())
	got, err := os.ReadFile(filepath.Join(ws, "nums.txt"))
	if err != nil || string(got) != want {
		t.Errorf("nums.txt: %v\n%s", err, got)
	}
	if st, err := os.Stat(filepath.Join(ws, "nums.txt")); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("nums.txt mode: %v %v", st.Mode(), err)
	}
	if w.maxOn["nums.txt"] != 1 {
		t.Errorf("%d edits of nums.txt ran at once", w.maxOn["nums.txt"])
	}
	var edits []string
	for _, id := range w.order {
		if id != "w1" {
			edits = append(edits, id)
		}
	}
	if !slices.Equal(edits, []string{"e1", "e2", "e3", "e4"}) {
		t.Errorf("edits ran in the order %v", edits)
	}
	res := lastResults(sum.Transcript)
	if len(res) != 5 {
		t.Fatalf("%d results", len(res))
	}
	for i, b := range res[:4] {
		if b.IsError {
			t.Errorf("%s failed: %s", ids[i], allText([]provider.Message{{Blocks: []provider.Block{b}}}))
		}
	}
	e4 := allText([]provider.Message{{Blocks: []provider.Block{res[4]}}})
	if !res[4].IsError || !strings.Contains(e4, "file changed by call") || !strings.Contains(e4, ourID(t, sum.Transcript, "e1")+" (edit_file)") ||
		!strings.Contains(e4, "during this batch") {
		t.Errorf("e4: %s", e4)
	}
}

// TestParallelCancelMidBatch is BH-073 and BH-051 over the Anthropic wire:
// one turn holds read_file notes.md and grep TODO (fast), fx__stall (an
// MCP call that never ends by itself), fx__stuck (one that ignores
// cancellation after printing "partial-bytes") and execute (which runs
// alone, after them). Each fast call's record is final the moment its
// result event comes, while the stalled one is still running; then the
// user cancels. The transcript pairs every call: the real results of
// the fast calls, "cancelled by user after … s; no output" for the
// stalled call, the partial output of the stuck one, "not run" for
// execute; no id is empty or made up. Continuing with a new message sends
// all five results in call order in one user message, then the new text.
func TestParallelCancelMidBatch(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("# notes\nTODO: ship\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fx{release: make(chan struct{})}
	defer close(f.release)
	st := openStore(t)
	calls := []wcall{
		{"tu_1", "read_file", `{"path":"notes.md"}`},
		{"tu_2", "grep", `{"pattern":"TODO"}`},
		{"tu_3", "fx__stall", `{"name":"s"}`},
		{"tu_4", "fx__stuck", `{"name":"k"}`},
		{"tu_5", "execute", `{"command":"touch ran.txt"}`},
	}
	model, api := wireModel(t, "anthropic", callTurn("anthropic", calls), answerTurn("anthropic"))
	a := agent.New(agent.Options{Model: model, ModelName: "claude-sonnet-4-5", Set: fxSet(t, ws, f), Store: st,
		CancelGrace: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fast := map[string]bool{}
	stuckOut := false
	var checkErr []string
	_, sum, err := drain(t, a.Run(ctx, "read the notes"), time.Minute, func(ev agent.Event) {
		switch {
		case ev.Kind == agent.EventOutput && string(ev.Output.Data) == "partial-bytes":
			stuckOut = true
		case ev.Kind == agent.EventToolResult && (ev.ProviderCallID == "tu_1" || ev.ProviderCallID == "tu_2"):
			rec, err := st.Get(context.Background(), ev.CallID)
			if err != nil || rec.Outcome != store.OutcomeOK {
				checkErr = append(checkErr, fmt.Sprintf("record of %s when its result came: %+v %v", ev.ProviderCallID, rec, err))
			}
			fast[ev.ProviderCallID] = true
		}
		if fast["tu_1"] && fast["tu_2"] && stuckOut && ctx.Err() == nil {
			cancel()
		}
	})
	for _, e := range checkErr {
		t.Error(e)
	}
	if !errors.Is(err, context.Canceled) || sum.Stop != agent.StopCancelled || sum.Calls != 5 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	res := lastResults(sum.Transcript)
	if len(res) != 5 {
		t.Fatalf("%d results", len(res))
	}
	text := func(b provider.Block) string {
		return strings.TrimSpace(allText([]provider.Message{{Blocks: []provider.Block{b}}}))
	}
	for i, c := range calls {
		if id := ourID(t, sum.Transcript, c.id); res[i].ToolUseID != id || id == "" {
			t.Errorf("result %d is for %q, want %s's id %q", i, res[i].ToolUseID, c.id, id)
		}
	}
	// The record holds the five in call order; execute, which never ran,
	// is recorded as cancelled, not left running.
	recs, err := st.ListTask(context.Background(), sum.TaskID)
	if err != nil || len(recs) != 5 {
		t.Fatalf("records: %d, %v", len(recs), err)
	}
	for i, c := range calls {
		if id := ourID(t, sum.Transcript, c.id); recs[i].ToolCallID != id {
			t.Errorf("record %d is %s (%s), want %s's %s", i, recs[i].ToolCallID, recs[i].Tool, c.id, id)
		}
	}
	if recs[4].Outcome != store.OutcomeCancelled || !strings.Contains(string(recs[4].Model), "not run") {
		t.Errorf("the record of execute, which never ran: %s %s", recs[4].Outcome, recs[4].Model)
	}
	if res[0].IsError || !strings.Contains(text(res[0]), "TODO: ship") || res[1].IsError || !strings.Contains(text(res[1]), "notes.md") {
		t.Errorf("fast results: %q / %q", text(res[0]), text(res[1]))
	}
	if !res[2].IsError || !regexp.MustCompile(`^\[tu_3 fx__stall \{"name":"s"\}\]\ncancelled by user after \d+\.\d s; no output$`).MatchString(text(res[2])) {
		t.Errorf("stalled call: %q", text(res[2]))
	}
	if !res[3].IsError || !regexp.MustCompile(`^\[tu_4 fx__stuck \{"name":"k"\}\]\ncancelled by user after \d+\.\d s; partial output:\npartial-bytes\n`).MatchString(text(res[3])) ||
		!strings.Contains(text(res[3]), "abandoned") {
		t.Errorf("stuck call: %q", text(res[3]))
	}
	if !res[4].IsError || !strings.Contains(text(res[4]), "not run") {
		t.Errorf("execute: %q", text(res[4]))
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Error("execute ran after the cancellation")
	}
	for _, sh := range shapes {
		if err := agent.Validate(agent.Rebuild(sum.Transcript, nil), sh); err != nil {
			t.Error(err)
		}
	}
	// The user types a new message: the request pairs every call.
	_, sum2, err := drain(t, a.Continue(context.Background(), sum.Transcript, "what happened?"), time.Minute, nil)
	if err != nil || sum2.Stop != agent.StopEndTurn {
		t.Fatalf("continue: %v %+v", err, sum2)
	}
	reqs := api.requests()
	got, at := resultsOf(t, "anthropic", reqs[len(reqs)-1])
	if len(got) != 5 || at[0] != at[4] {
		t.Fatalf("results in the next request: %+v at %v", got, at)
	}
	for i, c := range calls {
		if got[i].ID != c.id || got[i].IsError != (i >= 2) {
			t.Errorf("result %d: %+v, want %s", i, got[i], c.id)
		}
	}
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1], &body); err != nil {
		t.Fatal(err)
	}
	m := body.Messages[at[0]]
	if m.Role != "user" || at[0] == 0 || body.Messages[at[0]-1].Role != "assistant" {
		t.Errorf("the results are not in the user message right after the assistant turn (message %d)", at[0])
	}
	if last := m.Content[len(m.Content)-1]; !strings.Contains(string(last), "what happened?") && at[0] != len(body.Messages)-2 {
		t.Errorf("the new text does not follow the results: %s", last)
	}
}

// TestParallelResultHeadersNameTheirCalls is BH-071 with real commands:
// two execute calls the settings let run at once (agent.parallelTools
// ["execute"]); each result starts with a line naming its call, the
// command quoted, and the transcript holds them in call order whatever
// order they ended in. A turn of one call gets no header.
func TestParallelResultHeadersNameTheirCalls(t *testing.T) {
	ws := t.TempDir()
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("c1", "execute", `{"command":"sleep 0.2; echo first"}`), use("c2", "execute", `{"command":"echo second"}`)),
		static(use("c3", "execute", `{"command":"echo third"}`)),
		static(say("done")),
	}}
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: fxSet(t, ws, &fx{}), ParallelTools: []string{"execute"}}).Run(context.Background(), "go"), time.Minute, nil)
	if err != nil || sum.Calls != 3 || len(sum.Failures) != 0 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	var got []string
	for _, msg := range sum.Transcript {
		for _, b := range msg.Blocks {
			if b.Type == provider.ToolResult {
				got = append(got, strings.TrimSpace(allText([]provider.Message{{Blocks: []provider.Block{b}}})))
			}
		}
	}
	if len(got) != 3 || !strings.HasPrefix(got[0], `[c1 execute "sleep 0.2; echo first"]`+"\n") || !strings.Contains(got[0], "first") ||
		!strings.HasPrefix(got[1], `[c2 execute "echo second"]`+"\n") || !strings.Contains(got[1], "second") ||
		strings.HasPrefix(got[2], "[c3") || !strings.Contains(got[2], "third") {
		t.Errorf("results: %q", got)
	}
	checkRequests(t, m)
}

// TestParallelCancelSaysHowLongTheCallRan: BH-073's numbers in fake time.
// A fast read and a stalled MCP call share a turn; the user cancels 5 s
// after the turn began. The read keeps its result, the stalled call reads
// "cancelled by user after 5.0 s; no output".
func TestParallelCancelSaysHowLongTheCallRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fx{dur: map[string]time.Duration{"a": 10 * time.Millisecond}}
		m := &scripted{turns: []func(*provider.Request) []provider.Block{
			static(use("tu_1", "fx__slow", `{"name":"a"}`), use("tu_2", "fx__stall", `{"name":"s"}`)),
		}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var sum *agent.Summary
		for ev, err := range agent.New(agent.Options{Model: m, Set: fxSet(t, t.TempDir(), f)}).Run(ctx, "go") {
			if ev.Kind == agent.EventToolCall && ev.ProviderCallID == "tu_1" {
				time.AfterFunc(5*time.Second, cancel)
			}
			if ev.Kind == agent.EventDone {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err %v", err)
				}
				sum = ev.Summary
			}
		}
		res := lastResults(sum.Transcript)
		text := func(b provider.Block) string {
			return strings.TrimSpace(allText([]provider.Message{{Blocks: []provider.Block{b}}}))
		}
		if len(res) != 2 || res[0].IsError || !strings.HasSuffix(text(res[0]), "\nresult of a") {
			t.Fatalf("results: %+v", res)
		}
		if want := "[tu_2 fx__stall {\"name\":\"s\"}]\ncancelled by user after 5.0 s; no output"; !res[1].IsError || text(res[1]) != want {
			t.Errorf("stalled call: %q, want %q", text(res[1]), want)
		}
	})
}
