package openaimodel_test

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

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/openaimodel"
)

// server replays Responses API streams, one per request, and records the
// request bodies. Only the HTTP API is replaced.
type server struct {
	t      *testing.T
	mu     sync.Mutex
	bodies [][]byte
	replay []string // SSE bodies, in order
	status int      // non-zero: answer every request with this status and replay[0] as JSON
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		s.t.Errorf("request %s %s, want POST /v1/responses", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		s.t.Errorf("Authorization %q", got)
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

func newModel(t *testing.T, s *server, opts openaimodel.Options) *openaimodel.Model {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	zero := 0
	opts.APIKey = "sk-test"
	opts.BaseURL = ts.URL + "/v1/"
	opts.HTTPClient = ts.Client()
	opts.MaxRetries = &zero
	if opts.Model == "" {
		opts.Model = "gpt-5"
	}
	return openaimodel.New(opts)
}

// sse builds an SSE body from (event, data) pairs, as the Responses API
// streams them ("event: <type>\ndata: <json>\n\n").
func sse(events ...string) string {
	var b strings.Builder
	for _, data := range events {
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(data), &head); err != nil {
			panic(fmt.Sprintf("bad event %s: %v", data, err))
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", head.Type, data)
	}
	return b.String()
}

// Output items and events modelled on the API reference's streaming
// examples (https://platform.openai.com/docs/api-reference/responses-streaming).
const (
	reasoningItem  = `{"id":"rs_1","type":"reasoning","summary":[]}`
	searchCallItem = `{"id":"tsc_1","type":"tool_search_call","call_id":null,"execution":"server","arguments":{"query":"weather forecast"},"status":"completed"}`
	searchOutItem  = `{"id":"tso_1","type":"tool_search_output","call_id":null,"execution":"server","status":"completed","tools":[{"type":"function","name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":false,"defer_loading":true}]}`
	callItemAdded  = `{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"get_weather"}`
	callItem       = `{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"get_weather"}`
	messageItem    = `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Sunny, 21 °C in Paris.","annotations":[]}]}`
)

func response(status, output string) string {
	return `{"id":"resp_1","object":"response","created_at":1741290958,"status":"` + status + `","error":null,"incomplete_details":null,"instructions":null,"model":"gpt-5","output":[` + output + `],"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":0},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":150}}`
}

func added(i int, item string) string {
	return fmt.Sprintf(`{"type":"response.output_item.added","sequence_number":%d,"output_index":%d,"item":%s}`, 10+i, i, item)
}

func done(i int, item string) string {
	return fmt.Sprintf(`{"type":"response.output_item.done","sequence_number":%d,"output_index":%d,"item":%s}`, 20+i, i, item)
}

// callStream: reasoning, a hosted tool search, then a call to the tool it
// found, its arguments streamed in two deltas.
var callStream = sse(
	`{"type":"response.created","sequence_number":0,"response":`+response("in_progress", "")+`}`,
	added(0, reasoningItem), done(0, reasoningItem),
	added(1, searchCallItem), done(1, searchCallItem),
	added(2, searchOutItem), done(2, searchOutItem),
	added(3, callItemAdded),
	`{"type":"response.function_call_arguments.delta","sequence_number":4,"item_id":"fc_1","output_index":3,"delta":"{\"city\":"}`,
	`{"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":3,"delta":"\"Paris\"}"}`,
	`{"type":"response.function_call_arguments.done","sequence_number":6,"item_id":"fc_1","output_index":3,"arguments":"{\"city\":\"Paris\"}"}`,
	done(3, callItem),
	`{"type":"response.completed","sequence_number":30,"response":`+response("completed", reasoningItem+","+searchCallItem+","+searchOutItem+","+callItem)+`}`,
)

// textStream: the final answer, streamed as text deltas.
var textStream = sse(
	`{"type":"response.created","sequence_number":0,"response":`+response("in_progress", "")+`}`,
	added(0, `{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`),
	`{"type":"response.content_part.added","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`,
	`{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Sunny, 21 °C"}`,
	`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" in Paris."}`,
	`{"type":"response.output_text.done","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Sunny, 21 °C in Paris."}`,
	done(0, messageItem),
	`{"type":"response.completed","sequence_number":30,"response":`+response("completed", messageItem)+`}`,
)

var (
	readFile = provider.Tool{Name: "read_file", Description: "Read a file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}
	weather = provider.Tool{Name: "get_weather", Description: "Weather for a city", Deferred: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	// openScreen is the BH-034 schema: the $defs must survive projection (BH-035).
	// setEnv has an open map, which strict mode cannot carry.
	setEnv = provider.Tool{Name: "set_env", Description: "Set variables",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"vars":{"type":"object","additionalProperties":{"type":"string"}}}}`)}
	openScreen = provider.Tool{Name: "open_screen", Description: "Open a screen", Deferred: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"screen":{"$ref":"#/$defs/Screen"},"list":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},"required":["screen"],"$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}`)}
)

// The tools as sent: strict projections by provider/toolschema (every
// object closed, every property required, optional ones nullable, $refs
// inlined), or non-strict when strict mode cannot carry the schema.
const (
	readFileJSON   = `{"type":"function","name":"read_file","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false},"strict":true}`
	weatherJSON    = `{"type":"function","name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":true,"defer_loading":true}`
	screenObj      = `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`
	openScreenJSON = `{"type":"function","name":"open_screen","description":"Open a screen","parameters":{"type":"object","properties":{"screen":` + screenObj + `,"list":{"type":["array","null"],"items":` + screenObj + `}},"required":["list","screen"],"additionalProperties":false},"strict":true,"defer_loading":true}`
	setEnvJSON     = `{"type":"function","name":"set_env","description":"Set variables","parameters":{"type":"object","properties":{"vars":{"type":"object","additionalProperties":{"type":"string"}}}},"strict":false}`
)

// collect ranges over a stream and returns its events, failing on error.
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

// jsonEqual fails unless got and want are the same JSON value.
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

func TestStrategyFromRoute(t *testing.T) {
	f := false
	cases := []struct {
		name string
		opts openaimodel.Options
		env  string
		want provider.Strategy
	}{
		{"byok official", openaimodel.Options{APIKey: "k", Model: "gpt-5.4"}, "", provider.Native},
		{"byok official, model before gpt-5.4", openaimodel.Options{APIKey: "k", Model: "gpt-5"}, "", provider.ActiveTools},
		{"platform gateway", openaimodel.Options{APIKey: "k", Model: "gpt-5.4", BYOK: &f}, "", provider.ActiveTools},
		{"proxy base url", openaimodel.Options{APIKey: "k", Model: "gpt-5.4", BaseURL: "https://proxy.example.com/v1"}, "", provider.ActiveTools},
		{"proxy from env", openaimodel.Options{APIKey: "k", Model: "gpt-5.4"}, "http://127.0.0.1:8080/v1", provider.ActiveTools},
		{"override", openaimodel.Options{APIKey: "k", Model: "gpt-5", Strategy: provider.ActiveTools}, "", provider.ActiveTools},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("OPENAI_BASE_URL", c.env)
			if got := openaimodel.New(c.opts).Strategy(); got != c.want {
				t.Errorf("Strategy() = %s, want %s", got, c.want)
			}
		})
	}
}

// TestToolsPerStrategy asserts the exact request body of one step on each
// path: native keeps one stable array with tool_search and defer_loading;
// activeTools sends only the non-deferred tools.
func TestToolsPerStrategy(t *testing.T) {
	req := &provider.Request{
		System:    "You are terse.",
		MaxTokens: 512,
		Messages:  []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "Weather in Paris?"}}}},
		Tools:     []provider.Tool{readFile, weather, openScreen, setEnv},
	}
	cases := []struct {
		strategy provider.Strategy
		tools    string
	}{
		{provider.Native, `[{"type":"tool_search"},` + readFileJSON + `,` + weatherJSON + `,` + openScreenJSON + `,` + setEnvJSON + `]`},
		{provider.ActiveTools, `[` + readFileJSON + `,` + setEnvJSON + `]`},
	}
	for _, c := range cases {
		t.Run(string(c.strategy), func(t *testing.T) {
			s := &server{t: t, replay: []string{textStream}}
			m := newModel(t, s, openaimodel.Options{Strategy: c.strategy})
			collect(t, m, req)
			jsonEqual(t, "body", s.bodies[0], `{"model":"gpt-5","instructions":"You are terse.","max_output_tokens":512,"stream":true,
				"input":[{"role":"user","content":"Weather in Paris?"}],
				"tools":`+c.tools+`}`)
		})
	}
}

// TestMultiStepNative runs tool search → call → result → final text
// through Stream, checking the events and the exact second request: the
// opaque items go back verbatim, the call with its item id, then its
// output.
func TestMultiStepNative(t *testing.T) {
	s := &server{t: t, replay: []string{callStream, textStream}}
	// The test server is not the official endpoint; route choice is
	// covered by TestStrategyFromRoute.
	m := newModel(t, s, openaimodel.Options{Strategy: provider.Native})
	user := provider.Message{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "Weather in Paris?"}}}
	req := &provider.Request{Messages: []provider.Message{user}, Tools: []provider.Tool{readFile, weather}}

	evs := collect(t, m, req)
	if len(evs) != 2 || evs[0].Kind != provider.EventToolUse || evs[1].Kind != provider.EventDone {
		t.Fatalf("events %+v", evs)
	}
	call := evs[0].Block
	if call.ID != "call_1" || call.Name != "get_weather" || string(call.Input) != `{"city":"Paris"}` {
		t.Errorf("tool use %+v", call)
	}
	d := evs[1]
	if d.StopReason != "tool_use" || d.Usage != (provider.Usage{InputTokens: 120, OutputTokens: 30}) {
		t.Errorf("done %+v", d)
	}
	var kinds []provider.BlockType
	for _, b := range d.Message.Blocks {
		kinds = append(kinds, b.Type)
	}
	if want := []provider.BlockType{provider.Opaque, provider.Opaque, provider.Opaque, provider.ToolUse}; !cmp.Equal(kinds, want) {
		t.Errorf("message blocks %v, want %v", kinds, want)
	}
	jsonEqual(t, "reasoning raw", d.Message.Blocks[0].Raw, reasoningItem)

	result := provider.Message{Role: provider.User, Blocks: []provider.Block{{Type: provider.ToolResult, ToolUseID: "call_1",
		Content: []provider.Block{{Type: provider.Text, Text: "sunny, 21 C"}}}}}
	req.Messages = append(req.Messages, *d.Message, result)
	var text string
	var last provider.Event
	for _, ev := range collect(t, m, req) {
		if ev.Kind == provider.EventText {
			text += ev.Text
		}
		last = ev
	}
	if text != "Sunny, 21 °C in Paris." || last.Kind != provider.EventDone || last.StopReason != "end_turn" {
		t.Errorf("text %q, last %+v", text, last)
	}
	if b := last.Message.Blocks; len(b) != 1 || b[0].Type != provider.Text || b[0].Text != text {
		t.Errorf("final message %+v", last.Message)
	}
	jsonEqual(t, "second body", s.bodies[1], `{"model":"gpt-5","stream":true,
		"input":[{"role":"user","content":"Weather in Paris?"},`+reasoningItem+`,`+searchCallItem+`,`+searchOutItem+`,`+callItem+`,
			{"type":"function_call_output","call_id":"call_1","output":"sunny, 21 C"}],
		"tools":[{"type":"tool_search"},`+readFileJSON+`,`+weatherJSON+`]}`)
	assertPaired(t, s.bodies[1])

	// Third step: the final assistant message goes back as its item.
	req.Messages = append(req.Messages, *last.Message, provider.Message{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "thanks"}}})
	s.replay = append(s.replay, textStream)
	collect(t, m, req)
	var body struct{ Input []json.RawMessage }
	json.Unmarshal(s.bodies[2], &body)
	jsonEqual(t, "assistant message item", body.Input[len(body.Input)-2], messageItem)
}

// TestMultiStepActiveTools: same exchange on the activeTools path; the
// deferred tool is absent, and an assistant text edited after the fact
// (e.g. by compaction) goes back as a plain assistant message.
func TestMultiStepActiveTools(t *testing.T) {
	plainCall := sse(
		`{"type":"response.created","sequence_number":0,"response":`+response("in_progress", "")+`}`,
		added(0, callItemAdded), done(0, strings.Replace(callItem, "get_weather", "read_file", 1)),
		`{"type":"response.completed","sequence_number":30,"response":`+response("completed", strings.Replace(callItem, "get_weather", "read_file", 1))+`}`,
	)
	s := &server{t: t, replay: []string{plainCall, textStream}}
	m := newModel(t, s, openaimodel.Options{Strategy: provider.ActiveTools})
	req := &provider.Request{Tools: []provider.Tool{readFile, weather}, Messages: []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "hi"}}},
		{Role: provider.Assistant, Blocks: []provider.Block{{Type: provider.Text, Text: "edited", Provider: "openai", Raw: json.RawMessage(messageItem)}}},
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "read a.txt"}}},
	}}
	evs := collect(t, m, req)
	d := evs[len(evs)-1]
	if d.StopReason != "tool_use" {
		t.Fatalf("done %+v", d)
	}
	req.Messages = append(req.Messages, *d.Message, provider.Message{Role: provider.User, Blocks: []provider.Block{
		{Type: provider.ToolResult, ToolUseID: "call_1", IsError: true, Content: []provider.Block{{Type: provider.Text, Text: "no such file"}}}}})
	collect(t, m, req)
	jsonEqual(t, "second body", s.bodies[1], `{"model":"gpt-5","stream":true,
		"input":[{"role":"user","content":"hi"},{"role":"assistant","content":"edited"},{"role":"user","content":"read a.txt"},
			`+strings.Replace(callItem, "get_weather", "read_file", 1)+`,
			{"type":"function_call_output","call_id":"call_1","output":"[tool error] no such file"}],
		"tools":[`+readFileJSON+`]}`)
}

// TestPairingRepaired: BH-051 (three parallel calls, one result, the user
// types on) and BH-054 (an output whose call was truncated away) are
// repaired before sending; every function_call has exactly one
// function_call_output and vice versa.
func TestPairingRepaired(t *testing.T) {
	s := &server{t: t, replay: []string{textStream}}
	m := newModel(t, s, openaimodel.Options{Strategy: provider.ActiveTools})
	use := func(id string) provider.Block {
		return provider.Block{Type: provider.ToolUse, ID: id, Name: "read_file", Input: json.RawMessage(`{"path": "` + id + `"}`)}
	}
	res := func(id, text string) provider.Block {
		return provider.Block{Type: provider.ToolResult, ToolUseID: id, Content: []provider.Block{{Type: provider.Text, Text: text}}}
	}
	req := &provider.Request{Messages: []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{res("call_A", "old output"), {Type: provider.Text, Text: "go on"}}},
		{Role: provider.Assistant, Blocks: []provider.Block{use("tu_1"), use("tu_2"), use("tu_3")}},
		{Role: provider.User, Blocks: []provider.Block{res("tu_1", "one"), {Type: provider.Text, Text: "stop, do X"}, res("tu_1", "duplicate")}},
	}}
	collect(t, m, req)
	missing := `no result recorded for this call (interrupted or dropped from context); run it again if it is still needed`
	jsonEqual(t, "body", s.bodies[0], `{"model":"gpt-5","stream":true,"input":[
		{"role":"user","content":[{"type":"input_text","text":"[result of tool call call_A, whose call is no longer in context]\nold output"},{"type":"input_text","text":"go on"}]},
		{"type":"function_call","call_id":"tu_1","name":"read_file","arguments":"{\"path\":\"tu_1\"}"},
		{"type":"function_call","call_id":"tu_2","name":"read_file","arguments":"{\"path\":\"tu_2\"}"},
		{"type":"function_call","call_id":"tu_3","name":"read_file","arguments":"{\"path\":\"tu_3\"}"},
		{"type":"function_call_output","call_id":"tu_1","output":"one"},
		{"type":"function_call_output","call_id":"tu_2","output":"[tool error] `+missing+`"},
		{"type":"function_call_output","call_id":"tu_3","output":"[tool error] `+missing+`"},
		{"role":"user","content":"stop, do X"}]}`)
	assertPaired(t, s.bodies[0])
}

// assertPaired checks that every function_call has exactly one
// function_call_output after it, and every output a call before it.
func assertPaired(t *testing.T, body []byte) {
	t.Helper()
	var b struct {
		Input []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	calls, outs := map[string]int{}, map[string]int{}
	for _, it := range b.Input {
		switch it.Type {
		case "function_call":
			calls[it.CallID]++
		case "function_call_output":
			if calls[it.CallID] == 0 {
				t.Errorf("output %s before or without its call", it.CallID)
			}
			outs[it.CallID]++
		}
	}
	for id, n := range calls {
		if n != 1 || outs[id] != 1 {
			t.Errorf("call %s: %d calls, %d outputs", id, n, outs[id])
		}
	}
}

// TestImages: a user image and an image in a tool result go out as
// input_image parts with a data URL; opaque blocks of other providers are
// dropped.
func TestImages(t *testing.T) {
	s := &server{t: t, replay: []string{textStream}}
	m := newModel(t, s, openaimodel.Options{Strategy: provider.ActiveTools})
	png := []byte{0x89, 'P', 'N', 'G'}
	req := &provider.Request{Messages: []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "look"}, {Type: provider.Image, MIMEType: "image/png", Data: png}}},
		{Role: provider.Assistant, Blocks: []provider.Block{{Type: provider.Opaque, Provider: "anthropic", Raw: json.RawMessage(`{"type":"server_tool_use"}`)},
			{Type: provider.ToolUse, ID: "c1", Name: "screenshot", Input: json.RawMessage(`{}`)}}},
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.ToolResult, ToolUseID: "c1", Content: []provider.Block{
			{Type: provider.Text, Text: "captured"}, {Type: provider.Image, MIMEType: "image/png", Data: png}}}}},
	}}
	collect(t, m, req)
	jsonEqual(t, "body", s.bodies[0], `{"model":"gpt-5","stream":true,"input":[
		{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw=="}]},
		{"type":"function_call","call_id":"c1","name":"screenshot","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"captured"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw=="}]}]}`)
}

func TestErrors(t *testing.T) {
	t.Run("http 400", func(t *testing.T) {
		s := &server{t: t, status: http.StatusBadRequest, replay: []string{`{"error":{"message":"Invalid schema for function 'x'","type":"invalid_request_error","param":"tools[0].parameters","code":"invalid_function_parameters"}}`}}
		m := newModel(t, s, openaimodel.Options{})
		err := lastErr(m)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Errorf("error %v, want *openai.Error 400", err)
		}
	})
	t.Run("context overflow", func(t *testing.T) {
		s := &server{t: t, status: http.StatusBadRequest, replay: []string{`{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`}}
		err := lastErr(newModel(t, s, openaimodel.Options{}))
		var ov *provider.OverflowError
		var apiErr *openai.Error
		if !errors.As(err, &ov) || !errors.Is(err, provider.ErrContextOverflow) || !errors.As(err, &apiErr) {
			t.Errorf("error %v, want a *provider.OverflowError wrapping the *openai.Error", err)
		}
	})
	t.Run("context overflow in the stream", func(t *testing.T) {
		failed := strings.Replace(response("failed", ""), `"error":null`, `"error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}`, 1)
		s := &server{t: t, replay: []string{sse(`{"type":"response.failed","sequence_number":1,"response":` + failed + `}`)}}
		err := lastErr(newModel(t, s, openaimodel.Options{}))
		if !errors.Is(err, provider.ErrContextOverflow) || !errors.Is(err, openaimodel.ErrResponse) {
			t.Errorf("error %v, want an overflow wrapping ErrResponse", err)
		}
	})
	t.Run("response.failed", func(t *testing.T) {
		failed := strings.Replace(response("failed", ""), `"error":null`, `"error":{"code":"server_error","message":"boom"}`, 1)
		s := &server{t: t, replay: []string{sse(`{"type":"response.failed","sequence_number":1,"response":` + failed + `}`)}}
		m := newModel(t, s, openaimodel.Options{})
		if err := lastErr(m); !errors.Is(err, openaimodel.ErrResponse) || !strings.Contains(err.Error(), "boom") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("truncated stream", func(t *testing.T) {
		s := &server{t: t, replay: []string{sse(added(0, callItemAdded))}}
		m := newModel(t, s, openaimodel.Options{})
		if err := lastErr(m); !errors.Is(err, openaimodel.ErrResponse) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("incomplete", func(t *testing.T) {
		inc := strings.Replace(response("incomplete", messageItem), `"incomplete_details":null`, `"incomplete_details":{"reason":"max_output_tokens"}`, 1)
		s := &server{t: t, replay: []string{sse(`{"type":"response.incomplete","sequence_number":1,"response":` + inc + `}`)}}
		m := newModel(t, s, openaimodel.Options{})
		evs := collect(t, m, &provider.Request{Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "x"}}}}})
		if d := evs[len(evs)-1]; d.StopReason != "max_tokens" {
			t.Errorf("stop %q", d.StopReason)
		}
	})
}

func lastErr(m provider.Model) error {
	var last error
	for _, err := range m.Stream(context.Background(), &provider.Request{Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "x"}}}}}) {
		if err != nil {
			last = err
		}
	}
	return last
}

// TestStrictArgumentsRestored: a strict tool's call comes back with null
// for an optional property (strict mode made it required and nullable);
// the transcript holds the arguments without it (toolschema
// RestoreOptional), and the next request still sends the original item,
// with its id.
func TestStrictArgumentsRestored(t *testing.T) {
	item := `{"id":"fc_2","type":"function_call","status":"completed","arguments":"{\"screen\":{\"id\":\"home\"},\"list\":null}","call_id":"call_2","name":"open_screen"}`
	stream := sse(
		`{"type":"response.created","sequence_number":0,"response":`+response("in_progress", "")+`}`,
		done(0, item),
		`{"type":"response.completed","sequence_number":30,"response":`+response("completed", item)+`}`,
	)
	s := &server{t: t, replay: []string{stream, textStream}}
	m := newModel(t, s, openaimodel.Options{Strategy: provider.Native})
	req := &provider.Request{Tools: []provider.Tool{openScreen}, Messages: []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "open home"}}}}}
	evs := collect(t, m, req)
	if got := string(evs[0].Block.Input); got != `{"screen":{"id":"home"}}` {
		t.Errorf("input %s", got)
	}
	d := evs[len(evs)-1]
	req.Messages = append(req.Messages, *d.Message, provider.Message{Role: provider.User, Blocks: []provider.Block{
		{Type: provider.ToolResult, ToolUseID: "call_2", Content: []provider.Block{{Type: provider.Text, Text: "opened"}}}}})
	collect(t, m, req)
	jsonEqual(t, "second body", s.bodies[1], `{"model":"gpt-5","stream":true,
		"input":[{"role":"user","content":"open home"},`+item+`,{"type":"function_call_output","call_id":"call_2","output":"opened"}],
		"tools":[{"type":"tool_search"},`+openScreenJSON+`]}`)
}

// TestRefsResolve is the BH-035 property on the wire: every $ref in the
// emitted parameters resolves inside them (recursive schemas keep $defs).
func TestRefsResolve(t *testing.T) {
	tree := provider.Tool{Name: "tree", Description: "Walk a tree", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"root":{"$ref":"#/$defs/Node"}},"required":["root"],"$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["name"]}}}`)}
	legacy := provider.Tool{Name: "legacy", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"screen":{"$ref":"#/definitions/Screen"}},"definitions":{"Screen":{"type":"object","properties":{"id":{"type":"string"}}}}}`)}
	for _, st := range []provider.Strategy{provider.Native, provider.ActiveTools} {
		s := &server{t: t, replay: []string{textStream}}
		m := newModel(t, s, openaimodel.Options{Strategy: st})
		collect(t, m, &provider.Request{Tools: []provider.Tool{tree, legacy, openScreen}, Messages: []provider.Message{
			{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "x"}}}}})
		var body struct {
			Tools []struct {
				Name       string `json:"name"`
				Parameters any    `json:"parameters"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(s.bodies[0], &body); err != nil {
			t.Fatal(err)
		}
		for _, tl := range body.Tools {
			if tl.Parameters == nil {
				continue
			}
			for _, ref := range refs(tl.Parameters) {
				if !resolves(tl.Parameters, ref) {
					t.Errorf("%s: tool %s: $ref %q does not resolve in %v", st, tl.Name, ref, tl.Parameters)
				}
			}
		}
	}
}

func refs(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && k == "$ref" {
				out = append(out, s)
			} else {
				out = append(out, refs(c)...)
			}
		}
	case []any:
		for _, c := range x {
			out = append(out, refs(c)...)
		}
	}
	return out
}

func resolves(doc any, ref string) bool {
	if !strings.HasPrefix(ref, "#") {
		return false
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[tok]; !ok {
			return false
		}
	}
	return true
}

// TestCancel: ending ctx mid-stream ends the sequence with ctx's error.
func TestCancel(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse(`{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer ts.Close()
	zero := 0
	m := openaimodel.New(openaimodel.Options{APIKey: "k", BaseURL: ts.URL + "/v1/", HTTPClient: ts.Client(), MaxRetries: &zero, Model: "gpt-5"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	for ev, err := range m.Stream(ctx, &provider.Request{Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "x"}}}}}) {
		if ev.Kind == provider.EventText {
			cancel()
		}
		last = err
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", last)
	}
}
