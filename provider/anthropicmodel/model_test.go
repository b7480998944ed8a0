package anthropicmodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
)

// fakeAPI replays canned Messages API responses in order and records each
// request body. It is the only thing replaced: the SDK, its HTTP client and
// SSE decoder run for real.
type fakeAPI struct {
	t         *testing.T
	mu        sync.Mutex
	responses []response
	bodies    []string
	headers   []http.Header
}

type response struct {
	status int
	body   string // SSE stream for 200, JSON error otherwise
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
	}
	b, _ := io.ReadAll(r.Body)
	f.bodies = append(f.bodies, string(b))
	f.headers = append(f.headers, r.Header.Clone())
	if len(f.responses) == 0 {
		f.t.Errorf("no response left for request %d", len(f.bodies))
		w.WriteHeader(500)
		return
	}
	resp := f.responses[0]
	f.responses = f.responses[1:]
	if resp.status != 200 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.status)
		io.WriteString(w, resp.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, resp.body)
}

// sse renders events in the wire format of
// https://docs.anthropic.com/en/docs/build-with-claude/streaming
// ("event: <type>\ndata: <json>\n\n").
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(e), &head); err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", head.Type, e)
	}
	return b.String()
}

const (
	msgStart = `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2}}}`
	ping     = `{"type": "ping"}`
	msgStop  = `{"type":"message_stop"}`

	serverToolUse = `{"type":"server_tool_use","id":"srvtoolu_01ABC","name":"tool_search_tool_bm25","input":{"query":"weather forecast"}}`
	searchResult  = `{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_01ABC","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}}`
)

// step1 is the native-path response: a tool search (server_tool_use with
// streamed input, then its result), a text, and a tool_use whose input
// arrives in input_json_delta chunks.
var step1 = sse(
	msgStart,
	`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_01ABC","name":"tool_search_tool_bm25","input":{}}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"weather"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":" forecast\"}"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":`+searchResult+`}`,
	`{"type":"content_block_stop","index":1}`,
	ping,
	`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Let me check "}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"the weather."}}`,
	`{"type":"content_block_stop","index":2}`,
	`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01T1x","name":"get_weather","input":{}}}`,
	`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":""}}`,
	`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}`,
	`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":" \"Paris\"}"}}`,
	`{"type":"content_block_stop","index":3}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`,
	msgStop,
)

var finalText = sse(
	msgStart,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Sunny, 21 °C."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}`,
	msgStop,
)

const resizeSchema = `{"type":"object",
 "properties":{"mode":{"type":"string","enum":["quick","full"]},"size":{"type":"integer"}},
 "required":["mode"],
 "allOf":[{"if":{"properties":{"mode":{"const":"quick"}}},"then":{"properties":{"size":{"maximum":64}}}}]}`

var tools = []provider.Tool{
	{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "get_weather", Description: "Get the weather.", Deferred: true, InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"$ref":"#/$defs/City"}},"required":["location"],"$defs":{"City":{"type":"string"}}}`)},
	{Name: "mcp__resize", Description: "Resize.", Deferred: true, InputSchema: json.RawMessage(resizeSchema)},
}

func newModel(t *testing.T, strategy provider.Strategy, responses ...response) (*anthropicmodel.Model, *fakeAPI) {
	t.Helper()
	f := &fakeAPI{t: t, responses: responses}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	m := anthropicmodel.New(anthropicmodel.Options{
		APIKey: "test-key", BaseURL: srv.URL, Model: "claude-sonnet-4-5", MaxTokens: 1024,
		Strategy: strategy, MaxRetries: -1,
	})
	return m, f
}

func collect(t *testing.T, m provider.Model, req *provider.Request) ([]provider.Event, error) {
	t.Helper()
	var evs []provider.Event
	for ev, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, label, got, want string) {
	t.Helper()
	norm := func(s string) string {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s: %v in %s", label, err, s)
		}
		b, _ := json.MarshalIndent(v, "", " ")
		return string(b)
	}
	if g, w := norm(got), norm(want); g != w {
		t.Errorf("%s:\ngot  %s\nwant %s", label, g, w)
	}
}

const (
	readFileTool = `{"name":"read_file","description":"Read a file.","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}`
	weatherTool  = `{"name":"get_weather","description":"Get the weather.","defer_loading":true,"input_schema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}`
	resizeTool   = `{"name":"mcp__resize","description":"Resize.","defer_loading":true,"input_schema":{"type":"object","description":"Also required (checked when called): size ≤ 64 when mode=quick.","properties":{"mode":{"type":"string","enum":["quick","full"]},"size":{"type":"integer"}},"required":["mode"]}}`
	searchTool   = `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`
)

func TestNativeMultiStepThroughToolSearch(t *testing.T) {
	// The fake server is not api.anthropic.com, so the route's own choice
	// would be activeTools; force the genuine route's strategy.
	m, api := newModel(t, provider.Native, response{200, step1}, response{200, finalText})
	req := &provider.Request{
		System:   "Be brief.",
		Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "Weather in Paris?"}}}},
		Tools:    tools,
	}
	evs, err := collect(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "request 1", api.bodies[0], `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,
	 "system":[{"type":"text","text":"Be brief."}],
	 "messages":[{"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]}],
	 "tools":[`+searchTool+`,`+readFileTool+`,`+weatherTool+`,`+resizeTool+`]}`)
	// SDK v2.15.0 sends the key as a bearer token.
	if got := api.headers[0].Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("authorization = %q", got)
	}
	if got := api.headers[0].Get("Anthropic-Version"); got == "" {
		t.Error("no anthropic-version header")
	}
	if got := api.headers[0].Get("Anthropic-Beta"); got != "" {
		t.Errorf("anthropic-beta = %q; tool search needs none", got)
	}

	var text strings.Builder
	var calls []provider.Block
	var done *provider.Event
	for i := range evs {
		switch evs[i].Kind {
		case provider.EventText:
			text.WriteString(evs[i].Text)
		case provider.EventToolUse:
			calls = append(calls, *evs[i].Block)
		case provider.EventDone:
			done = &evs[i]
		}
	}
	if text.String() != "Let me check the weather." {
		t.Errorf("text = %q", text.String())
	}
	if len(calls) != 1 || calls[0].ID != "toolu_01T1x" || calls[0].Name != "get_weather" {
		t.Fatalf("tool calls = %+v", calls)
	}
	jsonEqual(t, "tool input", string(calls[0].Input), `{"location":"Paris"}`)
	if done == nil || done.StopReason != "tool_use" || done.Usage != (provider.Usage{InputTokens: 472, OutputTokens: 89}) {
		t.Fatalf("done = %+v", done)
	}
	msg := done.Message
	if len(msg.Blocks) != 4 || msg.Blocks[0].Type != provider.Opaque || msg.Blocks[1].Type != provider.Opaque ||
		msg.Blocks[2].Type != provider.Text || msg.Blocks[3].Type != provider.ToolUse {
		t.Fatalf("message blocks = %+v", msg.Blocks)
	}
	jsonEqual(t, "server_tool_use raw", string(msg.Blocks[0].Raw), serverToolUse)
	jsonEqual(t, "tool_search_tool_result raw", string(msg.Blocks[1].Raw), searchResult)

	// Step 2: the transcript goes back with the opaque blocks verbatim and
	// the tool_result right after the tool_use.
	req.Messages = append(req.Messages, *msg, provider.Message{Role: provider.User, Blocks: []provider.Block{{
		Type: provider.ToolResult, ToolUseID: "toolu_01T1x",
		Content: []provider.Block{{Type: provider.Text, Text: `{"sky":"clear","celsius":21}`}},
	}}})
	evs, err = collect(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "request 2", api.bodies[1], `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,
	 "system":[{"type":"text","text":"Be brief."}],
	 "messages":[
	  {"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]},
	  {"role":"assistant","content":[`+serverToolUse+`,`+searchResult+`,
	    {"type":"text","text":"Let me check the weather."},
	    {"type":"tool_use","id":"toolu_01T1x","name":"get_weather","input":{"location":"Paris"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01T1x","content":[{"type":"text","text":"{\"sky\":\"clear\",\"celsius\":21}"}]}]}],
	 "tools":[`+searchTool+`,`+readFileTool+`,`+weatherTool+`,`+resizeTool+`]}`)
	last := evs[len(evs)-1]
	if last.Kind != provider.EventDone || last.StopReason != "end_turn" || last.Message.Blocks[0].Text != "Sunny, 21 °C." {
		t.Fatalf("final = %+v", last)
	}
	checkPairing(t, api.bodies[1])
}

func TestActiveToolsSendsOnlyActiveTools(t *testing.T) {
	m, api := newModel(t, provider.ActiveTools, response{200, finalText})
	_, err := collect(t, m, &provider.Request{
		Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "hi"}}}},
		Tools:    tools,
	})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "request", api.bodies[0], `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,
	 "messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
	 "tools":[`+readFileTool+`]}`)
}

func TestDefaultStrategyFollowsRoute(t *testing.T) {
	for _, c := range []struct {
		model, base string
		want        provider.Strategy
	}{
		{"claude-sonnet-4-5", "", provider.Native},
		{"claude-sonnet-4-5", "https://api.anthropic.com", provider.Native},
		{"claude-haiku-4-5", "", provider.ActiveTools},
		{"claude-3-7-sonnet-20250219", "", provider.ActiveTools},
		{"claude-sonnet-4-5", "https://gateway.example.com", provider.ActiveTools},
	} {
		t.Setenv("ANTHROPIC_BASE_URL", "")
		m := anthropicmodel.New(anthropicmodel.Options{APIKey: "k", Model: c.model, BaseURL: c.base})
		if got := m.Strategy(); got != c.want {
			t.Errorf("%s at %q: %s, want %s", c.model, c.base, got, c.want)
		}
	}
}

// TestPairingRepairedBeforeSending is case BH-051: three parallel calls,
// only tu_1 answered, then new user text; plus an orphan result.
func TestPairingRepairedBeforeSending(t *testing.T) {
	m, api := newModel(t, provider.ActiveTools, response{200, finalText})
	use := func(id string) provider.Block {
		return provider.Block{Type: provider.ToolUse, ID: id, Name: "read_file", Input: json.RawMessage(`{"path":"a"}`)}
	}
	msgs := []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "read three"},
			{Type: provider.ToolResult, ToolUseID: "tu_0", Content: []provider.Block{{Type: provider.Text, Text: "stale"}}}}},
		{Role: provider.Assistant, Blocks: []provider.Block{use("tu_1"), use("tu_2"), use("tu_3")}},
		{Role: provider.User, Blocks: []provider.Block{
			{Type: provider.ToolResult, ToolUseID: "tu_1", Content: []provider.Block{{Type: provider.Text, Text: "one"}}},
			{Type: provider.ToolResult, ToolUseID: "tu_1", Content: []provider.Block{{Type: provider.Text, Text: "dup"}}},
		}},
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "never mind"}}},
	}
	if _, err := collect(t, m, &provider.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	missing := `"is_error":true,"content":[{"type":"text","text":"no result was recorded for this call (interrupted or lost); its effect, if any, is unknown"}]`
	jsonEqual(t, "request", api.bodies[0], `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[
	 {"role":"user","content":[{"type":"text","text":"read three"},{"type":"text","text":"[result of tool call tu_0, whose call is no longer in context]\nstale"}]},
	 {"role":"assistant","content":[
	   {"type":"tool_use","id":"tu_1","name":"read_file","input":{"path":"a"}},
	   {"type":"tool_use","id":"tu_2","name":"read_file","input":{"path":"a"}},
	   {"type":"tool_use","id":"tu_3","name":"read_file","input":{"path":"a"}}]},
	 {"role":"user","content":[
	   {"type":"tool_result","tool_use_id":"tu_1","content":[{"type":"text","text":"one"}]},
	   {"type":"tool_result","tool_use_id":"tu_2",`+missing+`},
	   {"type":"tool_result","tool_use_id":"tu_3",`+missing+`},
	   {"type":"text","text":"[result of tool call tu_1, whose call is no longer in context]\ndup"}]},
	 {"role":"user","content":[{"type":"text","text":"never mind"}]}]}`)
	checkPairing(t, api.bodies[0])
}

// checkPairing asserts the Anthropic rule on a request body: each
// assistant tool_use has exactly one tool_result in the next message, and
// no tool_result appears anywhere else.
func checkPairing(t *testing.T, body string) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string
			Content []struct {
				Type      string
				ID        string
				ToolUseID string `json:"tool_use_id"`
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	expect := map[string]int{}
	for i, m := range req.Messages {
		got := map[string]int{}
		for _, c := range m.Content {
			if c.Type == "tool_result" {
				got[c.ToolUseID]++
			}
		}
		for id, n := range got {
			if expect[id] != 1 || n != 1 {
				t.Errorf("message %d: tool_result %s x%d without its tool_use right before", i, id, n)
			}
		}
		for id := range expect {
			if got[id] != 1 {
				t.Errorf("message %d: tool_use %s not answered exactly once", i, id)
			}
		}
		expect = map[string]int{}
		if m.Role == "assistant" {
			for _, c := range m.Content {
				if c.Type == "tool_use" {
					expect[c.ID] = 1
				}
			}
		}
	}
	if len(expect) > 0 {
		t.Errorf("last message has unanswered tool_use %v", expect)
	}
}

func TestOversizedImageBecomesNote(t *testing.T) {
	m, api := newModel(t, provider.ActiveTools, response{200, finalText})
	big := make([]byte, 4*1024*1024) // 5,592,408 bytes as base64 > 5,242,880
	msgs := []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "look"}}},
		{Role: provider.Assistant, Blocks: []provider.Block{{Type: provider.ToolUse, ID: "tu_1", Name: "read_file", Input: json.RawMessage(`{"path":"shot.png"}`)}}},
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.ToolResult, ToolUseID: "tu_1", Content: []provider.Block{
			{Type: provider.Image, MIMEType: "image/png", Data: big},
			{Type: provider.Image, MIMEType: "image/png", Data: []byte("PNG")},
		}}}},
	}
	if _, err := collect(t, m, &provider.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Content []struct {
				Content []json.RawMessage
			}
		}
	}
	json.Unmarshal([]byte(api.bodies[0]), &req)
	got := req.Messages[2].Content[0].Content
	jsonEqual(t, "oversized", string(got[0]), `{"type":"text","text":"[image omitted: image/png is 4.0 MiB, 5.3 MiB as base64, over Anthropic's 5 MB per-image limit; downscale or crop it and read it again]"}`)
	jsonEqual(t, "small", string(got[1]), `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"UE5H"}}`)
}

func TestImageRejectedIsTyped(t *testing.T) {
	reason := "messages.2.content.0.content.1.image.source.base64: image exceeds 5 MB maximum: 5316640 bytes > 5242880 bytes"
	m, _ := newModel(t, provider.ActiveTools,
		response{400, `{"type":"error","error":{"type":"invalid_request_error","message":"` + reason + `"}}`},
		response{200, finalText})
	msgs := []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "look"}}},
		{Role: provider.Assistant, Blocks: []provider.Block{{Type: provider.ToolUse, ID: "tu_1", Name: "read_file", Input: json.RawMessage(`{}`)}}},
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.ToolResult, ToolUseID: "tu_1", Content: []provider.Block{
			{Type: provider.Text, Text: "shot.png"},
			{Type: provider.Image, MIMEType: "image/png", Data: []byte("PNG")},
		}}}},
	}
	_, err := collect(t, m, &provider.Request{Messages: msgs})
	var ie *anthropicmodel.ImageError
	if !errors.As(err, &ie) || !errors.Is(err, anthropicmodel.ErrImageRejected) {
		t.Fatalf("err = %v, want *ImageError", err)
	}
	if ie.Message != 2 || ie.Block != 0 || ie.Content != 1 || ie.Status != 400 || ie.Reason != reason {
		t.Fatalf("ImageError = %+v", ie)
	}
	fixed := ie.Replace(msgs)
	if c := fixed[2].Blocks[0].Content[1]; c.Type != provider.Text || !strings.Contains(c.Text, "5316640 bytes") {
		t.Fatalf("replaced = %+v", c)
	}
	if msgs[2].Blocks[0].Content[1].Type != provider.Image {
		t.Fatal("Replace modified its input")
	}
	if _, err := collect(t, m, &provider.Request{Messages: fixed}); err != nil {
		t.Fatalf("after Replace: %v", err)
	}
}

func TestStreamCutShortIsAnError(t *testing.T) {
	m, _ := newModel(t, provider.ActiveTools, response{200, sse(msgStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`)})
	_, err := collect(t, m, &provider.Request{Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "hi"}}}}})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
}

// TestPromptTooLongIsOverflow: the API's 400 "prompt is too long" becomes a
// *provider.OverflowError (the agent then drops old exchanges and retries);
// a 429 naming tokens is a rate limit and stays as it is.
func TestPromptTooLongIsOverflow(t *testing.T) {
	m, _ := newModel(t, provider.ActiveTools,
		response{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`},
		response{429, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 30,000 input tokens per minute."}}`})
	req := &provider.Request{Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "x"}}}}}
	_, err := collect(t, m, req)
	var ov *provider.OverflowError
	var apiErr *anthropic.Error
	if !errors.As(err, &ov) || ov.Status != 400 || !strings.Contains(ov.Reason, "prompt is too long") || !errors.As(err, &apiErr) {
		t.Fatalf("error %v, want a *provider.OverflowError wrapping the *anthropic.Error", err)
	}
	if _, err := collect(t, m, req); err == nil || errors.Is(err, provider.ErrContextOverflow) {
		t.Errorf("a 429 must not be an overflow: %v", err)
	}
}
