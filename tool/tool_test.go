package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/tool"
)

func echo(ctx context.Context, c *tool.Call) (*tool.Result, error) {
	return tool.Text(string(c.Input)), nil
}

const pathSchema = `{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`

func TestDefineRejectsBadSchemas(t *testing.T) {
	cases := []struct {
		name, schema, keyword string
	}{
		{"array top level", `{"type":"array","items":{"type":"string"}}`, "type"},
		{"no type", `{"properties":{"a":{"type":"string"}}}`, "type"},
		{"not an object", `["type","object"]`, "inputSchema"},
		{"empty", ``, "inputSchema"},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, "$ref"},
		{"relative file ref", `{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`, "$ref"},
		{"remote ref under a property called default", `{"type":"object","properties":{"default":{"$ref":"http://x/y"}}}`, "$ref"},
		{"dangling local ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, "$ref"},
		{"bad keyword value", `{"type":"object","properties":{"a":{"type":"strin"}}}`, "/properties/a/type"},
		// BH-037: required put inside properties is caught by the meta-schema.
		{"required inside properties", `{"type":"object","properties":{"coin":{"type":"string"},"required":["coin"]}}`, "/properties/required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tool.Define(tool.Spec{Name: "demo_tool", InputSchema: json.RawMessage(c.schema), Handler: echo})
			if err == nil {
				t.Fatal("Define accepted the schema")
			}
			if !errors.Is(err, tool.ErrDefinition) {
				t.Errorf("error %v does not wrap ErrDefinition", err)
			}
			var de *tool.DefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DefinitionError", err)
			}
			if de.Tool != "demo_tool" || de.Keyword != c.keyword {
				t.Errorf("got tool %q keyword %q, want demo_tool / %q (%v)", de.Tool, de.Keyword, c.keyword, err)
			}
			if !strings.Contains(err.Error(), "demo_tool") {
				t.Errorf("message %q does not name the tool", err)
			}
		})
	}
}

func TestDefineAcceptsLocalRefsAndDefs(t *testing.T) {
	schema := `{"type":"object","$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},
	  "properties":{"a":{"$ref":"#/$defs/pt"},"default":{"type":"string","default":"ok"}}}`
	tl, err := tool.Define(tool.Spec{Name: "points", InputSchema: json.RawMessage(schema), Handler: echo})
	if err != nil {
		t.Fatal(err)
	}
	res := tl.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"a":{"x":"nope"}}`)})
	if !res.IsError || res.Stage != tool.Parameters || !strings.Contains(res.AllText(), "field a.x: got string, want number") {
		t.Fatalf("want a Parameters error naming a.x, got %+v", res)
	}
	res = tl.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"a":{"x":1}}`)})
	if res.IsError {
		t.Fatalf("valid input rejected: %s", res.AllText())
	}
}

func TestDefineRejectsBadNames(t *testing.T) {
	for _, name := range []string{"", "has space", "dots.not.ok", strings.Repeat("a", 65)} {
		_, err := tool.Define(tool.Spec{Name: name, InputSchema: json.RawMessage(pathSchema), Handler: echo})
		var de *tool.DefinitionError
		if !errors.As(err, &de) || de.Keyword != "name" {
			t.Errorf("name %q: got %v, want a name DefinitionError", name, err)
		}
	}
	if _, err := tool.Define(tool.Spec{Name: "x", InputSchema: json.RawMessage(pathSchema)}); err == nil {
		t.Error("nil handler accepted")
	}
}

func TestCallValidatesBeforeHandler(t *testing.T) {
	ran := false
	tl := tool.MustDefine(tool.Spec{Name: "read_thing", InputSchema: json.RawMessage(pathSchema),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) { ran = true; return tool.Text("ok"), nil }})
	cases := []struct{ input, want string }{
		{`{"path":5}`, `field path: got number, want string`},
		{`{}`, `path is required`},
		{`{"path":"a","extra":1}`, `unknown field extra (not in the schema)`},
		{`{"path":"a","n":0}`, `field n: minimum: got 0, want 1`},
		{`{"path":"a","n":1.5}`, `field n: got number, want integer`},
		{`{"path":5,"n":0}`, `field n: minimum: got 0, want 1; field path: got number, want string`},
		{`[1,2]`, `input must be a JSON object, got an array`},
		{`{"path":"a"} {"path":"b"}`, `data after the JSON object`},
		{`{"path":`, `not valid JSON`},
	}
	for _, c := range cases {
		res := tl.Call(context.Background(), &tool.Call{Input: json.RawMessage(c.input)})
		if !res.IsError || res.Stage != tool.Parameters {
			t.Errorf("%s: want a Parameters error, got %+v", c.input, res)
			continue
		}
		if txt := res.AllText(); !strings.Contains(txt, c.want) || !strings.Contains(txt, "Parameters error in read_thing") {
			t.Errorf("%s: message %q does not contain %q", c.input, txt, c.want)
		}
	}
	if ran {
		t.Fatal("handler ran on invalid input")
	}
	if res := tl.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"path":"a","n":2}`)}); res.IsError || !ran {
		t.Fatalf("valid input: %+v", res)
	}
}

func TestCallAttributesHandlerErrors(t *testing.T) {
	stageErr := tool.MustDefine(tool.Spec{Name: "deny", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			return nil, fmt.Errorf("wrapped: %w", tool.Errorf(tool.Authorization, "path escapes").WithHint("stay inside"))
		}})
	res := stageErr.Call(context.Background(), &tool.Call{})
	if res.Stage != tool.Authorization || res.AllText() != "Authorization error in deny: path escapes (next: stay inside)" {
		t.Errorf("got %q at %s", res.AllText(), res.Stage)
	}
	plain := tool.MustDefine(tool.Spec{Name: "boom", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) { panic("kaboom") }})
	res = plain.Call(context.Background(), nil)
	if !res.IsError || res.Stage != tool.Execution || !strings.Contains(res.AllText(), "kaboom") {
		t.Errorf("panic not turned into an Execution error: %+v", res)
	}
}

// BH-034: local $ref into $defs (and legacy definitions, and recursion)
// compiles, and a missing nested field is reported by its path.
func TestLocalRefsIntoDefs(t *testing.T) {
	schemas := map[string]string{
		"$defs": `{"type":"object",
		  "properties":{"screen":{"$ref":"#/$defs/Screen"},"list":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},
		  "required":["screen"],
		  "$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}`,
		"definitions": `{"type":"object",
		  "properties":{"screen":{"$ref":"#/definitions/Screen"}},
		  "required":["screen"],
		  "definitions":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}`,
		"recursive": `{"type":"object",
		  "properties":{"screen":{"$ref":"#/$defs/Screen"}},
		  "required":["screen"],
		  "$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"},
		    "children":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},"required":["id"]}}}`,
	}
	for name, schema := range schemas {
		tl, err := tool.Define(tool.Spec{Name: "open_screen", InputSchema: json.RawMessage(schema), Handler: echo})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res := tl.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"screen":{}}`)})
		if !res.IsError || !strings.Contains(res.AllText(), "screen.id is required") {
			t.Errorf("%s: got %q, want screen.id is required", name, res.AllText())
		}
		if res := tl.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"screen":{"id":"home"}}`)}); res.IsError {
			t.Errorf("%s: valid input rejected: %s", name, res.AllText())
		}
	}
	res := tool.MustDefine(tool.Spec{Name: "open_screen", InputSchema: json.RawMessage(schemas["recursive"]), Handler: echo}).
		Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"screen":{"id":"a","children":[{"id":"b","children":[{}]}]}}`)})
	if !strings.Contains(res.AllText(), "screen.children[0].children[0].id is required") {
		t.Errorf("recursive: %q", res.AllText())
	}
}

// BH-031: a root-level allOf with if/then is valid and enforced locally.
func TestRootAllOfIfThenIsKept(t *testing.T) {
	schema := `{"type":"object",
	  "properties":{"mode":{"type":"string","enum":["quick","full"]},"size":{"type":"integer"}},
	  "required":["mode"],
	  "allOf":[{"if":{"properties":{"mode":{"const":"quick"}}},"then":{"properties":{"size":{"maximum":64}}}}]}`
	tl, err := tool.Define(tool.Spec{Name: "resize", InputSchema: json.RawMessage(schema), Handler: echo})
	if err != nil {
		t.Fatal(err)
	}
	if res := tl.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"mode":"quick","size":100}`)}); !res.IsError ||
		!strings.Contains(res.AllText(), "field size: maximum: got 100, want 64") {
		t.Errorf("conditional not enforced: %q", res.AllText())
	}
	if res := tl.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"mode":"full","size":100}`)}); res.IsError {
		t.Errorf("full mode rejected: %q", res.AllText())
	}
	if string(tl.InputSchema()) != strings.TrimSpace(schema) {
		t.Error("the full schema must stay the tool's schema")
	}
}

func TestNewCallIDIsUniqueAndPrefixed(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := tool.NewCallID("mcp_")
		if len(id) != len("mcp_")+24 || id[:4] != "mcp_" || seen[id] {
			t.Fatalf("id %q: wrong shape or repeated", id)
		}
		seen[id] = true
	}
}

// An input the Parameters stage validated is not checked again by Call;
// any other input, or the same on another tool, is.
func TestValidatedSkipsOnlyTheSameInput(t *testing.T) {
	runs := 0
	tl := tool.MustDefine(tool.Spec{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) { runs++; return tool.Text("ran"), nil }})
	good := json.RawMessage(`{"n":1}`)
	if err := tl.Validate(good); err != nil {
		t.Fatal(err)
	}
	ctx := tl.Validated(context.Background(), good)
	if res := tl.Call(ctx, &tool.Call{Input: append(json.RawMessage(nil), good...)}); res.IsError || runs != 1 {
		t.Fatalf("%s", res.AllText())
	}
	// Other bytes on the same context are checked (and refused here).
	if res := tl.Call(ctx, &tool.Call{Input: json.RawMessage(`{"n":"x"}`)}); res.Stage != tool.Parameters || runs != 1 {
		t.Fatalf("a changed input was not checked: %s", res.AllText())
	}
	// The mark is what skips the check: an input marked without having
	// passed Validate (what Validated's doc forbids) is not checked.
	marked := json.RawMessage(`{"n":"y"}`)
	if res := tl.Call(tl.Validated(context.Background(), marked), &tool.Call{Input: marked}); res.IsError || runs != 2 {
		t.Fatalf("the marked input was checked again: %s", res.AllText())
	}
	other := tool.MustDefine(tool.Spec{Name: "o", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"string"}}}`),
		Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) { return tool.Text("ran"), nil }})
	if res := other.Call(ctx, &tool.Call{Input: good}); res.Stage != tool.Parameters {
		t.Fatalf("another tool's mark let an invalid input through: %s", res.AllText())
	}
}
