package chatmodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/chatmodel"
)

// server replays chat completion streams, one per request, and records
// the request bodies. Only the HTTP API is replaced.
type server struct {
	t      *testing.T
	mu     sync.Mutex
	bodies [][]byte
	replay []string
	status int // non-zero: answer with this status and replay[0] as JSON
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if s.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		io.WriteString(w, s.replay[0])
		return
	}
	if n >= len(s.replay) {
		s.t.Errorf("unexpected request %d", n+1)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, s.replay[n])
}

func newModel(t *testing.T, s *server, opts chatmodel.Options) *chatmodel.Model {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	zero := 0
	opts.APIKey = "local"
	opts.BaseURL = ts.URL + "/v1/"
	opts.HTTPClient = ts.Client()
	opts.MaxRetries = &zero
	if opts.Model == "" {
		opts.Model = "llama3"
	}
	return chatmodel.New(opts)
}

// sse builds a chat completions stream: "data: <chunk>\n\n" per chunk and
// "data: [DONE]" (API reference, "The chat completion chunk object").
func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func chunk(choice string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"llama3","system_fingerprint":"fp_1","choices":[` + choice + `],"usage":null}`
}

const usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"llama3","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}}`

// callStream: two parallel calls, their argument fragments interleaved by
// index.
var callStream = sse(
	chunk(`{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]},"logprobs":null,"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"logprobs":null,"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]},"logprobs":null,"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.txt\"}"}}]},"logprobs":null,"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"b.txt\"}"}}]},"logprobs":null,"finish_reason":null}`),
	chunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}`),
	usageChunk,
)

var textStream = sse(
	chunk(`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"content":"Both files"},"logprobs":null,"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"content":" say hello."},"logprobs":null,"finish_reason":null}`),
	chunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}`),
	usageChunk,
)

var (
	readFile = provider.Tool{Name: "read_file", Description: "Read a file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}
	weather = provider.Tool{Name: "get_weather", Description: "Weather", Deferred: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}
	// openScreen is the BH-034 schema; compatible servers get its refs inlined.
	openScreen = provider.Tool{Name: "open_screen", Description: "Open a screen",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"screen":{"$ref":"#/$defs/Screen"},"list":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},"required":["screen"],"$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}`)}
	// zone is BH-038: the impossible branch is removed, zone stays optional.
	zone = provider.Tool{Name: "set_zone",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"zone":{"anyOf":[{"not":{}},{"type":"string","enum":["north","south"]}]}}}`)}
)

const (
	readFileJSON   = `{"type":"function","function":{"name":"read_file","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}`
	screenObj      = `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`
	openScreenJSON = `{"type":"function","function":{"name":"open_screen","description":"Open a screen","parameters":{"type":"object","properties":{"screen":` + screenObj + `,"list":{"type":"array","items":` + screenObj + `}},"required":["screen"]}}}`
	zoneJSON       = `{"type":"function","function":{"name":"set_zone","parameters":{"type":"object","properties":{"zone":{"type":"string","enum":["north","south"]}}}}}`
)

func collect(t *testing.T, m provider.Model, req *provider.Request) []provider.Event {
	t.Helper()
	var evs []provider.Event
	for ev, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func jsonEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want: %v", what, err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s (-want +got):\n%s\ngot: %s", what, d, got)
	}
}

func text(s string) provider.Block { return provider.Block{Type: provider.Text, Text: s} }

// TestRequestBody: the exact first request: system first, only the
// non-deferred tools with projected parameters, user image as an
// image_url part, opaque blocks of other providers dropped.
func TestRequestBody(t *testing.T) {
	s := &server{t: t, replay: []string{textStream}}
	m := newModel(t, s, chatmodel.Options{MaxTokens: 1024})
	if m.Strategy() != provider.ActiveTools {
		t.Fatalf("strategy %s", m.Strategy())
	}
	collect(t, m, &provider.Request{
		System: "You are terse.",
		Tools:  []provider.Tool{readFile, weather, openScreen, zone},
		Messages: []provider.Message{
			{Role: provider.User, Blocks: []provider.Block{text("what is this?"), {Type: provider.Image, MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}},
			{Role: provider.Assistant, Blocks: []provider.Block{{Type: provider.Opaque, Provider: "openai", Raw: json.RawMessage(`{"type":"reasoning","id":"rs_1"}`)}, text("A logo.")}},
			{Role: provider.User, Blocks: []provider.Block{text("thanks")}},
		},
	})
	jsonEqual(t, "body", s.bodies[0], `{"model":"llama3","max_tokens":1024,"stream":true,"stream_options":{"include_usage":true},
		"messages":[
			{"role":"system","content":"You are terse."},
			{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]},
			{"role":"assistant","content":"A logo."},
			{"role":"user","content":"thanks"}],
		"tools":[`+readFileJSON+`,`+openScreenJSON+`,`+zoneJSON+`]}`)
}

// TestMultiStep: parallel tool calls assembled from interleaved deltas →
// results as tool messages → final text, through Stream.
func TestMultiStep(t *testing.T) {
	s := &server{t: t, replay: []string{callStream, textStream}}
	m := newModel(t, s, chatmodel.Options{})
	req := &provider.Request{Tools: []provider.Tool{readFile}, Messages: []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{text("read a.txt and b.txt")}}}}
	evs := collect(t, m, req)
	if len(evs) != 3 {
		t.Fatalf("events %+v", evs)
	}
	for i, want := range []string{`call_a {"path":"a.txt"}`, `call_b {"path":"b.txt"}`} {
		if evs[i].Kind != provider.EventToolUse || evs[i].Block.ID+" "+string(evs[i].Block.Input) != want || evs[i].Block.Name != "read_file" {
			t.Errorf("event %d: %+v, want %s", i, evs[i].Block, want)
		}
	}
	d := evs[2]
	if d.Kind != provider.EventDone || d.StopReason != "tool_use" || d.Usage != (provider.Usage{InputTokens: 82, OutputTokens: 17}) || len(d.Message.Blocks) != 2 {
		t.Fatalf("done %+v", d)
	}
	req.Messages = append(req.Messages, *d.Message, provider.Message{Role: provider.User, Blocks: []provider.Block{
		{Type: provider.ToolResult, ToolUseID: "call_a", Content: []provider.Block{text("hello")}},
		{Type: provider.ToolResult, ToolUseID: "call_b", Content: []provider.Block{text("hello too")}},
	}})
	var got string
	var last provider.Event
	for _, ev := range collect(t, m, req) {
		if ev.Kind == provider.EventText {
			got += ev.Text
		}
		last = ev
	}
	if got != "Both files say hello." || last.StopReason != "end_turn" || last.Message.Blocks[0].Text != got {
		t.Errorf("text %q, last %+v", got, last)
	}
	jsonEqual(t, "second body", s.bodies[1], `{"model":"llama3","stream":true,"stream_options":{"include_usage":true},
		"messages":[
			{"role":"user","content":"read a.txt and b.txt"},
			{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}},
				{"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b.txt\"}"}}]},
			{"role":"tool","tool_call_id":"call_a","content":"hello"},
			{"role":"tool","tool_call_id":"call_b","content":"hello too"}],
		"tools":[`+readFileJSON+`]}`)
	assertPaired(t, s.bodies[1])
}

// TestPairingRepaired is BH-054's chat variant (tool_calls [c1, c2], a
// tool message for c1 only) plus an orphan result and an image in a
// result.
func TestPairingRepaired(t *testing.T) {
	s := &server{t: t, replay: []string{textStream}}
	m := newModel(t, s, chatmodel.Options{NoStreamUsage: true})
	use := func(id string) provider.Block {
		return provider.Block{Type: provider.ToolUse, ID: id, Name: "read_file", Input: json.RawMessage(`{"path":"x"}`)}
	}
	collect(t, m, &provider.Request{Messages: []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.ToolResult, ToolUseID: "gone", IsError: true, Content: []provider.Block{text("boom")}}, text("continue")}},
		{Role: provider.Assistant, Blocks: []provider.Block{text("Reading."), use("c1"), use("c2")}},
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.ToolResult, ToolUseID: "c1", Content: []provider.Block{text("shot"), {Type: provider.Image, MIMEType: "image/png", Data: []byte("1234")}}}, text("and now?")}},
	}})
	missing := `no result recorded for this call (interrupted or dropped from context); run it again if it is still needed`
	jsonEqual(t, "body", s.bodies[0], `{"model":"llama3","stream":true,"messages":[
		{"role":"user","content":[{"type":"text","text":"[result of tool call gone, whose call is no longer in context] (error)\nboom"},{"type":"text","text":"continue"}]},
		{"role":"assistant","content":"Reading.","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}},
			{"id":"c2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"shot\n[image image/png, 4 bytes, not shown: this route's tool messages carry text only]"},
		{"role":"tool","tool_call_id":"c2","content":"[tool error] `+missing+`"},
		{"role":"user","content":"and now?"}]}`)
	assertPaired(t, s.bodies[0])
}

// assertPaired: every assistant tool_calls id is answered by exactly one
// tool message directly after it, and every tool message answers one.
func assertPaired(t *testing.T, body []byte) {
	t.Helper()
	var b struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for i, m := range b.Messages {
		switch m.Role {
		case "tool":
			if !open[m.ToolCallID] {
				t.Errorf("message %d: tool message for %q answers no open call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			t.Errorf("message %d: calls %v unanswered before it", i, open)
			open = map[string]bool{}
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	if len(open) > 0 {
		t.Errorf("calls %v unanswered", open)
	}
}

// TestServerQuirks: calls without ids get NewID's ids; every call sent at
// index 0 with distinct ids is still split; finish_reason "stop" after
// tool calls still means tool_use; invalid arguments stay a JSON string.
func TestServerQuirks(t *testing.T) {
	stream := sse(
		chunk(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"x1","type":"function","function":{"name":"a","arguments":"{}"}}]},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x2","type":"function","function":{"name":"b","arguments":"{\"k\":1}"}}]},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":2,"type":"function","function":{"name":"c","arguments":"not json"}}]},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`),
	)
	s := &server{t: t, replay: []string{stream}}
	m := newModel(t, s, chatmodel.Options{NewID: func() string { return "gen_1" }})
	evs := collect(t, m, &provider.Request{Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{text("go")}}}})
	var got []string
	for _, ev := range evs {
		if ev.Kind == provider.EventToolUse {
			got = append(got, ev.Block.ID+" "+ev.Block.Name+" "+string(ev.Block.Input))
		}
	}
	want := []string{"x1 a {}", `x2 b {"k":1}`, `gen_1 c "not json"`}
	if !cmp.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	if d := evs[len(evs)-1]; d.StopReason != "tool_use" || d.Usage != (provider.Usage{}) {
		t.Errorf("done %+v", d)
	}
}

func TestErrors(t *testing.T) {
	req := &provider.Request{Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{text("x")}}}}
	lastErr := func(m provider.Model) error {
		var last error
		for _, err := range m.Stream(context.Background(), req) {
			if err != nil {
				last = err
			}
		}
		return last
	}
	t.Run("http 400", func(t *testing.T) {
		s := &server{t: t, status: http.StatusBadRequest, replay: []string{`{"error":{"message":"tools not supported","type":"invalid_request_error","param":null,"code":null}}`}}
		var apiErr *openai.Error
		if err := lastErr(newModel(t, s, chatmodel.Options{})); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Errorf("error %v", err)
		}
	})
	t.Run("context overflow", func(t *testing.T) {
		// OpenAI's wording; vLLM and others send the same code or message.
		s := &server{t: t, status: http.StatusBadRequest, replay: []string{`{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}}
		err := lastErr(newModel(t, s, chatmodel.Options{}))
		var ov *provider.OverflowError
		var apiErr *openai.Error
		if !errors.As(err, &ov) || !errors.Is(err, provider.ErrContextOverflow) || !errors.As(err, &apiErr) || ov.Status != 400 {
			t.Errorf("error %v, want a *provider.OverflowError wrapping the *openai.Error", err)
		}
	})
	t.Run("other 400 is not an overflow", func(t *testing.T) {
		s := &server{t: t, status: http.StatusBadRequest, replay: []string{`{"error":{"message":"tools not supported","type":"invalid_request_error","param":null,"code":null}}`}}
		if err := lastErr(newModel(t, s, chatmodel.Options{})); errors.Is(err, provider.ErrContextOverflow) {
			t.Errorf("error %v must not be an overflow", err)
		}
	})
	t.Run("no finish_reason", func(t *testing.T) {
		s := &server{t: t, replay: []string{"data: " + chunk(`{"index":0,"delta":{"content":"Hel"},"finish_reason":null}`) + "\n\n"}}
		if err := lastErr(newModel(t, s, chatmodel.Options{})); !errors.Is(err, chatmodel.ErrIncomplete) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("length", func(t *testing.T) {
		s := &server{t: t, replay: []string{sse(chunk(`{"index":0,"delta":{"content":"Hel"},"finish_reason":"length"}`))}}
		evs := collect(t, newModel(t, s, chatmodel.Options{}), req)
		if d := evs[len(evs)-1]; d.StopReason != "max_tokens" {
			t.Errorf("stop %q", d.StopReason)
		}
	})
}

// TestCancel: ending ctx mid-stream ends the sequence with ctx's error.
func TestCancel(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+chunk(`{"index":0,"delta":{"content":"Hel"},"finish_reason":null}`)+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer ts.Close()
	zero := 0
	m := chatmodel.New(chatmodel.Options{BaseURL: ts.URL + "/v1/", HTTPClient: ts.Client(), MaxRetries: &zero, Model: "llama3"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	for ev, err := range m.Stream(ctx, &provider.Request{Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{text("x")}}}}) {
		if ev.Kind == provider.EventText {
			cancel()
		}
		last = err
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", last)
	}
}
