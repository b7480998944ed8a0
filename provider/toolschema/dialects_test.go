package toolschema_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/provider/toolschema"
	"github.com/aibuddy/aibuddy/tool"
)

// Field cases from shared/cases/15-schema-dialects.md.
const (
	// BH-093: five tools, one strict decision each.
	bh093t1 = `{"type":"object","properties":{"value":{"oneOf":[{"type":"integer"},{"type":"string"}]}},"required":["value"]}`
	bh093t2 = `{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}`
	bh093t3 = `{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},"required":["q"]}`
	bh093t4 = `{"type":"object","properties":{"filters":{"type":"array","items":{"type":"object","properties":{"field":{"type":"string"},"value":{"type":"string"}},"required":["field","value"]}}},"required":["filters"]}`
	bh093t5 = `{"type":"object","properties":{"payload":{"type":"object"}},"required":["payload"]}`
	// BH-094: keywords outside the Gemini subset.
	bh094 = `{"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":0},"tags":{"type":"array","uniqueItems":true,"items":{"type":"string"}},"grid":{"type":"array","items":{"anyOf":[{"type":"array","items":{"type":"number"}},{"type":"null"}]}}},"additionalProperties":false,"$schema":"https://json-schema.org/draft/2020-12/schema"}`
	// Issue 14: a tool whose top-level schema is anyOf.
	rootAnyOf = `{"type":"object","anyOf":[
	 {"type":"object","properties":{"kind":{"const":"file"},"path":{"type":"string"}},"required":["kind","path"],"additionalProperties":false},
	 {"type":"object","properties":{"kind":{"const":"url"},"url":{"type":"string"}},"required":["kind","url"],"additionalProperties":false}]}`
)

// define compiles schema as a tool (the dispatch-time validator).
func define(t *testing.T, schema string) *tool.Tool {
	t.Helper()
	tl, err := tool.Define(tool.Spec{Name: "t", InputSchema: json.RawMessage(schema),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return nil, nil }})
	if err != nil {
		t.Fatalf("define: %v", err)
	}
	return tl
}

// parametersError asserts that input fails the full schema at the
// Parameters stage.
func parametersError(t *testing.T, tl *tool.Tool, input string) {
	t.Helper()
	err := tl.Validate(json.RawMessage(input))
	var te *tool.Error
	if !errors.As(err, &te) || te.Stage != tool.Parameters {
		t.Errorf("Validate(%s) = %v, want a Parameters-stage error", input, err)
	}
}

// TestBH093StrictDecisionPerTool: each tool gets its own decision; those
// that can be rewritten without losing meaning are rewritten and strict,
// the others are refused with the reason; with NoRewrite only a schema
// already in the subset is strict. Arguments of a strict call, after
// RestoreOptional, meet the original schema.
func TestBH093StrictDecisionPerTool(t *testing.T) {
	for _, c := range []struct {
		name, in  string
		want      string // "" : ErrNotStrict
		reason    string
		noRewrite bool // strict also with NoRewrite
	}{
		{name: "t1 oneOf of disjoint types", in: bh093t1,
			want: `{"additionalProperties":false,"properties":{"value":{"anyOf":[{"type":"integer"},{"type":"string"}]}},"required":["value"],"type":"object"}`},
		{name: "t2 format uri", in: bh093t2, reason: "format uri"},
		{name: "t3 optional limit", in: bh093t3,
			want: `{"additionalProperties":false,"properties":{"limit":{"type":["integer","null"]},"q":{"type":"string"}},"required":["limit","q"],"type":"object"}`},
		{name: "t4 nested objects", in: bh093t4,
			want: `{"additionalProperties":false,"properties":{"filters":{"items":{"additionalProperties":false,"properties":{"field":{"type":"string"},"value":{"type":"string"}},"required":["field","value"],"type":"object"},"type":"array"}},"required":["filters"],"type":"object"}`},
		{name: "t5 free-form object", in: bh093t5, reason: "/properties/payload is an object of any shape"},
		{name: "already strict", in: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
			want: `{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`, noRewrite: true},
	} {
		out, _, err := toolschema.ForOpenAIStrict(json.RawMessage(c.in))
		if c.want == "" {
			if !errors.Is(err, toolschema.ErrNotStrict) || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("%s: err = %v, want ErrNotStrict naming %q", c.name, err, c.reason)
			}
			if _, _, err := toolschema.ForOpenAI(json.RawMessage(c.in)); err != nil {
				t.Errorf("%s: non-strict projection: %v", c.name, err)
			}
		} else if err != nil || string(out) != c.want {
			t.Errorf("%s:\n got  %s %v\n want %s", c.name, out, err, c.want)
		}
		_, _, err = toolschema.ForOpenAIStrictWith(json.RawMessage(c.in), toolschema.StrictOptions{NoRewrite: true})
		if c.noRewrite != (err == nil) {
			t.Errorf("%s: NoRewrite err = %v, want strict=%v", c.name, err, c.noRewrite)
		}
		if err != nil && !errors.Is(err, toolschema.ErrNotStrict) {
			t.Errorf("%s: NoRewrite err = %v, want ErrNotStrict", c.name, err)
		}
	}
	// t3: strict sends limit null for "absent"; restored, it meets the original.
	tl := define(t, bh093t3)
	args, err := toolschema.RestoreOptional(json.RawMessage(bh093t3), json.RawMessage(`{"q":"x","limit":null}`))
	if err != nil || string(args) != `{"q":"x"}` {
		t.Fatalf("RestoreOptional = %s, %v", args, err)
	}
	if err := tl.Validate(args); err != nil {
		t.Errorf("restored arguments rejected: %v", err)
	}
	// t2 goes non-strict: its arguments still meet the original at dispatch.
	parametersError(t, define(t, bh093t2), `{"url":7}`)
}

// TestBH094GeminiSubset: the exact Gemini projection of the case schema,
// and the original still rejects n: 0 at the Parameters stage.
func TestBH094GeminiSubset(t *testing.T) {
	out, notes, err := toolschema.ForGemini(json.RawMessage(bh094), toolschema.GeminiOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"properties":{` +
		`"grid":{"items":{"items":{"type":"number"},"nullable":true,"type":"array"},"type":"array"},` +
		`"n":{"minimum":1,"type":"integer"},` +
		`"tags":{"description":"Also: items are unique.","items":{"type":"string"},"type":"array"}},"type":"object"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	for _, w := range []struct {
		path  string
		lossy bool
		sub   string
	}{
		{"/properties/n/exclusiveMinimum", false, "minimum 1"},
		{"/properties/tags/uniqueItems", true, "uniqueItems"},
		{"/additionalProperties", true, "additionalProperties false"},
		{"/properties/grid/items/anyOf", false, "nullable"},
	} {
		if !hasNote(notes, w.path, w.lossy, w.sub) {
			t.Errorf("no note %s %q in %v", w.path, w.sub, notes)
		}
	}
	tl := define(t, bh094)
	parametersError(t, tl, `{"n":0}`)
	parametersError(t, tl, `{"tags":["a","a"]}`)
	if err := tl.Validate(json.RawMessage(`{"n":1,"tags":["a"],"grid":[[1.5],null]}`)); err != nil {
		t.Errorf("valid arguments rejected: %v", err)
	}
}

// geminiFields is the Gemini Schema's field set (https://ai.google.dev/api/caching#Schema).
var geminiFields = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true, "enum": true,
	"maxItems": true, "minItems": true, "properties": true, "required": true, "minProperties": true,
	"maxProperties": true, "minLength": true, "maxLength": true, "pattern": true, "example": true,
	"anyOf": true, "propertyOrdering": true, "default": true, "items": true, "minimum": true, "maximum": true,
}

var geminiTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "object": true}

// checkGemini walks a Gemini projection: only subset fields, one type
// name, string enums, objects below the top with properties, arrays with
// items, required names that are properties.
func checkGemini(t *testing.T, label string, v any, path string) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s %s: schema is %T", label, path, v)
		return
	}
	for k, x := range m {
		if !geminiFields[k] {
			t.Errorf("%s %s: field %q outside the Gemini subset", label, path, k)
		}
		switch k {
		case "type":
			if s, _ := x.(string); !geminiTypes[s] {
				t.Errorf("%s %s: type %v", label, path, x)
			}
		case "enum":
			for _, e := range x.([]any) {
				if _, ok := e.(string); !ok {
					t.Errorf("%s %s: enum value %v not a string", label, path, e)
				}
			}
		case "properties":
			for name, sub := range x.(map[string]any) {
				checkGemini(t, label, sub, path+"/properties/"+name)
			}
		case "items":
			checkGemini(t, label, x, path+"/items")
		case "anyOf":
			t.Errorf("%s %s: nested anyOf sent", label, path)
		case "required":
			props, _ := m["properties"].(map[string]any)
			for _, r := range x.([]any) {
				if _, ok := props[r.(string)]; !ok {
					t.Errorf("%s %s: required %v is not a property", label, path, r)
				}
			}
		}
	}
	switch m["type"] {
	case "object":
		if p, _ := m["properties"].(map[string]any); len(p) == 0 && path != "" {
			t.Errorf("%s %s: object without properties", label, path)
		}
	case "array":
		if _, ok := m["items"]; !ok {
			t.Errorf("%s %s: array without items", label, path)
		}
	}
}

// TestGeminiOutputStaysInSubset is the Gemini property over every corpus
// schema and case schema.
func TestGeminiOutputStaysInSubset(t *testing.T) {
	all := map[string]string{"BH-094": bh094, "root anyOf objects": rootAnyOf,
		"t1": bh093t1, "t2": bh093t2, "t3": bh093t3, "t4": bh093t4, "t5": bh093t5,
		"const and enums": `{"type":"object","properties":{"c":{"const":"x"},"i":{"type":"integer","enum":[1,2]},"t":{"type":["string","integer"]},"m":{"type":"object","additionalProperties":{"type":"integer"}},"e":{"type":"number","exclusiveMaximum":1.5,"maximum":1},"tu":{"type":"array","prefixItems":[{"type":"string"}]},"ex":{"type":"string","examples":["a","b"]}}}`,
	}
	for k, v := range corpus {
		all[k] = v
	}
	for name, in := range all {
		out, _, err := toolschema.ForGemini(json.RawMessage(in), toolschema.GeminiOptions{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		checkGemini(t, name, v, "")
		if strings.Contains(string(out), `"$ref"`) || strings.Contains(string(out), `"$defs"`) {
			t.Errorf("%s: $ref or $defs sent to Gemini: %s", name, out)
		}
	}
}

// TestGeminiConstraintsKeptAsProse: what Gemini cannot enforce is in the
// description, not dropped.
func TestGeminiConstraintsKeptAsProse(t *testing.T) {
	in := `{"type":"object","properties":{"c":{"const":"x"},"i":{"type":"integer","enum":[1,2]},"m":{"type":"object","additionalProperties":{"type":"integer"}},"e":{"type":"number","exclusiveMaximum":1.5,"maximum":1},"u":{"type":"string","format":"uri"},"ex":{"type":"string","examples":["a","b"]}}}`
	out, _, err := toolschema.ForGemini(json.RawMessage(in), toolschema.GeminiOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"properties":{` +
		`"c":{"enum":["x"],"type":"string"},` +
		`"e":{"description":"Also: value < 1.5.","maximum":1,"type":"number"},` +
		`"ex":{"example":"a","type":"string"},` +
		`"i":{"description":"Also: is one of 1, 2.","type":"integer"},` +
		`"m":{"description":"Also: other fields: is an integer; a JSON object."},` +
		`"u":{"description":"Also: in uri format.","type":"string"}},"type":"object"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// TestBH034RefsPerDialect: non-recursive refs are inlined everywhere;
// recursive ones stay under $defs where $ref is accepted and are cut off
// at RefDepth, with a note, for Gemini. The full schema rejects
// {"screen":{}} with "id" named.
func TestBH034RefsPerDialect(t *testing.T) {
	screen := `{"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"}`
	for _, in := range []string{bh034, bh034Legacy} {
		out, _, err := toolschema.ForGemini(json.RawMessage(in), toolschema.GeminiOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `"screen":`+screen) || strings.Contains(string(out), "$ref") {
			t.Errorf("gemini: %s", out)
		}
	}
	out, notes, err := toolschema.ForGemini(json.RawMessage(bh034Recursive), toolschema.GeminiOptions{RefDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"description":"open a screen","properties":{"screen":{"properties":{"children":{"items":{"properties":{"children":{"items":{"description":"Same shape as Screen (nested deeper than 2 levels; not spelled out here)."},"type":"array"},"id":{"type":"string"}},"required":["id"],"type":"object"},"type":"array"},"id":{"type":"string"}},"required":["id"],"type":"object"}},"required":["screen"],"type":"object"}`
	if string(out) != want {
		t.Errorf("recursive got  %s\nwant %s", out, want)
	}
	if !hasNote(notes, "", true, `recursive $ref "#/$defs/Screen" cut off at nesting depth 2`) {
		t.Errorf("no cut note: %v", notes)
	}
	d1, _, _ := toolschema.ForGemini(json.RawMessage(bh034Recursive), toolschema.GeminiOptions{RefDepth: 1})
	d3, _, _ := toolschema.ForGemini(json.RawMessage(bh034Recursive), toolschema.GeminiOptions{RefDepth: 3})
	if strings.Count(string(d1), `"id":{`) != 1 || strings.Count(string(d3), `"id":{`) != 3 {
		t.Errorf("depth not honoured:\n1: %s\n3: %s", d1, d3)
	}
	err = define(t, bh034).Validate(json.RawMessage(`{"screen":{}}`))
	if err == nil || !strings.Contains(err.Error(), "id") {
		t.Errorf("Validate({screen:{}}) = %v, want a Parameters error naming id", err)
	}
}

// TestTopLevelAnyOfFlattened is issue 14's fault: a top-level anyOf gave
// the model no fields. Every dialect now lists kind, path and url, with
// the forms described; strict refuses it (the forms are not enforced) and
// says why; the model's answer is checked against the original.
func TestTopLevelAnyOfFlattened(t *testing.T) {
	wantProps := `"properties":{"kind":{"enum":["file","url"]},"path":{"type":"string"},"url":{"type":"string"}},"required":["kind"]`
	prose := `exactly one of these forms: (kind=file; path is required) or (kind=url; url is required)`
	oneOf := strings.Replace(rootAnyOf, "anyOf", "oneOf", 1)
	for _, p := range projections {
		out, notes, err := p.fn(json.RawMessage(oneOf))
		if p.name == "ForOpenAIStrict" {
			if !errors.Is(err, toolschema.ErrNotStrict) || !strings.Contains(err.Error(), "flattened top-level oneOf") {
				t.Errorf("strict: err = %v, want ErrNotStrict about the flattening", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		s := string(out)
		if p.name == "ForGemini" {
			s = strings.Replace(s, `"enum":["file","url"],"type":"string"`, `"enum":["file","url"]`, 1)
		}
		if !strings.Contains(s, wantProps) || !strings.Contains(s, prose) {
			t.Errorf("%s: %s", p.name, out)
		}
		if !hasNote(notes, "/oneOf", true, "fields kind, path, url are root properties") {
			t.Errorf("%s: notes %v", p.name, notes)
		}
	}
	tl := define(t, oneOf)
	if err := tl.Validate(json.RawMessage(`{"kind":"file","path":"a.txt"}`)); err != nil {
		t.Errorf("valid form rejected: %v", err)
	}
	parametersError(t, tl, `{"kind":"file","url":"http://x"}`)
	parametersError(t, tl, `{}`)
}

// TestCaseSchemasPerDialect is the table over the case schemas: each
// dialect's projection keeps every field the model needs, and, for
// Anthropic and OpenAI, no top-level combinator and only resolvable $refs.
func TestCaseSchemasPerDialect(t *testing.T) {
	for _, c := range []struct {
		id, in string
		fields []string
	}{
		{"BH-031", bh031, []string{"mode", "size"}},
		{"BH-034", bh034, []string{"screen", "list"}},
		{"BH-034 recursive", bh034Recursive, []string{"screen"}},
		{"BH-038", bh038, []string{"zone", "name"}},
		{"BH-093 t1", bh093t1, []string{"value"}},
		{"BH-093 t5", bh093t5, []string{"payload"}},
		{"BH-094", bh094, []string{"n", "tags", "grid"}},
		{"issue 14 root anyOf", rootAnyOf, []string{"kind", "path", "url"}},
	} {
		for _, p := range projections {
			out, _, err := p.fn(json.RawMessage(c.in))
			if errors.Is(err, toolschema.ErrNotStrict) {
				out, _, err = toolschema.ForOpenAI(json.RawMessage(c.in))
			}
			if err != nil {
				t.Errorf("%s %s: %v", c.id, p.name, err)
				continue
			}
			checkOutput(t, c.id+" "+p.name, out)
			var m struct {
				Properties map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatal(err)
			}
			for _, f := range c.fields {
				if _, ok := m.Properties[f]; !ok {
					t.Errorf("%s %s: field %s not visible: %s", c.id, p.name, f, out)
				}
			}
		}
	}
}

// TestStrictNestedBranchesRestored: an anyOf of object branches with
// optional fields goes strict (each branch closed, optional fields
// nullable); the nulls the model sends are removed so the arguments meet
// the original schema.
func TestStrictNestedBranchesRestored(t *testing.T) {
	in := `{"type":"object","properties":{"target":{"anyOf":[
	 {"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}},"required":["path"]},
	 {"type":"object","properties":{"url":{"type":"string"},"depth":{"type":"integer"}},"required":["url"]}]}},"required":["target"]}`
	out, _, err := toolschema.ForOpenAIStrict(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"line":{"type":["integer","null"]}`) || !strings.Contains(string(out), `"required":["line","path"]`) {
		t.Errorf("strict: %s", out)
	}
	tl := define(t, in)
	model := `{"target":{"path":"a.go","line":null}}`
	parametersError(t, tl, model) // as the model sends it, the original refuses it
	args, err := toolschema.RestoreOptional(json.RawMessage(in), json.RawMessage(model))
	if err != nil || string(args) != `{"target":{"path":"a.go"}}` {
		t.Fatalf("RestoreOptional = %s, %v", args, err)
	}
	if err := tl.Validate(args); err != nil {
		t.Errorf("restored arguments rejected: %v", err)
	}
}
