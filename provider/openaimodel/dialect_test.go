package openaimodel_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/openaimodel"
)

// strictAPI is a Responses API endpoint that checks function tools the way
// the API documents it ("Supported schemas",
// https://platform.openai.com/docs/guides/structured-outputs#supported-schemas):
// a strict tool's parameters must be an object at the top, every object
// must have "additionalProperties": false and list all its properties in
// required, only the supported keywords may appear, formats are limited to
// the listed ones, and $refs must resolve; any tool's parameters must have
// type object and no anyOf/oneOf/allOf/not/enum at the top; an empty tools
// array is refused. A failing request gets the API's 400 error shape; a
// passing one the text stream.
type strictAPI struct {
	t      *testing.T
	mu     sync.Mutex
	bodies [][]byte
	codes  []int
}

var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"anyOf": true, "enum": true, "const": true, "description": true, "title": true, "$ref": true, "$defs": true,
	"pattern": true, "format": true, "minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "multipleOf": true, "minItems": true, "maxItems": true,
}

var strictFormats = map[string]bool{"date-time": true, "time": true, "date": true, "duration": true,
	"email": true, "hostname": true, "ipv4": true, "ipv6": true, "uuid": true}

func strictViolation(doc, v any, ctx string) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ctx + ": schema must be an object"
	}
	for k, x := range m {
		if !strictKeywords[k] {
			return fmt.Sprintf("In context=(%s), '%s' is not permitted", ctx, k)
		}
		if k == "format" && !strictFormats[x.(string)] {
			return fmt.Sprintf("In context=(%s), 'format' '%v' is not permitted", ctx, x)
		}
		if k == "$ref" && !resolves(doc, x.(string)) {
			return fmt.Sprintf("In context=(%s), reference %v can't be resolved", ctx, x)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok || m["type"] == "object" {
		if m["additionalProperties"] != false {
			return fmt.Sprintf("In context=(%s), 'additionalProperties' is required to be supplied and to be false", ctx)
		}
		req := map[string]bool{}
		for _, r := range listAny(m["required"]) {
			req[r.(string)] = true
		}
		for name, sub := range props {
			if !req[name] {
				return fmt.Sprintf("In context=(%s), 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", ctx, name)
			}
			if msg := strictViolation(doc, sub, ctx+", 'properties', '"+name+"'"); msg != "" {
				return msg
			}
		}
	}
	if it, ok := m["items"]; ok {
		if msg := strictViolation(doc, it, ctx+", 'items'"); msg != "" {
			return msg
		}
	}
	for i, b := range listAny(m["anyOf"]) {
		if msg := strictViolation(doc, b, fmt.Sprintf("%s, 'anyOf', '%d'", ctx, i)); msg != "" {
			return msg
		}
	}
	if defs, ok := m["$defs"].(map[string]any); ok {
		for name, d := range defs {
			if msg := strictViolation(doc, d, ctx+", '$defs', '"+name+"'"); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func listAny(x any) []any { l, _ := x.([]any); return l }

func (s *strictAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Tools *[]struct {
			Type       string         `json:"type"`
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
			Strict     *bool          `json:"strict"`
		} `json:"tools"`
	}
	msg := ""
	if err := json.Unmarshal(body, &req); err != nil {
		msg = err.Error()
	} else if req.Tools != nil && len(*req.Tools) == 0 {
		msg = "Invalid 'tools': empty array. Expected an array with minimum length 1."
	} else if req.Tools != nil {
		for i, tl := range *req.Tools {
			if tl.Type != "function" {
				continue
			}
			p := tl.Parameters
			if p["type"] != "object" {
				msg = fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%v\"'.", tl.Name, p["type"])
			}
			for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "enum"} {
				if _, ok := p[k]; ok && msg == "" {
					msg = fmt.Sprintf("Invalid schema for function '%s': schema must have type 'object' and not have '%s' at the top level.", tl.Name, k)
				}
			}
			if msg == "" && (tl.Strict == nil || *tl.Strict) {
				if v := strictViolation(p, p, "()"); v != "" {
					msg = fmt.Sprintf("Invalid schema for function '%s': %s. (tools[%d].parameters)", tl.Name, v, i)
				}
			}
			if msg != "" {
				break
			}
		}
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	if msg != "" {
		s.codes = append(s.codes, 400)
	} else {
		s.codes = append(s.codes, 200)
	}
	s.mu.Unlock()
	if msg != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": "tools", "code": "invalid_function_parameters"}})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, textStream)
}

func newStrictModel(t *testing.T, api *strictAPI, opts openaimodel.Options) *openaimodel.Model {
	t.Helper()
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	zero := 0
	opts.APIKey, opts.BaseURL, opts.HTTPClient, opts.MaxRetries = "sk-test", ts.URL+"/v1/", ts.Client(), &zero
	if opts.Model == "" {
		opts.Model = "gpt-5"
	}
	return openaimodel.New(opts)
}

// bh093 are the five MCP tools of case BH-093, plus a tool whose whole
// schema is a top-level anyOf (issue 14).
var bh093 = []provider.Tool{
	{Name: "t1", InputSchema: json.RawMessage(`{"type":"object","properties":{"value":{"oneOf":[{"type":"integer"},{"type":"string"}]}},"required":["value"]}`)},
	{Name: "t2", InputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}`)},
	{Name: "t3", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},"required":["q"]}`)},
	{Name: "t4", InputSchema: json.RawMessage(`{"type":"object","properties":{"filters":{"type":"array","items":{"type":"object","properties":{"field":{"type":"string"}},"required":["field"]}}},"required":["filters"]}`)},
	{Name: "t5", InputSchema: json.RawMessage(`{"type":"object","properties":{"payload":{"type":"object"}},"required":["payload"]}`)},
	{Name: "fetch", InputSchema: json.RawMessage(`{"type":"object","anyOf":[{"properties":{"path":{"type":"string"}},"required":["path"]},{"properties":{"url":{"type":"string"}},"required":["url"]}]}`)},
}

type sentTool struct {
	Name       string          `json:"name"`
	Strict     bool            `json:"strict"`
	Parameters json.RawMessage `json:"parameters"`
}

func sentTools(t *testing.T, body []byte) map[string]sentTool {
	t.Helper()
	var b struct {
		Tools []sentTool `json:"tools"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	out := map[string]sentTool{}
	for _, tl := range b.Tools {
		out[tl.Name] = tl
	}
	return out
}

// TestBH093StrictDecisionsOnTheWire: one Responses request with the five
// BH-093 tools and a top-level anyOf tool is accepted (200) by an endpoint
// that enforces strict mode's rules; each tool's strict flag is its own,
// the non-strict ones have a reason (logged and in ExplainSchemas), and
// the anyOf tool shows its fields. With provider.StrictExact, t1, t3 and
// t4 (which need rewriting) go non-strict; with StrictOff, all do.
func TestBH093StrictDecisionsOnTheWire(t *testing.T) {
	for _, c := range []struct {
		mode   provider.StrictMode
		strict []string
	}{
		{provider.StrictAuto, []string{"t1", "t3", "t4"}},
		{provider.StrictExact, nil},
		{provider.StrictOff, nil},
	} {
		api := &strictAPI{t: t}
		var logs bytes.Buffer
		m := newStrictModel(t, api, openaimodel.Options{Strategy: provider.ActiveTools, Strict: c.mode,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		collect(t, m, &provider.Request{Tools: bh093, Messages: []provider.Message{
			{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "go"}}}}})
		if api.codes[0] != 200 {
			t.Fatalf("%s: status %d", c.mode, api.codes[0])
		}
		sent := sentTools(t, api.bodies[0])
		var strict []string
		for name, tl := range sent {
			if tl.Strict {
				strict = append(strict, name)
			}
		}
		sort.Strings(strict)
		if fmt.Sprint(strict) != fmt.Sprint(c.strict) {
			t.Errorf("%s: strict tools %v, want %v", c.mode, strict, c.strict)
		}
		decisions := m.ExplainSchemas(bh093)
		if len(decisions) != len(bh093) {
			t.Fatalf("%s: %d decisions", c.mode, len(decisions))
		}
		for _, d := range decisions {
			if d.Strict != sent[d.Tool].Strict {
				t.Errorf("%s: %s decision strict=%v, sent %v", c.mode, d.Tool, d.Strict, sent[d.Tool].Strict)
			}
			if !d.Strict && (d.Reason == "" || !strings.Contains(logs.String(), "tool="+d.Tool+" reason=")) {
				t.Errorf("%s: %s non-strict without a reason in the decision or the log: %+v\n%s", c.mode, d.Tool, d, logs.String())
			}
		}
		if c.mode == provider.StrictAuto {
			want := map[string]string{
				"t2":    "format uri",
				"t5":    "/properties/payload is an object of any shape",
				"fetch": "flattened top-level anyOf",
			}
			for _, d := range decisions {
				if w, ok := want[d.Tool]; ok && !strings.Contains(d.Reason, w) {
					t.Errorf("%s reason %q, want it to name %q", d.Tool, d.Reason, w)
				}
			}
			jsonEqual(t, "t3", sent["t3"].Parameters, `{"type":"object","additionalProperties":false,"required":["limit","q"],"properties":{"q":{"type":"string"},"limit":{"type":["integer","null"]}}}`)
			jsonEqual(t, "t4", sent["t4"].Parameters, `{"type":"object","additionalProperties":false,"required":["filters"],"properties":{"filters":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["field"],"properties":{"field":{"type":"string"}}}}}}`)
			jsonEqual(t, "fetch", sent["fetch"].Parameters, `{"type":"object","properties":{"path":{"type":"string"},"url":{"type":"string"}},
				"description":"Also required (checked when called): at least one of these forms: (path is required) or (url is required)."}`)
		}
		if c.mode == provider.StrictOff && !strings.Contains(decisions[0].Reason, "strict mode off in settings") {
			t.Errorf("off: reason %q", decisions[0].Reason)
		}
	}
}

// TestStrictAPIRefusesWhatTheOldProjectionSent keeps the fake endpoint
// honest: the request issue 14 describes (a top-level anyOf sent strict
// with empty properties) and a strict format uri are refused with 400.
func TestStrictAPIRefusesWhatTheOldProjectionSent(t *testing.T) {
	api := &strictAPI{t: t}
	ts := httptest.NewServer(api)
	defer ts.Close()
	for _, body := range []string{
		`{"model":"gpt-5","input":"go","tools":[{"type":"function","name":"fetch","parameters":{"type":"object","properties":{},"anyOf":[{"required":["path"]}]},"strict":true}]}`,
		`{"model":"gpt-5","input":"go","tools":[{"type":"function","name":"t2","parameters":{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"],"additionalProperties":false},"strict":true}]}`,
		`{"model":"gpt-5","input":"go","tools":[{"type":"function","name":"t3","parameters":{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},"required":["q"],"additionalProperties":false},"strict":true}]}`,
		`{"model":"gpt-5","input":"go","tools":[]}`,
	} {
		resp, err := http.Post(ts.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("status %d for %s", resp.StatusCode, body)
		}
	}
}
