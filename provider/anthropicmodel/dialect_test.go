package anthropicmodel_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
)

// schemaAPI is a Messages API endpoint that checks tools the way the API
// answers them: input_schema must be a JSON Schema (draft 2020-12) object
// with "type": "object" and no oneOf, allOf or anyOf at the top level
// (400 "tools.N.custom.input_schema: input_schema does not support oneOf,
// allOf, or anyOf at the top level"), every $ref must resolve inside it,
// and an empty tools array is refused. A passing request gets a text
// stream.
type schemaAPI struct {
	mu     sync.Mutex
	bodies []string
	codes  []int
}

func anthropicViolation(i int, schema json.RawMessage) string {
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return fmt.Sprintf("tools.%d.custom.input_schema: %v", i, err)
	}
	if m["type"] != "object" {
		return fmt.Sprintf("tools.%d.custom.input_schema.type: Input should be 'object'", i)
	}
	for _, k := range []string{"oneOf", "allOf", "anyOf"} {
		if _, ok := m[k]; ok {
			return fmt.Sprintf("tools.%d.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level", i)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return err.Error()
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no remote loading: a $ref must resolve inside
	if err := c.AddResource("input_schema.json", doc); err != nil {
		return err.Error()
	}
	if _, err := c.Compile("input_schema.json"); err != nil {
		return fmt.Sprintf("tools.%d.custom.input_schema: JSON schema is invalid: %v", i, err)
	}
	return ""
}

func (s *schemaAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req struct {
		Tools *[]struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	msg := ""
	if err := json.Unmarshal(b, &req); err != nil {
		msg = err.Error()
	} else if req.Tools != nil && len(*req.Tools) == 0 {
		msg = "tools: List should have at least 1 item after validation, not 0"
	} else if req.Tools != nil {
		for i, tl := range *req.Tools {
			if tl.InputSchema == nil {
				continue // a server tool
			}
			if msg = anthropicViolation(i, tl.InputSchema); msg != "" {
				break
			}
		}
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	if msg == "" {
		s.codes = append(s.codes, 200)
	} else {
		s.codes = append(s.codes, 400)
	}
	s.mu.Unlock()
	if msg != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		out, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
		w.Write(out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, finalText)
}

// caseTools are the schema cases that reach the Anthropic adapter: BH-031
// (root allOf with if/then), BH-034 (refs, legacy definitions, recursion),
// BH-038 (impossible branch), and issue 14's top-level oneOf.
var caseTools = []provider.Tool{
	{Name: "shapes__resize", InputSchema: json.RawMessage(resizeSchema)},
	{Name: "open_screen", InputSchema: json.RawMessage(`{"type":"object","properties":{"screen":{"$ref":"#/$defs/Screen"},"list":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},"required":["screen"],"$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}`)},
	{Name: "open_legacy", InputSchema: json.RawMessage(`{"type":"object","properties":{"screen":{"$ref":"#/definitions/Screen"}},"required":["screen"],"definitions":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}`)},
	{Name: "open_tree", InputSchema: json.RawMessage(`{"type":"object","properties":{"screen":{"$ref":"#/$defs/Screen"}},"required":["screen"],"$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},"required":["id"]}}}`)},
	{Name: "set_zone", InputSchema: json.RawMessage(`{"type":"object","properties":{"zone":{"anyOf":[{"not":{}},{"type":"string","enum":["north","south"]}]}}}`)},
	{Name: "fetch", InputSchema: json.RawMessage(`{"type":"object","oneOf":[{"properties":{"path":{"type":"string"}},"required":["path"]},{"properties":{"url":{"type":"string"}},"required":["url"]}]}`)},
}

// TestCaseSchemasOnTheWire: a Messages request carrying every case schema
// is accepted (200) by an endpoint that enforces the API's input_schema
// rules; the top-level oneOf tool lists its fields, BH-038's zone is
// collapsed and optional, and ExplainSchemas names the lossy changes. The
// raw schemas, sent as they are, are refused: the endpoint checks what
// the cases are about.
func TestCaseSchemasOnTheWire(t *testing.T) {
	api := &schemaAPI{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	m := anthropicmodel.New(anthropicmodel.Options{APIKey: "test-key", BaseURL: srv.URL, MaxRetries: -1, Strategy: provider.ActiveTools})
	if _, err := collect(t, m, &provider.Request{Tools: caseTools, Messages: []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "go"}}}}}); err != nil {
		t.Fatalf("stream: %v (status %v)", err, api.codes)
	}
	var body struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(api.bodies[0]), &body); err != nil {
		t.Fatal(err)
	}
	sent := map[string]string{}
	for _, tl := range body.Tools {
		sent[tl.Name] = string(tl.InputSchema)
	}
	jsonEqual(t, "fetch", sent["fetch"], `{"type":"object","properties":{"path":{"type":"string"},"url":{"type":"string"}},
		"description":"Also required (checked when called): exactly one of these forms: (path is required) or (url is required)."}`)
	jsonEqual(t, "set_zone", sent["set_zone"], `{"type":"object","properties":{"zone":{"type":"string","enum":["north","south"]}}}`)
	if !strings.Contains(sent["open_tree"], `"$defs":{"Screen"`) {
		t.Errorf("open_tree: recursive definition not kept: %s", sent["open_tree"])
	}
	changed := map[string]bool{}
	for _, d := range m.ExplainSchemas(caseTools) {
		if d.Dialect != "anthropic" || d.Err != nil {
			t.Errorf("decision %+v", d)
		}
		changed[d.Tool] = len(d.Changes) > 0
	}
	if !changed["shapes__resize"] || !changed["fetch"] || changed["open_screen"] || changed["set_zone"] {
		t.Errorf("lossy changes per tool %v", changed)
	}

	// Control: the raw schemas are refused by this endpoint.
	for _, i := range []int{0, 5} {
		if msg := anthropicViolation(i, caseTools[i].InputSchema); !strings.Contains(msg, "does not support oneOf, allOf, or anyOf at the top level") {
			t.Errorf("raw %s: %q", caseTools[i].Name, msg)
		}
	}
	if msg := anthropicViolation(0, json.RawMessage(`{"type":"object","properties":{"s":{"$ref":"#/$defs/Screen"}}}`)); msg == "" {
		t.Error("a dangling $ref passed the endpoint's check")
	}
}
