package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
	"github.com/aibuddy/aibuddy/provider/openaimodel"
)

// These tests run agent.Run over the real native adapters (SDK, HTTP
// client, SSE decoder, request building) against an httptest server that
// replays each provider's streaming wire format. Only the model API is
// replaced; the tools are the real set of newSet (a local sandbox and the
// tracker's 12 MCP tools, all deferred by the per-server gate of 10).

// wire replays SSE bodies, one per request, and keeps every request body.
type wire struct {
	t      *testing.T
	path   string // the one path a request may go to
	mu     sync.Mutex
	bodies [][]byte
	replay []string
}

func (s *wire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != s.path || n >= len(s.replay) {
		s.t.Errorf("unexpected request %d: %s %s", n+1, r.Method, r.URL.Path)
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"unexpected request"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, s.replay[n])
}

func (s *wire) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// sseEvents renders JSON events as "event: <type>\ndata: <json>\n\n", the
// framing of both the Anthropic Messages stream
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming) and the
// OpenAI Responses stream
// (https://platform.openai.com/docs/api-reference/responses-streaming).
func sseEvents(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(e), &head); err != nil {
			panic(fmt.Sprintf("bad event %s: %v", e, err))
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", head.Type, e)
	}
	return b.String()
}

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want: %v", what, err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// nativeRun runs "look at issue 7" over model and checks what every run
// must show: one call of the deferred tracker__get_issue with number 7,
// no failures, the final text, the run ended by the model.
func nativeRun(t *testing.T, model provider.Model, modelName string, tr *tracker, set func() agent.Options) *agent.Summary {
	t.Helper()
	opts := set()
	opts.Model, opts.ModelName = model, modelName
	evs, sum, err := drain(t, agent.New(opts).Run(context.Background(), "look at issue 7"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn || sum.Steps != 2 || sum.Calls != 1 || len(sum.Failures) != 0 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if got := tr.got(); len(got) != 1 || got[0] != `tracker__get_issue {"number":7}` {
		t.Errorf("tracker calls: %q", got)
	}
	var text strings.Builder
	for _, ev := range evs {
		if ev.Kind == agent.EventText {
			text.WriteString(ev.Text)
		}
	}
	if !strings.HasSuffix(text.String(), "Issue 7 is open.") {
		t.Errorf("model text %q", text.String())
	}
	return sum
}

// Anthropic Messages API fixtures (content block shapes from "Tool search
// tool", https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool).
const (
	anthStart     = `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":1}}}`
	anthStop      = `{"type":"message_stop"}`
	anthSearchUse = `{"type":"server_tool_use","id":"srvtoolu_01XYZ","name":"tool_search_tool_bm25","input":{"query":"get issue by number"}}`
	anthSearchRes = `{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_01XYZ","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"tracker__get_issue"}]}}`
	anthSearchDef = `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`
)

var anthropicReplay = []string{
	// Step 1: the server's tool search finds tracker__get_issue, then the
	// model calls it (input streamed in two chunks).
	sseEvents(anthStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_01XYZ","name":"tool_search_tool_bm25","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"get issue"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":" by number\"}"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":`+anthSearchRes+`}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Looking it up."}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01A","name":"tracker__get_issue","input":{}}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"number\":"}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"7}"}}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":60}}`,
		anthStop),
	// Step 2: the answer.
	sseEvents(anthStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Issue 7 is open."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`,
		anthStop),
}

// TestRunNativeAnthropicOverTheWire: agent.Run with the Anthropic adapter
// on the native path. Step 1 sends one tools array with the BM25 tool
// search tool first and every tracker tool defer_loading; the API's own
// search finds tracker__get_issue, the model calls it, the call runs;
// step 2 sends the same tools array and the assistant turn with the
// server_tool_use and tool_search_tool_result blocks exactly as received,
// followed by the tool_result; the model answers and the run ends.
func TestRunNativeAnthropicOverTheWire(t *testing.T) {
	api := &wire{t: t, path: "/v1/messages", replay: anthropicReplay}
	srv := httptest.NewServer(api)
	defer srv.Close()
	route := provider.Route{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: srv.URL, BYOK: true}
	if provider.ChooseStrategy(route) != provider.ActiveTools {
		t.Fatal("a test server is not the official endpoint: auto must not be native")
	}
	route.NativeToolSearch = provider.NativeOn // as settings provider.nativeToolSearch "on"
	model := anthropicmodel.New(anthropicmodel.Options{APIKey: "test-key", BaseURL: srv.URL, Model: route.Model,
		MaxTokens: 1024, MaxRetries: -1, Strategy: provider.ChooseStrategy(route)})
	if model.Strategy() != provider.Native {
		t.Fatalf("strategy %s", model.Strategy())
	}
	tr := &tracker{}
	ws := t.TempDir()
	sum := nativeRun(t, model, "claude-sonnet-4-5", tr, func() agent.Options {
		return agent.Options{Set: newSet(t, ws, nil, tr)}
	})

	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	type anthTool struct {
		Type         string `json:"type"`
		Name         string `json:"name"`
		DeferLoading bool   `json:"defer_loading"`
	}
	type anthReq struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	r1, r2 := decodeTwo[anthReq](t, reqs)
	if r1.Model != "claude-sonnet-4-5" || !r1.Stream {
		t.Errorf("request 1: model %q stream %v", r1.Model, r1.Stream)
	}
	// The tools array: the search tool first, each tracker tool deferred,
	// the core tools loaded, aibuddy's own tool_search absent.
	if len(r1.Tools) == 0 {
		t.Fatal("request 1 has no tools")
	}
	sameJSON(t, "request 1 tools[0]", r1.Tools[0], anthSearchDef)
	deferred, direct := 0, 0
	for _, raw := range r1.Tools[1:] {
		var tl anthTool
		if err := json.Unmarshal(raw, &tl); err != nil {
			t.Fatal(err)
		}
		switch {
		case tl.Name == "tool_search" || tl.Type != "":
			t.Errorf("unexpected tool in the native array: %s", raw)
		case strings.HasPrefix(tl.Name, "tracker__") && tl.DeferLoading:
			deferred++
		case strings.HasPrefix(tl.Name, "tracker__") || tl.DeferLoading:
			t.Errorf("wrong deferral: %s", raw)
		default:
			direct++
		}
	}
	if deferred != 12 || direct == 0 {
		t.Errorf("request 1: %d deferred, %d direct tools", deferred, direct)
	}
	// The array is the same on every step (one stable array).
	if d := cmp.Diff(rawStrings(r1.Tools), rawStrings(r2.Tools)); d != "" {
		t.Errorf("tools array changed between steps:\n%s", d)
	}
	// Step 1's messages: the task only.
	if len(r1.Messages) != 1 {
		t.Fatalf("request 1 has %d messages", len(r1.Messages))
	}
	sameJSON(t, "request 1 message", r1.Messages[0], `{"role":"user","content":[{"type":"text","text":"look at issue 7"}]}`)
	// Step 2: the task, the assistant turn with the provider's blocks
	// verbatim and in place, the tool result.
	if len(r2.Messages) != 3 {
		t.Fatalf("request 2 has %d messages: %s", len(r2.Messages), reqs[1])
	}
	sameJSON(t, "request 2 message 1", r2.Messages[0], `{"role":"user","content":[{"type":"text","text":"look at issue 7"}]}`)
	sameJSON(t, "request 2 message 2", r2.Messages[1], `{"role":"assistant","content":[`+anthSearchUse+`,`+anthSearchRes+`,
		{"type":"text","text":"Looking it up."},
		{"type":"tool_use","id":"toolu_01A","name":"tracker__get_issue","input":{"number":7}}]}`)
	var results struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			IsError   bool   `json:"is_error"`
			Content   []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r2.Messages[2], &results); err != nil {
		t.Fatal(err)
	}
	if results.Role != "user" || len(results.Content) != 1 || results.Content[0].Type != "tool_result" ||
		results.Content[0].ToolUseID != "toolu_01A" || results.Content[0].IsError ||
		len(results.Content[0].Content) == 0 || results.Content[0].Content[0].Text != "ok: tracker__get_issue" {
		t.Errorf("request 2 message 3: %s", r2.Messages[2])
	}
	// The stored transcript keeps the provider's blocks as Opaque, verbatim.
	var opaque []string
	for _, m := range sum.Transcript {
		for _, b := range m.Blocks {
			if b.Type == provider.Opaque {
				opaque = append(opaque, b.Provider+" "+string(b.Raw))
			}
		}
	}
	if len(opaque) != 2 || !strings.HasPrefix(opaque[0], "anthropic ") || !strings.HasPrefix(opaque[1], "anthropic ") {
		t.Fatalf("opaque blocks in the transcript: %q", opaque)
	}
	sameJSON(t, "stored server_tool_use", json.RawMessage(strings.TrimPrefix(opaque[0], "anthropic ")), anthSearchUse)
	sameJSON(t, "stored tool_search_tool_result", json.RawMessage(strings.TrimPrefix(opaque[1], "anthropic ")), anthSearchRes)
}

// OpenAI Responses API fixtures (item shapes from "Tool search",
// https://developers.openai.com/api/docs/guides/tools-tool-search, and the
// streaming reference).
const (
	oaReasoning = `{"id":"rs_1","type":"reasoning","summary":[]}`
	oaSearch    = `{"id":"tsc_1","type":"tool_search_call","call_id":null,"execution":"server","arguments":{"query":"get issue by number"},"status":"completed"}`
	oaSearchOut = `{"id":"tso_1","type":"tool_search_output","call_id":null,"execution":"server","status":"completed","tools":[{"type":"function","name":"tracker__get_issue","description":"Get one issue by number.","parameters":{"type":"object","properties":{"number":{"type":["integer","null"]},"title":{"type":["string","null"]}},"required":["number","title"],"additionalProperties":false},"strict":true,"defer_loading":true}]}`
	oaCallAdded = `{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"tracker__get_issue"}`
	oaCall      = `{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"number\":7,\"title\":null}","call_id":"call_1","name":"tracker__get_issue"}`
	oaMessage   = `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Issue 7 is open.","annotations":[]}]}`
)

func oaResponse(status, output string) string {
	return `{"id":"resp_1","object":"response","created_at":1741290958,"status":"` + status + `","error":null,"incomplete_details":null,"instructions":null,"model":"gpt-5.4","output":[` + output + `],"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"usage":{"input_tokens":800,"input_tokens_details":{"cached_tokens":0},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":840}}`
}

func oaItem(kind string, seq, i int, item string) string {
	return fmt.Sprintf(`{"type":"response.output_item.%s","sequence_number":%d,"output_index":%d,"item":%s}`, kind, seq, i, item)
}

var openAIReplay = []string{
	// Step 1: reasoning, the hosted tool search, then the call of the
	// tool it loaded (arguments in two deltas).
	sseEvents(`{"type":"response.created","sequence_number":0,"response":`+oaResponse("in_progress", "")+`}`,
		oaItem("added", 1, 0, oaReasoning), oaItem("done", 2, 0, oaReasoning),
		oaItem("added", 3, 1, oaSearch), oaItem("done", 4, 1, oaSearch),
		oaItem("added", 5, 2, oaSearchOut), oaItem("done", 6, 2, oaSearchOut),
		oaItem("added", 7, 3, oaCallAdded),
		`{"type":"response.function_call_arguments.delta","sequence_number":8,"item_id":"fc_1","output_index":3,"delta":"{\"number\":7,"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_1","output_index":3,"delta":"\"title\":null}"}`,
		`{"type":"response.function_call_arguments.done","sequence_number":10,"item_id":"fc_1","output_index":3,"arguments":"{\"number\":7,\"title\":null}"}`,
		oaItem("done", 11, 3, oaCall),
		`{"type":"response.completed","sequence_number":12,"response":`+oaResponse("completed", oaReasoning+","+oaSearch+","+oaSearchOut+","+oaCall)+`}`),
	// Step 2: the answer as text deltas.
	sseEvents(`{"type":"response.created","sequence_number":0,"response":`+oaResponse("in_progress", "")+`}`,
		oaItem("added", 1, 0, `{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`),
		`{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Issue 7 "}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"is open."}`,
		`{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Issue 7 is open."}`,
		oaItem("done", 6, 0, oaMessage),
		`{"type":"response.completed","sequence_number":7,"response":`+oaResponse("completed", oaMessage)+`}`),
}

// TestRunNativeOpenAIResponsesOverTheWire: agent.Run with the Responses
// API adapter on the native path. Step 1 sends {"type":"tool_search"}
// first and every tracker function with defer_loading; the hosted search
// loads tracker__get_issue, the model calls it (strict-mode null for the
// unused title is dropped before the call runs), the call runs; step 2
// sends the same tools and, after the task, the reasoning,
// tool_search_call and tool_search_output items exactly as received, the
// function_call and its function_call_output; the model answers and the
// run ends.
func TestRunNativeOpenAIResponsesOverTheWire(t *testing.T) {
	api := &wire{t: t, path: "/v1/responses", replay: openAIReplay}
	srv := httptest.NewServer(api)
	defer srv.Close()
	route := provider.Route{Provider: "openai", Model: "gpt-5.4", BaseURL: srv.URL + "/v1/", BYOK: true}
	if provider.ChooseStrategy(route) != provider.ActiveTools {
		t.Fatal("a test server is not the official endpoint: auto must not be native")
	}
	route.NativeToolSearch = provider.NativeOn
	zero := 0
	model := openaimodel.New(openaimodel.Options{APIKey: "sk-test", BaseURL: route.BaseURL, Model: route.Model,
		HTTPClient: srv.Client(), MaxRetries: &zero, Strategy: provider.ChooseStrategy(route)})
	if model.Strategy() != provider.Native {
		t.Fatalf("strategy %s", model.Strategy())
	}
	tr := &tracker{}
	ws := t.TempDir()
	sum := nativeRun(t, model, "gpt-5.4", tr, func() agent.Options {
		return agent.Options{Set: newSet(t, ws, nil, tr)}
	})

	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	type oaReq struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Input  []json.RawMessage `json:"input"`
		Tools  []json.RawMessage `json:"tools"`
	}
	r1, r2 := decodeTwo[oaReq](t, reqs)
	if r1.Model != "gpt-5.4" || !r1.Stream {
		t.Errorf("request 1: model %q stream %v", r1.Model, r1.Stream)
	}
	if len(r1.Tools) == 0 {
		t.Fatal("request 1 has no tools")
	}
	sameJSON(t, "request 1 tools[0]", r1.Tools[0], `{"type":"tool_search"}`)
	deferred, direct := 0, 0
	for _, raw := range r1.Tools[1:] {
		var tl struct {
			Type         string `json:"type"`
			Name         string `json:"name"`
			DeferLoading bool   `json:"defer_loading"`
		}
		if err := json.Unmarshal(raw, &tl); err != nil {
			t.Fatal(err)
		}
		switch {
		case tl.Type != "function" || tl.Name == "tool_search":
			t.Errorf("unexpected tool in the native array: %s", raw)
		case strings.HasPrefix(tl.Name, "tracker__") && tl.DeferLoading:
			deferred++
		case strings.HasPrefix(tl.Name, "tracker__") || tl.DeferLoading:
			t.Errorf("wrong deferral: %s", raw)
		default:
			direct++
		}
	}
	if deferred != 12 || direct == 0 {
		t.Errorf("request 1: %d deferred, %d direct tools", deferred, direct)
	}
	if d := cmp.Diff(rawStrings(r1.Tools), rawStrings(r2.Tools)); d != "" {
		t.Errorf("tools array changed between steps:\n%s", d)
	}
	if len(r1.Input) != 1 {
		t.Fatalf("request 1 has %d input items: %s", len(r1.Input), reqs[0])
	}
	// Step 2: the task as sent in step 1, then the provider's items
	// verbatim and in order, then the call's output.
	if len(r2.Input) != 6 {
		t.Fatalf("request 2 has %d input items: %s", len(r2.Input), reqs[1])
	}
	sameJSON(t, "request 2 input 0", r2.Input[0], string(r1.Input[0]))
	sameJSON(t, "request 2 reasoning", r2.Input[1], oaReasoning)
	sameJSON(t, "request 2 tool_search_call", r2.Input[2], oaSearch)
	sameJSON(t, "request 2 tool_search_output", r2.Input[3], oaSearchOut)
	// The function call goes back as the item received (its id kept).
	sameJSON(t, "request 2 function_call", r2.Input[4], oaCall)
	var out struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(r2.Input[5], &out); err != nil {
		t.Fatal(err)
	}
	if out.Type != "function_call_output" || out.CallID != "call_1" || !strings.Contains(string(out.Output), "ok: tracker__get_issue") {
		t.Errorf("request 2 input 5: %s", r2.Input[5])
	}
	var opaque []string
	for _, m := range sum.Transcript {
		for _, b := range m.Blocks {
			if b.Type == provider.Opaque {
				opaque = append(opaque, string(b.Raw))
			}
		}
	}
	if len(opaque) != 3 {
		t.Fatalf("opaque blocks in the transcript: %q", opaque)
	}
	for i, want := range []string{oaReasoning, oaSearch, oaSearchOut} {
		sameJSON(t, fmt.Sprintf("stored item %d", i), json.RawMessage(opaque[i]), want)
	}
}

func rawStrings(rs []json.RawMessage) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// decodeTwo decodes the two request bodies a two-step run sent.
func decodeTwo[T any](t *testing.T, reqs [][]byte) (r1, r2 T) {
	t.Helper()
	if err := json.Unmarshal(reqs[0], &r1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(reqs[1], &r2); err != nil {
		t.Fatal(err)
	}
	return r1, r2
}
