package mcpclient

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/tool"
)

// Repair is a safe, meaning-preserving change made to a tool's input schema
// before it was defined (issue 5, "Schema intake through defineTool").
type Repair struct {
	Tool string // the original MCP tool name
	What string // what was changed, e.g. `added the missing top-level "type": "object" beside "properties"`
}

// Quarantine is a tool the server offers that cannot be used; its siblings
// are unaffected (BH-033, BH-037).
type Quarantine struct {
	Tool   string // the original MCP tool name
	Reason string // names server and tool, e.g. `server "s" tool "bad": input schema top level must be type object, got string`
	Err    error  // the cause: a *tool.DefinitionError, a *CollisionError, or nil
}

// candidate is a tool whose schema passed intake, waiting for its name.
type candidate struct {
	orig        string
	description string
	schema      json.RawMessage
	annotations *tool.Annotations
}

// intakeOptions are the Options that bear on schema intake.
type intakeOptions struct {
	check   *tool.CheckOptions
	compile bool // compile every schema at intake (Options.CompileSchemas)
}

// intake checks every tool of one server's tools/list on its own. It never
// fails as a whole: each tool is a candidate or a quarantine.
func intake(server string, list []*mcp.Tool, o intakeOptions) ([]candidate, []Repair, []Quarantine) {
	var (
		cands   []candidate
		repairs []Repair
		quar    []Quarantine
		seen    = map[string]bool{}
	)
	for _, t := range list {
		if t == nil {
			continue
		}
		reason := func(msg string) string {
			return fmt.Sprintf("server %q tool %q: %s", server, t.Name, msg)
		}
		if seen[t.Name] {
			err := &CollisionError{Name: t.Name, First: Origin{server, t.Name}, Second: Origin{server, t.Name}}
			quar = append(quar, Quarantine{Tool: t.Name, Reason: reason("listed twice by the server; the first is kept"), Err: err})
			continue
		}
		seen[t.Name] = true
		schema, fixes, err := prepareSchema(t.InputSchema, o)
		// The decoded schema is not needed past this point: let it go
		// now rather than with the whole list (peak memory at start-up).
		t.InputSchema = nil
		if err != nil {
			quar = append(quar, Quarantine{Tool: t.Name, Reason: reason(err.Error()), Err: err})
			continue
		}
		for _, f := range fixes {
			repairs = append(repairs, Repair{Tool: t.Name, What: f})
		}
		cands = append(cands, candidate{
			orig:        t.Name,
			description: describeTool(t),
			schema:      schema,
			annotations: annotations(t),
		})
	}
	return cands, repairs, quar
}

func describeTool(t *mcp.Tool) string {
	if t.Description != "" {
		return t.Description
	}
	if t.Title != "" {
		return t.Title
	}
	if t.Annotations != nil {
		return t.Annotations.Title
	}
	return ""
}

// annotations carries the MCP tool annotations (spec 2025-06-18, "Tool
// annotations") into tool.Annotations; nil when the server sent none.
func annotations(t *mcp.Tool) *tool.Annotations {
	if t.Annotations == nil && t.Title == "" {
		return nil
	}
	a := &tool.Annotations{Title: t.Title}
	if m := t.Annotations; m != nil {
		if m.Title != "" {
			a.Title = m.Title
		}
		a.ReadOnlyHint = m.ReadOnlyHint
		a.DestructiveHint = m.DestructiveHint
		a.IdempotentHint = m.IdempotentHint
		a.OpenWorldHint = m.OpenWorldHint
	}
	return a
}

// SchemaError is why an input schema cannot be used. Keyword is the schema
// keyword or JSON pointer at fault ("type", "$ref", "/properties/required").
type SchemaError struct {
	Keyword string
	Msg     string
	Err     error // the *tool.DefinitionError or compile error, may be nil
}

func (e *SchemaError) Error() string { return e.Msg }
func (e *SchemaError) Unwrap() error { return e.Err }

// prepareSchema applies the safe repairs to an MCP inputSchema (decoded by
// the SDK as generic JSON) and checks it with tool.CheckSchema: depth,
// top-level type, local references that resolve, no reference cycle that
// never ends, keyword shapes (or with tool.CompileWith when o.compile is
// set). The full compile of a schema that passes happens when the tool is
// first activated or called (tool.Spec.CompileOnUse). It returns the schema
// to define the tool with and what was repaired, or a *SchemaError.
//
// Repairs (each meaning-preserving, since MCP arguments are always a JSON
// object): an absent, null or empty schema becomes {"type":"object"}; a
// missing top-level "type" becomes "object"; a top-level type list that
// contains "object" becomes "object"; a keyword whose value may never be
// null but is ("properties": null, "required": null, "description": null:
// see nullMeansAbsent) is removed, as null can only mean absent there; a
// local $ref into "#/definitions/X"
// that only exists as "#/$defs/X" (or the reverse) is pointed at the one
// that exists. Everything else, including root allOf/anyOf/if-then and
// $defs, is kept as the server sent it (BH-031, BH-034). The result is
// re-encoded from the SDK's decoded form: object keys come out sorted and
// numbers pass through float64 (integers beyond 2^53 lose precision).
func prepareSchema(in any, o intakeOptions) (json.RawMessage, []string, error) {
	var fixes []string
	if in == nil {
		return json.RawMessage(`{"type":"object"}`), []string{`no input schema; used {"type":"object"}`}, nil
	}
	if raw, ok := in.(json.RawMessage); ok { // tolerate callers that pass raw JSON
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, nil, &SchemaError{Keyword: "inputSchema", Msg: "input schema is not valid JSON: " + err.Error(), Err: err}
		}
		in = v
	}
	// Bound the depth before anything walks the schema (BH: a schema
	// nested 2,000 levels deep took the compiler minutes).
	if err := tool.CheckDepth(in, o.check); err != nil {
		return nil, nil, &SchemaError{Keyword: "depth", Msg: "input schema rejected: " + err.Error() +
			"; the limit is the setting mcp.maxSchemaDepth", Err: err}
	}
	m, ok := in.(map[string]any)
	if !ok {
		return nil, nil, &SchemaError{Keyword: "inputSchema", Msg: "input schema must be a JSON object, got " + jsonKind(in)}
	}
	if len(m) == 0 {
		return json.RawMessage(`{"type":"object"}`), []string{`empty input schema; used {"type":"object"}`}, nil
	}
	m = cloneMap(m)
	fixes = append(fixes, dropNulls(m, "", false)...)
	switch typ := m["type"].(type) {
	case nil:
		m["type"] = "object"
		if _, has := m["properties"]; has {
			fixes = append(fixes, `added the missing top-level "type": "object" beside "properties"`)
		} else {
			fixes = append(fixes, `added the missing top-level "type": "object"`)
		}
	case string:
		if typ != "object" {
			return nil, nil, &SchemaError{Keyword: "type", Msg: "input schema top level must be type object, got " + typ}
		}
	case []any:
		hasObject := false
		var words []string
		for _, w := range typ {
			s, _ := w.(string)
			words = append(words, strconv.Quote(s))
			if s == "object" {
				hasObject = true
			}
		}
		if !hasObject {
			return nil, nil, &SchemaError{Keyword: "type", Msg: "input schema top level must be type object, got [" + strings.Join(words, ",") + "]"}
		}
		m["type"] = "object"
		fixes = append(fixes, fmt.Sprintf(`narrowed the top-level "type" [%s] to "object" (arguments are always an object)`, strings.Join(words, ",")))
	default:
		return nil, nil, &SchemaError{Keyword: "type", Msg: "input schema top level must be type object, got " + jsonKind(typ)}
	}
	fixes = append(fixes, fixRefs(m, m, false)...)
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, nil, &SchemaError{Keyword: "inputSchema", Msg: "input schema cannot be encoded: " + err.Error(), Err: err}
	}
	var keyword string
	if o.compile {
		_, keyword, err = tool.CompileWith(raw, o.check)
	} else {
		keyword, err = tool.CheckSchema(m, o.check)
	}
	if err != nil {
		msg := err.Error()
		if keyword != "" && !strings.Contains(msg, keyword) {
			msg = "at " + keyword + ": " + msg
		}
		return nil, nil, &SchemaError{Keyword: keyword, Msg: "input schema rejected: " + msg, Err: err}
	}
	sort.Strings(fixes)
	return raw, fixes, nil
}

// nullMeansAbsent are the schema keywords (every draft from 04 to
// 2020-12) whose value may never be null: a null there can only mean the
// keyword is absent, as generators that write every field of a schema
// object emit it ("properties": null for a tool without parameters).
// const and default are data, where null is a value.
var nullMeansAbsent = map[string]bool{
	"$id": true, "id": true, "$anchor": true, "$comment": true, "$ref": true, "$defs": true, "definitions": true,
	"title": true, "description": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"type": true, "enum": true, "format": true, "pattern": true,
	"properties": true, "patternProperties": true, "additionalProperties": true, "propertyNames": true,
	"required": true, "dependencies": true, "dependentRequired": true, "dependentSchemas": true,
	"minProperties": true, "maxProperties": true, "unevaluatedProperties": true,
	"items": true, "prefixItems": true, "additionalItems": true, "contains": true, "minContains": true, "maxContains": true,
	"minItems": true, "maxItems": true, "uniqueItems": true, "unevaluatedItems": true,
	"minLength": true, "maxLength": true, "contentEncoding": true, "contentMediaType": true, "contentSchema": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"examples": true,
}

// dropNulls removes, from every schema object in v (named: v is a map of
// named subschemas such as "properties"), the keywords of nullMeansAbsent
// whose value is null, and says where each was. loc is v's location.
func dropNulls(v any, loc string, named bool) []string {
	var fixes []string
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			if !named && sub == nil && nullMeansAbsent[k] {
				delete(v, k)
				where := loc
				if where == "" {
					where = "the top level"
				}
				fixes = append(fixes, fmt.Sprintf("removed %q: null at %s (null there means absent)", k, where))
				continue
			}
			switch sub.(type) {
			case map[string]any, []any:
			default:
				continue
			}
			if !named {
				switch k {
				case "const", "default", "enum", "examples":
					continue
				}
			}
			isMap := !named && (k == "properties" || k == "patternProperties" || k == "$defs" ||
				k == "definitions" || k == "dependentSchemas")
			at := loc + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			fixes = append(fixes, dropNulls(sub, at, isMap)...)
		}
	case []any:
		for i, sub := range v {
			fixes = append(fixes, dropNulls(sub, loc+"/"+strconv.Itoa(i), false)...)
		}
	}
	return fixes
}

// fixRefs walks a schema (named: v is a map of named subschemas such as
// "properties") and points "#/definitions/..." refs that do not resolve at
// "#/$defs/..." when that resolves, and the reverse. Data keywords (const,
// default, enum, examples) are not walked.
func fixRefs(root map[string]any, v any, named bool) []string {
	var fixes []string
	switch v := v.(type) {
	case map[string]any:
		if !named {
			if ref, ok := v["$ref"].(string); ok && !resolves(root, ref) {
				for _, pair := range [][2]string{{"#/definitions/", "#/$defs/"}, {"#/$defs/", "#/definitions/"}} {
					if strings.HasPrefix(ref, pair[0]) {
						alt := pair[1] + strings.TrimPrefix(ref, pair[0])
						if resolves(root, alt) {
							v["$ref"] = alt
							fixes = append(fixes, fmt.Sprintf("pointed $ref %q at %q, where the definition is", ref, alt))
						}
					}
				}
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !named {
				switch k {
				case "const", "default", "enum", "examples":
					continue
				}
			}
			isMap := !named && (k == "properties" || k == "patternProperties" || k == "$defs" ||
				k == "definitions" || k == "dependentSchemas")
			fixes = append(fixes, fixRefs(root, v[k], isMap)...)
		}
	case []any:
		for _, sub := range v {
			fixes = append(fixes, fixRefs(root, sub, false)...)
		}
	}
	return fixes
}

// resolves reports whether a local JSON pointer ref ("#/a/b") points at
// something inside root. Refs that are not pointers (anchors, "#") count as
// resolving: tool.Compile checks those.
func resolves(root map[string]any, ref string) bool {
	if !strings.HasPrefix(ref, "#/") {
		return true
	}
	var cur any = root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[part]
			if !ok {
				return false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return false
			}
			cur = c[i]
		default:
			return false
		}
	}
	return true
}

// cloneMap deep-copies decoded JSON so repairs never touch the SDK's value.
func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number, int, int64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
