package chatmodel_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/chatmodel"
)

// geminiAPI is Gemini's OpenAI-compatible chat completions endpoint
// (POST /v1beta/openai/chat/completions, https://ai.google.dev/gemini-api/docs/openai)
// as far as tool parameters go: they are read as a Gemini Schema
// (https://ai.google.dev/api/caching#Schema), and the first field outside
// it, a type list, a non-string enum, an OBJECT without properties below
// the top or an ARRAY without items fails the whole request with 400
// INVALID_ARGUMENT ("Invalid JSON payload received. Unknown name ...",
// "should be non-empty for OBJECT type"). An empty tools array is refused
// too. A passing request gets a text stream.
type geminiAPI struct {
	t      *testing.T
	mu     sync.Mutex
	bodies [][]byte
	codes  []int
}

var geminiSchemaFields = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true, "enum": true,
	"maxItems": true, "minItems": true, "properties": true, "required": true, "minProperties": true,
	"maxProperties": true, "minLength": true, "maxLength": true, "pattern": true, "example": true,
	"anyOf": true, "propertyOrdering": true, "default": true, "items": true, "minimum": true, "maximum": true,
}

func geminiViolation(v any, at string, top bool) string {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprintf("Invalid value at '%s'", at)
	}
	for k, x := range m {
		if !geminiSchemaFields[k] {
			return fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, at)
		}
		switch k {
		case "type":
			s, ok := x.(string)
			if !ok || !map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "object": true}[strings.ToLower(s)] {
				return fmt.Sprintf("Invalid value at '%s.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), %v", at, x)
			}
		case "enum":
			for _, e := range x.([]any) {
				if _, ok := e.(string); !ok {
					return fmt.Sprintf("Invalid value at '%s.enum' (TYPE_STRING), %v", at, e)
				}
			}
		case "properties":
			for name, sub := range x.(map[string]any) {
				if msg := geminiViolation(sub, at+".properties["+name+"].value", false); msg != "" {
					return msg
				}
			}
		case "items":
			if msg := geminiViolation(x, at+".items", false); msg != "" {
				return msg
			}
		}
	}
	switch strings.ToLower(fmt.Sprint(m["type"])) {
	case "object":
		if p, _ := m["properties"].(map[string]any); len(p) == 0 {
			return at + ".properties: should be non-empty for OBJECT type"
		}
	case "array":
		if _, ok := m["items"]; !ok {
			return at + ".items: missing field."
		}
	}
	return ""
}

func (g *geminiAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1beta/openai/chat/completions" {
		g.t.Errorf("request %s %s, want POST /v1beta/openai/chat/completions", r.Method, r.URL.Path)
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Tools *[]struct {
			Function struct {
				Name       string `json:"name"`
				Parameters any    `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice any `json:"tool_choice"`
	}
	msg := ""
	if err := json.Unmarshal(body, &req); err != nil {
		msg = err.Error()
	} else if req.Tools != nil && len(*req.Tools) == 0 {
		msg = "* GenerateContentRequest.tools[0].function_declarations: must not be empty"
	} else if req.Tools != nil {
		for i, tl := range *req.Tools {
			if tl.Function.Parameters == nil {
				continue
			}
			if v := geminiViolation(tl.Function.Parameters, fmt.Sprintf("tools[0].function_declarations[%d].parameters", i), true); v != "" {
				msg = v
				break
			}
		}
	}
	g.mu.Lock()
	g.bodies = append(g.bodies, body)
	code := 200
	if msg != "" {
		code = 400
	}
	g.codes = append(g.codes, code)
	g.mu.Unlock()
	if msg != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		b, _ := json.Marshal([]any{map[string]any{"error": map[string]any{"code": 400, "message": msg, "status": "INVALID_ARGUMENT"}}})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, textStream)
}

// geminiClient reaches ts for any host name, so the adapter can be given
// Gemini's real base URL (and pick the Gemini dialect from it) while only
// the local server answers.
func geminiClient(ts *httptest.Server) *http.Client {
	tr := ts.Client().Transport.(*http.Transport).Clone()
	addr := ts.Listener.Addr().String()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	tr.TLSClientConfig = tr.TLSClientConfig.Clone()
	tr.TLSClientConfig.ServerName = "example.com" // httptest's certificate
	tr.TLSClientConfig.MinVersion = tls.VersionTLS12
	return &http.Client{Transport: tr}
}

// bh094Tools are the case BH-094 tool and the other case shapes that
// Gemini's subset cannot take as they are.
var bh094Tools = []provider.Tool{
	{Name: "pizza", Description: "Order pizzas", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":0},"tags":{"type":"array","uniqueItems":true,"items":{"type":"string"}},"grid":{"type":"array","items":{"anyOf":[{"type":"array","items":{"type":"number"}},{"type":"null"}]}}},"additionalProperties":false,"$schema":"https://json-schema.org/draft/2020-12/schema"}`)},
	{Name: "open_screen", InputSchema: json.RawMessage(`{"type":"object","properties":{"screen":{"$ref":"#/$defs/Screen"}},"required":["screen"],"$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},"required":["id"]}}}`)},
	{Name: "fetch", InputSchema: json.RawMessage(`{"type":"object","oneOf":[{"properties":{"path":{"type":"string"}},"required":["path"]},{"properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}]}`)},
	{Name: "post", InputSchema: json.RawMessage(`{"type":"object","properties":{"payload":{"type":"object"},"mode":{"type":["string","null"],"enum":["a","b",null]},"level":{"enum":[1,2,3]}},"required":["payload"]}`)},
	{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
}

// TestBH094GeminiOnTheWire: a chat-completions route whose base URL is
// Gemini's OpenAI-compatible endpoint picks the Gemini dialect by itself;
// the request with the BH-094 tool and the other case shapes is accepted
// (200) by an endpoint that enforces the Gemini Schema subset, the BH-094
// tool is sent as the case expects, and the lossy changes are in
// ExplainSchemas. The OpenAI dialect on the same endpoint gets 400, which
// shows the endpoint checks what the case is about.
func TestBH094GeminiOnTheWire(t *testing.T) {
	api := &geminiAPI{t: t}
	ts := httptest.NewTLSServer(api)
	t.Cleanup(ts.Close)
	zero := 0
	opts := chatmodel.Options{APIKey: "gm-key", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai/",
		Model: "gemini-2.5-flash", HTTPClient: geminiClient(ts), MaxRetries: &zero}
	m := chatmodel.New(opts)
	req := &provider.Request{Tools: bh094Tools, Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{text("order")}}}}
	collect(t, m, req)
	if api.codes[0] != 200 {
		t.Fatalf("status %d: %s", api.codes[0], api.bodies[0])
	}
	var body struct {
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(api.bodies[0], &body); err != nil {
		t.Fatal(err)
	}
	sent := map[string]json.RawMessage{}
	for _, tl := range body.Tools {
		sent[tl.Function.Name] = tl.Function.Parameters
	}
	jsonEqual(t, "pizza", sent["pizza"], `{"type":"object","properties":{
		"n":{"type":"integer","minimum":1},
		"tags":{"type":"array","items":{"type":"string"},"description":"Also: items are unique."},
		"grid":{"type":"array","items":{"type":"array","items":{"type":"number"},"nullable":true}}}}`)
	jsonEqual(t, "post", sent["post"], `{"type":"object","required":["payload"],"properties":{
		"payload":{"description":"Also: a JSON object."},
		"mode":{"type":"string","enum":["a","b"],"nullable":true},
		"level":{"description":"Also: is one of 1, 2, 3."}}}`)
	if sent["ping"] != nil {
		t.Errorf("ping: parameters %s, want none (Gemini refuses an OBJECT without properties)", sent["ping"])
	}
	if !strings.Contains(string(sent["fetch"]), `"path":{"type":"string"}`) || !strings.Contains(string(sent["fetch"]), `"url":{`) {
		t.Errorf("fetch: fields not visible: %s", sent["fetch"])
	}
	var changed []string
	for _, d := range m.ExplainSchemas(bh094Tools) {
		if d.Dialect != "gemini" || d.Err != nil {
			t.Errorf("decision %+v", d)
		}
		if len(d.Changes) > 0 {
			changed = append(changed, d.Tool)
		}
	}
	sort.Strings(changed)
	if fmt.Sprint(changed) != "[fetch open_screen pizza post]" {
		t.Errorf("tools with lossy changes %v", changed)
	}

	// The same tools in the OpenAI dialect are refused by this endpoint.
	opts.Dialect = provider.DialectOpenAI
	for _, err := range chatmodel.New(opts).Stream(context.Background(), req) {
		if err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "400") {
			t.Errorf("openai dialect: err %v, want a 400", err)
		}
	}
	if api.codes[len(api.codes)-1] != 400 {
		t.Errorf("openai dialect on Gemini: status %d, want 400", api.codes[len(api.codes)-1])
	}
}
