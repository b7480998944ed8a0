package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/tool"
)

// Issue 10: a tool defined with CompileOnUse compiles its schema at its
// first use, once, and a schema the compiler rejects then makes every call
// a Discovery-stage error that names the keyword, without running the
// handler.
func TestCompileOnUse(t *testing.T) {
	ran := false
	handler := func(context.Context, *tool.Call) (*tool.Result, error) { ran = true; return tool.Text("ok"), nil }
	good, err := tool.Define(tool.Spec{Name: "good", InputSchema: json.RawMessage(pathSchema), Handler: handler, CompileOnUse: true})
	if err != nil {
		t.Fatal(err)
	}
	if done, _ := good.Compiled(); done {
		t.Fatal("a CompileOnUse tool was compiled by Define")
	}
	if res := good.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{}`)}); res.Stage != tool.Parameters ||
		!strings.Contains(res.AllText(), "path is required") {
		t.Errorf("first call: %+v", res)
	}
	if done, err := good.Compiled(); !done || err != nil {
		t.Errorf("after the first call: compiled %v, err %v", done, err)
	}

	// minLength -1 passes the structural check but not the meta-schema.
	bad, err := tool.Define(tool.Spec{Name: "bad", Handler: handler, CompileOnUse: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":-1}}}`)})
	if err != nil {
		t.Fatalf("Define with CompileOnUse must not compile: %v", err)
	}
	var wg sync.WaitGroup
	results := make([]*tool.Result, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = bad.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"q":"x"}`)})
		}()
	}
	wg.Wait()
	for _, res := range results {
		if !res.IsError || res.Stage != tool.Discovery || !strings.Contains(res.AllText(), "/properties/q/minLength") ||
			!strings.Contains(res.AllText(), "input schema was rejected") {
			t.Errorf("call of a tool whose schema does not compile: %+v", res)
		}
	}
	if ran {
		t.Error("the handler ran although the schema did not compile")
	}
	done, err := bad.Compiled()
	var de *tool.DefinitionError
	if !done || !errors.As(err, &de) || de.Keyword != "/properties/q/minLength" || !errors.Is(err, tool.ErrDefinition) {
		t.Errorf("Compiled = %v, %v", done, err)
	}
	if err2 := bad.Compile(); err2 != err {
		t.Errorf("Compile again = %v, want the same error", err2)
	}

	if _, err := tool.Define(tool.Spec{Name: "x", Handler: handler, CompileOnUse: true, InputSchema: json.RawMessage(`[]`)}); err == nil {
		t.Error("CompileOnUse accepted a schema that is not a JSON object")
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// CheckSchema: what it refuses, with the keyword it names; what it lets
// through. Every refused schema is refused by the compiler too, or is one
// the compiler accepts but that can never validate a value (a reference
// cycle), or is over the depth bound.
func TestCheckSchema(t *testing.T) {
	refused := []struct{ name, schema, keyword, want string }{
		{"not an object", `[]`, "inputSchema", "must be a JSON object"},
		{"top level string", `{"type":"string"}`, "type", `got "string"`},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, "$ref", "not local"},
		{"dangling ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, "$ref", "#/$defs/missing does not resolve"},
		{"dangling anchor", `{"type":"object","properties":{"a":{"$ref":"#nope"}}}`, "$ref", "#nope does not resolve"},
		{"required inside properties", `{"type":"object","properties":{"coin":{"type":"string"},"required":["coin"]}}`,
			"/properties/required", "a schema must be an object or a boolean, got an array"},
		{"bad type name", `{"type":"object","properties":{"a":{"type":"strin"}}}`, "/properties/a/type", `type "strin"`},
		{"string number", `{"type":"object","properties":{"a":{"type":"string","minLength":"3"}}}`, "/properties/a/minLength", "must be a number"},
		{"required not an array", `{"type":"object","properties":{"a":{"type":"object","required":true}}}`, "/properties/a/required", "array of property names"},
		{"anyOf not an array", `{"type":"object","anyOf":{"type":"object"}}`, "/anyOf", "array of schemas"},
		{"properties not an object", `{"type":"object","properties":[]}`, "/properties", "object of schemas"},
		// Reference cycles that apply to the same value forever.
		{"root refers to itself", `{"type":"object","$ref":"#"}`, "$ref", "$ref cycle # -> #"},
		{"property refers to itself", `{"type":"object","properties":{"a":{"$ref":"#/properties/a"}}}`, "$ref", "#/properties/a -> #/properties/a"},
		{"two defs refer to each other", `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},
		  "$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}}}`, "$ref", "#/$defs/A -> #/$defs/B -> #/$defs/A"},
		{"cycle through allOf and anyOf", `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},
		  "$defs":{"A":{"type":"object","allOf":[{"$ref":"#/$defs/B"}]},"B":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/A"}]}}}`,
			"$ref", "$ref cycle"},
		{"cycle through an anchor", `{"type":"object","properties":{"a":{"$ref":"#x"}},"$defs":{"X":{"$anchor":"x","not":{"$ref":"#x"}}}}`,
			"$ref", "$ref cycle"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			kw, err := tool.CheckSchema(decode(t, c.schema), nil)
			if err == nil {
				t.Fatal("accepted")
			}
			if kw != c.keyword || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %q: %v; want %q: ...%s...", kw, err, c.keyword, c.want)
			}
			if kw != "type" && kw != "inputSchema" && !strings.Contains(err.Error(), "$ref cycle") && tool.CompilerAccepts(json.RawMessage(c.schema)) {
				t.Errorf("the compiler accepts what CheckSchema refused")
			}
		})
	}
	accepted := []struct{ name, schema string }{
		{"tree type in $defs", `{"type":"object","properties":{"t":{"$ref":"#/$defs/T"}},
		  "$defs":{"T":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/T"}}}}}}`},
		{"root recursion through a property", `{"type":"object","properties":{"child":{"$ref":"#"}}}`},
		{"percent-encoded pointer", `{"type":"object","properties":{"a":{"$ref":"#/$defs/My%20T"}},"$defs":{"My T":{"type":"string"}}}`},
		{"anchor", `{"type":"object","properties":{"a":{"$ref":"#foo"}},"$defs":{"A":{"$anchor":"foo","type":"string"}}}`},
		{"draft-07 definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		  "properties":{"a":{"$ref":"#/definitions/A"}},"definitions":{"A":{"type":"string"}}}`},
		{"property dependencies", `{"type":"object","dependencies":{"a":["b"]}}`},
		{"draft-04 ignores contains", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"contains":5}}}`},
	}
	for _, c := range accepted {
		t.Run(c.name, func(t *testing.T) {
			if kw, err := tool.CheckSchema(decode(t, c.schema), nil); err != nil {
				t.Fatalf("refused at %q: %v", kw, err)
			}
			if _, kw, err := tool.Compile(json.RawMessage(c.schema)); err != nil {
				t.Fatalf("compiler refused at %q: %v", kw, err)
			}
		})
	}
}

// deep nests n objects: {"type":"object","properties":{"a": ... }}.
func deep(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// Issue 10, item 3: a schema nested 2,000 levels deep took the compiler
// minutes; the depth bound refuses it at once, before anything else walks
// it, and names the setting.
func TestSchemaDepthBound(t *testing.T) {
	kw, err := tool.CheckSchema(decode(t, deep(2000)), nil)
	if kw != "depth" || err == nil || !strings.Contains(err.Error(), "deeper than 128 levels") {
		t.Fatalf("2,000 levels: %q %v", kw, err)
	}
	if _, kw, err := tool.Compile(json.RawMessage(deep(2000))); kw != "depth" || err == nil {
		t.Fatalf("Compile of 2,000 levels: %q %v", kw, err)
	}
	// 63 property levels are 127 JSON levels: within the default.
	if kw, err := tool.CheckSchema(decode(t, deep(63)), nil); err != nil {
		t.Fatalf("63 levels: %q %v", kw, err)
	}
	if kw, err := tool.CheckSchema(decode(t, deep(10)), &tool.CheckOptions{MaxDepth: 20}); kw != "depth" || err == nil {
		t.Fatalf("MaxDepth 20: %q %v", kw, err)
	}
	// deep(10) is 21 JSON levels: the innermost {"type":"string"} is the 21st.
	if err := tool.CheckDepth(decode(t, deep(10)), &tool.CheckOptions{MaxDepth: 21}); err != nil {
		t.Errorf("21 levels refused by a bound of 21: %v", err)
	}
	err = tool.CheckDepth(decode(t, deep(10)), &tool.CheckOptions{MaxDepth: 20})
	if err == nil || !strings.Contains(err.Error(), "(at /properties/a/properties/a/") {
		t.Errorf("depth error does not say where: %v", err)
	}
}

// jsonDepth is the nesting of objects and arrays of a decoded value.
func jsonDepth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, s := range v {
			d = max(d, jsonDepth(s))
		}
		return d + 1
	case []any:
		for _, s := range v {
			d = max(d, jsonDepth(s))
		}
		return d + 1
	}
	return 0
}

// FuzzCheckSchema: CheckSchema never panics, refuses exactly the schemas
// over the depth bound for depth, and refuses nothing the compiler accepts
// except reference cycles (which the compiler accepts but cannot validate
// against) and depth.
func FuzzCheckSchema(f *testing.F) {
	for _, s := range []string{
		pathSchema, deep(3), deep(70), `{"type":"object","$ref":"#"}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"anyOf":[{"$ref":"#/$defs/A"}]}}}`,
		`{"type":"object","properties":{"t":{"$ref":"#/$defs/T"}},"$defs":{"T":{"type":"object","properties":{"k":{"items":{"$ref":"#/$defs/T"}}}}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#x"}},"$defs":{"X":{"$anchor":"x"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/a"}}}`,
		`{"type":"object","properties":{"a":{"type":["string",5]},"b":{"enum":3},"c":{"minimum":"1"}}}`,
		`{"type":"object","allOf":[{"not":{"if":{"$ref":"#/allOf/0"}}}]}`,
		`{"type":"object","properties":{"a":[[[[[[[[[[[[]]]]]]]]]]]]}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		const limit = 16
		kw, err := tool.CheckSchema(v, &tool.CheckOptions{MaxDepth: limit})
		if over := jsonDepth(v) > limit; over != (kw == "depth") {
			t.Fatalf("depth %d, limit %d: keyword %q, %v", jsonDepth(v), limit, kw, err)
		}
		// Policy, not JSON Schema: depth, the top level (an object of
		// type object), no remote $ref anywhere (unknown keywords
		// included), and cycles the compiler accepts but cannot validate
		// against.
		if err == nil || kw == "depth" || kw == "type" || kw == "inputSchema" ||
			strings.Contains(err.Error(), "is not local") || strings.Contains(err.Error(), "$ref cycle") {
			return
		}
		if tool.CompilerAccepts(json.RawMessage(s)) {
			t.Fatalf("CheckSchema refused %s (%s: %v) but the compiler accepts it", s, kw, err)
		}
	})
}
