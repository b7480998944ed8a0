package toolschema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/provider/toolschema"
	"github.com/aibuddy/aibuddy/tool"
)

// Field cases from shared/cases/5-mcp-schemas.md.
const (
	bh031 = `{"type":"object",
	 "properties":{"mode":{"type":"string","enum":["quick","full"]},"size":{"type":"integer"}},
	 "required":["mode"],
	 "allOf":[{"if":{"properties":{"mode":{"const":"quick"}}},"then":{"properties":{"size":{"maximum":64}}}}]}`
	bh034 = `{"type":"object",
	 "properties":{"screen":{"$ref":"#/$defs/Screen"},"list":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},
	 "required":["screen"],
	 "$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}`
	bh034Legacy = `{"type":"object",
	 "properties":{"screen":{"$ref":"#/definitions/Screen"}},
	 "required":["screen"],
	 "definitions":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}`
	bh034Recursive = `{"type":"object","description":"open a screen","additionalProperties":false,
	 "properties":{"screen":{"$ref":"#/$defs/Screen"}},
	 "required":["screen"],
	 "$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"},
	   "children":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},"required":["id"]}}}`
	bh038 = `{"type":"object","properties":{
	 "zone":{"anyOf":[{"not":{}},{"type":"string","enum":["north","south"]}]},
	 "name":{"type":"string"}},"required":["name"]}`
)

// corpus is every schema the property test runs: the BH cases and the
// shapes MCP servers ship.
var corpus = map[string]string{
	"BH-031":           bh031,
	"BH-034":           bh034,
	"BH-034 legacy":    bh034Legacy,
	"BH-034 recursive": bh034Recursive,
	"BH-038":           bh038,
	"plain":            `{"type":"object","properties":{"path":{"type":"string","description":"a file"}},"required":["path"]}`,
	"empty":            `{"type":"object"}`,
	"root anyOf":       `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
	"root oneOf":       `{"type":"object","properties":{"a":{"type":"string"}},"oneOf":[{"required":["a"]},{"not":{"required":["a"]}}]}`,
	"root allOf merge": `{"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{"type":"integer"}},"required":["b"]}]}`,
	"root if":          `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"string"}},"if":{"properties":{"a":{"const":true}}},"then":{"required":["b"]}}`,
	"ref siblings":     `{"type":"object","properties":{"n":{"$ref":"#/$defs/N","description":"count","maximum":10}},"$defs":{"N":{"type":"integer","minimum":1}}}`,
	"ref conflict":     `{"type":"object","properties":{"n":{"$ref":"#/$defs/N","minimum":5}},"$defs":{"N":{"type":"integer","minimum":1}}}`,
	"chain":            `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"type":"string"}}}`,
	"mutual recursion": `{"type":"object","properties":{"t":{"$ref":"#/$defs/Tree"}},"$defs":{"Tree":{"type":"object","properties":{"f":{"$ref":"#/$defs/Forest"}}},"Forest":{"type":"array","items":{"$ref":"#/$defs/Tree"}}}}`,
	"root recursion":   `{"type":"object","properties":{"name":{"type":"string"},"sub":{"type":"array","items":{"$ref":"#"}}},"required":["name"]}`,
	"pointer ref":      `{"type":"object","properties":{"a":{"type":"string","minLength":2},"b":{"$ref":"#/properties/a"}}}`,
	"escaped ref":      `{"type":"object","properties":{"a":{"$ref":"#/$defs/a~1b"}},"$defs":{"a/b":{"type":"string"}}}`,
	"anchor":           `{"type":"object","properties":{"a":{"$ref":"#thing"}},"$defs":{"T":{"$anchor":"thing","type":"number"}}}`,
	"nested defs":      `{"type":"object","properties":{"a":{"$ref":"#/properties/b/$defs/X"},"b":{"type":"object","$defs":{"X":{"type":"string"}}}}}`,
	"strict unfriendly": `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true},
	   "meta":{"type":"object","additionalProperties":{"type":"string"}},"any":{},"when":{"type":"string","format":"uri"}}}`,
	"oneOf prop":    `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"]}`,
	"bool branches": `{"type":"object","properties":{"v":{"anyOf":[false,{"type":"string"}]},"w":{"allOf":[true,{"type":"integer"}]}}}`,
	"draft7":        `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"type":"array","items":[{"type":"string"}]}},"dependencies":{"p":["q"]}}`,
	"html text":     `{"type":"object","description":"a <b> & c","properties":{"x":{"type":"string","description":"<tag>"}}}`,
}

type projection struct {
	name string
	fn   func(json.RawMessage) (json.RawMessage, []toolschema.Note, error)
}

var projections = []projection{
	{"ForAnthropic", toolschema.ForAnthropic},
	{"ForOpenAI", toolschema.ForOpenAI},
	{"ForOpenAIStrict", toolschema.ForOpenAIStrict},
	{"ForGemini", func(raw json.RawMessage) (json.RawMessage, []toolschema.Note, error) {
		return toolschema.ForGemini(raw, toolschema.GeminiOptions{})
	}},
}

// TestProjectionsKeepRefsResolvableAndCompile is the BH-035 property: for
// every projection of every schema, each $ref in the output resolves inside
// the output, and the output compiles with tool.Compile.
func TestProjectionsKeepRefsResolvableAndCompile(t *testing.T) {
	for name, in := range corpus {
		if _, _, err := tool.Compile(json.RawMessage(in)); err != nil {
			t.Fatalf("%s: corpus schema does not compile: %v", name, err)
		}
		for _, p := range projections {
			out, _, err := p.fn(json.RawMessage(in))
			if p.name == "ForOpenAIStrict" && errors.Is(err, toolschema.ErrNotStrict) {
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", p.name, name, err)
				continue
			}
			checkOutput(t, p.name+" "+name, out)
		}
	}
}

func checkOutput(t *testing.T, label string, out json.RawMessage) {
	t.Helper()
	if err := toolschema.CheckRefs(out); err != nil {
		t.Errorf("%s: %v\n%s", label, err, out)
	}
	if _, kw, err := tool.Compile(out); err != nil {
		t.Errorf("%s: projected schema does not compile (%s): %v\n%s", label, kw, err, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s: top-level %s emitted\n%s", label, k, out)
		}
	}
	if m["type"] != "object" {
		t.Errorf("%s: top-level type %v", label, m["type"])
	}
}

// FuzzProjections runs the property over arbitrary schemas that compile.
func FuzzProjections(f *testing.F) {
	for _, s := range corpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, err := tool.Compile(b); err != nil {
			return
		}
		for _, p := range projections {
			out, _, err := p.fn(b)
			if err != nil {
				if errors.Is(err, toolschema.ErrNotStrict) || errors.Is(err, toolschema.ErrSchema) {
					continue
				}
				t.Fatalf("%s: %v", p.name, err)
			}
			checkOutput(t, p.name, out)
		}
	})
}

func TestAnthropicBH031ConditionBecomesProse(t *testing.T) {
	out, notes, err := toolschema.ForAnthropic(json.RawMessage(bh031))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"description":"Also required (checked when called): size ≤ 64 when mode=quick.","properties":{"mode":{"enum":["quick","full"],"type":"string"},"size":{"type":"integer"}},"required":["mode"],"type":"object"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if !hasNote(notes, "/if", true, "size ≤ 64 when mode=quick") {
		t.Errorf("no lossy note for the dropped allOf: %v", notes)
	}
}

func TestAnthropicBH034InlinesRefs(t *testing.T) {
	screen := `{"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"}`
	want := `{"properties":{"list":{"items":` + screen + `,"type":"array"},"screen":` + screen + `},"required":["screen"],"type":"object"}`
	for _, in := range []string{bh034, strings.Replace(bh034, "$defs", "definitions", -1)} {
		out, notes, err := toolschema.ForAnthropic(json.RawMessage(in))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != want {
			t.Errorf("got  %s\nwant %s", out, want)
		}
		if !hasNote(notes, "", false, "inlined 2") {
			t.Errorf("notes %v", notes)
		}
	}
}

func TestAnthropicBH034RecursiveKeepsDefs(t *testing.T) {
	out, _, err := toolschema.ForAnthropic(json.RawMessage(bh034Recursive))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"$defs":{"Screen":{"properties":{"children":{"items":{"$ref":"#/$defs/Screen"},"type":"array"},"id":{"type":"string"}},"required":["id"],"type":"object"}},"additionalProperties":false,"description":"open a screen","properties":{"screen":{"$ref":"#/$defs/Screen"}},"required":["screen"],"type":"object"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func TestBH038ImpossibleBranchRemoved(t *testing.T) {
	out, notes, err := toolschema.ForAnthropic(json.RawMessage(bh038))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"properties":{"name":{"type":"string"},"zone":{"enum":["north","south"],"type":"string"}},"required":["name"],"type":"object"}`
	if string(out) != want {
		t.Errorf("anthropic got  %s\nwant %s", out, want)
	}
	if !hasNote(notes, "/properties/zone/anyOf", false, "collapsed") {
		t.Errorf("notes %v", notes)
	}
	out, _, err = toolschema.ForOpenAIStrict(json.RawMessage(bh038))
	if err != nil {
		t.Fatal(err)
	}
	want = `{"additionalProperties":false,"properties":{"name":{"type":"string"},"zone":{"enum":["north","south",null],"type":["string","null"]}},"required":["name","zone"],"type":"object"}`
	if string(out) != want {
		t.Errorf("strict got  %s\nwant %s", out, want)
	}
	// zone stays optional: a null from the model means absent.
	args, err := toolschema.RestoreOptional(json.RawMessage(bh038), json.RawMessage(`{"name":"a","zone":null}`))
	if err != nil || string(args) != `{"name":"a"}` {
		t.Errorf("RestoreOptional = %s, %v", args, err)
	}
}

func TestStrictRecursiveAndNested(t *testing.T) {
	out, _, err := toolschema.ForOpenAIStrict(json.RawMessage(bh034Recursive))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"$defs":{"Screen":{"additionalProperties":false,"properties":{"children":{"items":{"$ref":"#/$defs/Screen"},"type":["array","null"]},"id":{"type":"string"}},"required":["children","id"],"type":"object"}},"additionalProperties":false,"description":"open a screen","properties":{"screen":{"$ref":"#/$defs/Screen"}},"required":["screen"],"type":"object"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	args, _ := toolschema.RestoreOptional(json.RawMessage(bh034Recursive),
		json.RawMessage(`{"screen":{"id":"a","children":[{"id":"b","children":null}]}}`))
	if string(args) != `{"screen":{"children":[{"id":"b"}],"id":"a"}}` {
		t.Errorf("RestoreOptional nested = %s", args)
	}
}

func TestStrictRejectsWhatItCannotCarry(t *testing.T) {
	for _, in := range []string{
		`{"type":"object","properties":{"any":{}}}`,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`,
		`{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}]}}}`,
	} {
		if _, _, err := toolschema.ForOpenAIStrict(json.RawMessage(in)); !errors.Is(err, toolschema.ErrNotStrict) {
			t.Errorf("%s: err = %v, want ErrNotStrict", in, err)
		}
		if _, _, err := toolschema.ForOpenAI(json.RawMessage(in)); err != nil {
			t.Errorf("%s: non-strict: %v", in, err)
		}
	}
}

// TestStrictOnlyWhenNothingIsLost: a keyword strict mode does not support
// (format uri, minLength) makes the tool non-strict with the reason; a
// oneOf of disjoint types is sent as anyOf and stays strict.
func TestStrictOnlyWhenNothingIsLost(t *testing.T) {
	in := `{"type":"object","properties":{"s":{"type":"string","minLength":3,"format":"uri"}},"required":["s"]}`
	_, _, err := toolschema.ForOpenAIStrict(json.RawMessage(in))
	if !errors.Is(err, toolschema.ErrNotStrict) || !strings.Contains(err.Error(), "format uri") {
		t.Errorf("err = %v, want ErrNotStrict naming format uri", err)
	}
	in = `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"]}`
	out, notes, err := toolschema.ForOpenAIStrict(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"],"type":"object"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if !hasRewrite(notes, "/properties/v/oneOf") {
		t.Errorf("no rewrite note for oneOf: %v", notes)
	}
	in = `{"type":"object","properties":{"v":{"oneOf":[{"type":"number"},{"type":"integer"}]}},"required":["v"]}`
	if _, _, err := toolschema.ForOpenAIStrict(json.RawMessage(in)); !errors.Is(err, toolschema.ErrNotStrict) {
		t.Errorf("overlapping oneOf: err = %v, want ErrNotStrict", err)
	}
}

func hasRewrite(notes []toolschema.Note, path string) bool {
	for _, n := range notes {
		if n.Path == path && n.Rewrite && !n.Lossy {
			return true
		}
	}
	return false
}

func TestRootCombinators(t *testing.T) {
	out, _, err := toolschema.ForAnthropic(json.RawMessage(corpus["root allOf merge"]))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"],"type":"object"}`; string(out) != want {
		t.Errorf("merge: got %s", out)
	}
	out, _, _ = toolschema.ForAnthropic(json.RawMessage(corpus["root anyOf"]))
	if !strings.Contains(string(out), `at least one of these forms: (a is required) or (b is required)`) {
		t.Errorf("anyOf prose: %s", out)
	}
	out, _, _ = toolschema.ForAnthropic(json.RawMessage(corpus["root if"]))
	if !strings.Contains(string(out), `b is required when a=true`) {
		t.Errorf("if prose: %s", out)
	}
}

func TestBadInput(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"type":"object"} x`, `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`} {
		for _, p := range projections {
			if _, _, err := p.fn(json.RawMessage(in)); !errors.Is(err, toolschema.ErrSchema) {
				t.Errorf("%s(%q) err = %v, want ErrSchema", p.name, in, err)
			}
		}
	}
}

func hasNote(notes []toolschema.Note, path string, lossy bool, sub string) bool {
	for _, n := range notes {
		if n.Path == path && n.Lossy == lossy && strings.Contains(n.What, sub) {
			return true
		}
	}
	return false
}
