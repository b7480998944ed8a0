package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrDefinition is wrapped by every error [Define] returns, so callers can
// tell a bad definition from other start-up failures with errors.Is.
var ErrDefinition = errors.New("tool definition rejected")

// DefinitionError reports why [Define] refused a tool. Keyword names the
// offending schema keyword or field ("type", "$ref", "name", "handler",
// "properties", ...).
type DefinitionError struct {
	Tool    string // the tool's name as given
	Keyword string // the schema keyword or spec field at fault
	Msg     string // what is wrong
	Err     error  // underlying cause, may be nil
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("define tool %q: %s: %s", e.Tool, e.Keyword, e.Msg)
}

// Unwrap returns ErrDefinition and the cause, for errors.Is.
func (e *DefinitionError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrDefinition, e.Err}
	}
	return []error{ErrDefinition}
}

// Annotations are the MCP tool annotations (MCP spec 2025-06-18, "Tool
// annotations"): hints about a tool's behaviour, never a grant of authority.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Handler runs one validated call. It returns a Result, or an error that
// becomes an error Result: a *Error keeps its stage and hint; any other
// error is attributed to Execution. The input in call.Input has already been
// validated against the tool's input schema.
type Handler func(ctx context.Context, call *Call) (*Result, error)

// Spec is what a tool author writes; [Define] turns it into a *Tool.
type Spec struct {
	// Name is the wire name: letters, digits, '_' and '-', 1 to 64
	// characters (the intersection of Anthropic's and OpenAI's rules).
	Name string
	// Description is the model-facing description (plain text or Markdown).
	Description string
	// InputSchema is a JSON Schema (draft 2020-12 or draft-07) as raw JSON.
	// Its top level must be "type": "object"; $ref may only point inside the
	// schema (#/$defs/..., #/definitions/..., or an $anchor).
	InputSchema json.RawMessage
	// Annotations are optional MCP hints.
	Annotations *Annotations
	// Handler runs a call. Required.
	Handler Handler
}

// Tool is a defined tool: a name, a description, a compiled input schema and
// a handler. It is immutable and safe for concurrent calls.
type Tool struct {
	name        string
	description string
	schema      json.RawMessage
	resolved    *jsonschema.Resolved
	annotations *Annotations
	handler     Handler
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Define validates spec and compiles its input schema (seed: "defineTool
// also validates schemas at definition time: JSON Schema must resolve
// synchronously and its top level must be an object").
//
// Errors are *DefinitionError wrapping ErrDefinition, naming the tool and the
// offending keyword: "name" (empty or outside [A-Za-z0-9_-]{1,64}), "handler"
// (nil), "inputSchema" (not a JSON object), "type" (top level not object),
// "$ref" (a reference that does not resolve inside the schema), or the
// keyword the schema library rejected.
func Define(spec Spec) (*Tool, error) {
	fail := func(keyword, msg string, err error) (*Tool, error) {
		return nil, &DefinitionError{Tool: spec.Name, Keyword: keyword, Msg: msg, Err: err}
	}
	if !nameRE.MatchString(spec.Name) {
		return fail("name", "must be 1 to 64 characters of letters, digits, '_' or '-'", nil)
	}
	if spec.Handler == nil {
		return fail("handler", "is nil", nil)
	}
	resolved, keyword, err := Compile(spec.InputSchema)
	if err != nil {
		return fail(keyword, err.Error(), err)
	}
	raw := bytes.TrimSpace(spec.InputSchema)
	return &Tool{
		name:        spec.Name,
		description: spec.Description,
		schema:      append(json.RawMessage(nil), raw...),
		resolved:    resolved,
		annotations: spec.Annotations,
		handler:     spec.Handler,
	}, nil
}

// MustDefine is Define for built-in tools whose specs are constants; it
// panics on error.
func MustDefine(spec Spec) *Tool {
	t, err := Define(spec)
	if err != nil {
		panic(err)
	}
	return t
}

// Compile checks and resolves a JSON Schema for use as a tool input schema,
// without network access. On failure it returns the offending keyword too.
func Compile(raw json.RawMessage) (*jsonschema.Resolved, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, "inputSchema", errors.New("must be a JSON object")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, "inputSchema", fmt.Errorf("not valid JSON: %w", err)
	}
	var typ any
	if t, ok := top["type"]; ok {
		_ = json.Unmarshal(t, &typ)
	}
	if typ != "object" {
		if typ == nil {
			return nil, "type", errors.New(`top level must be "type": "object" (missing)`)
		}
		return nil, "type", fmt.Errorf(`top level must be "type": "object", got %s`, bytes.TrimSpace(top["type"]))
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, keywordOf(err.Error(), "inputSchema"), fmt.Errorf("not a valid JSON Schema: %w", err)
	}
	var generic any
	_ = json.Unmarshal(raw, &generic)
	if ref := firstRemoteRef(generic, false); ref != "" {
		return nil, "$ref", fmt.Errorf("%q is not local; only references inside the schema (#/$defs/...) resolve without network access", ref)
	}
	if bad := firstBadType(generic, false); bad != "" {
		return nil, "type", fmt.Errorf("%s is not a JSON Schema type (want one of array, boolean, integer, null, number, object, string)", bad)
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		kw := keywordOf(err.Error(), "inputSchema")
		if strings.Contains(err.Error(), "JSON Pointer") || strings.Contains(err.Error(), "anchor") {
			kw = "$ref"
		}
		return nil, kw, fmt.Errorf("does not resolve: %w", err)
	}
	return r, "", nil
}

// firstRemoteRef walks a decoded schema and returns the first $ref or
// $dynamicRef that does not start with '#'. Keywords whose values are data,
// not schemas (const, default, enum, examples), are not walked.
// A map of named subschemas (properties, $defs, ...) is walked with named
// set, so a property called "default" is still inspected.
func firstRemoteRef(v any, named bool) string {
	switch v := v.(type) {
	case map[string]any:
		if !named {
			for _, k := range []string{"$ref", "$dynamicRef"} {
				if ref, ok := v[k].(string); ok && !strings.HasPrefix(ref, "#") {
					return ref
				}
			}
		}
		for k, sub := range v {
			if !named {
				switch k {
				case "const", "default", "enum", "examples":
					continue
				}
			}
			isMap := !named && (k == "properties" || k == "patternProperties" || k == "$defs" ||
				k == "definitions" || k == "dependentSchemas")
			if r := firstRemoteRef(sub, isMap); r != "" {
				return r
			}
		}
	case []any:
		for _, sub := range v {
			if r := firstRemoteRef(sub, false); r != "" {
				return r
			}
		}
	}
	return ""
}

var jsonTypes = map[string]bool{"array": true, "boolean": true, "integer": true, "null": true,
	"number": true, "object": true, "string": true}

// firstBadType returns the first "type" value anywhere in the schema that is
// not a JSON Schema type name (quoted), or "".
func firstBadType(v any, named bool) string {
	switch v := v.(type) {
	case map[string]any:
		if !named {
			switch t := v["type"].(type) {
			case string:
				if !jsonTypes[t] {
					return fmt.Sprintf("%q", t)
				}
			case []any:
				for _, e := range t {
					if s, ok := e.(string); !ok || !jsonTypes[s] {
						return fmt.Sprintf("%v", e)
					}
				}
			}
		}
		for k, sub := range v {
			if !named {
				switch k {
				case "const", "default", "enum", "examples", "type":
					continue
				}
			}
			isMap := !named && (k == "properties" || k == "patternProperties" || k == "$defs" ||
				k == "definitions" || k == "dependentSchemas")
			if r := firstBadType(sub, isMap); r != "" {
				return r
			}
		}
	case []any:
		for _, sub := range v {
			if r := firstBadType(sub, false); r != "" {
				return r
			}
		}
	}
	return ""
}

var keywordRE = regexp.MustCompile(`(\$?[A-Za-z]+):`)

func keywordOf(msg, fallback string) string {
	if m := keywordRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return fallback
}

// Name is the tool's wire name.
func (t *Tool) Name() string { return t.name }

// Description is the model-facing description.
func (t *Tool) Description() string { return t.description }

// InputSchema is the schema as given to Define (raw JSON, whitespace
// trimmed). Callers must not modify it.
func (t *Tool) InputSchema() json.RawMessage { return t.schema }

// Annotations are the MCP hints, or nil.
func (t *Tool) Annotations() *Annotations { return t.annotations }

// Call runs one call: it decodes call.Input strictly (one JSON object, no
// trailing data; empty input counts as {}), validates it against the input
// schema, then runs the handler. It never returns nil.
//
// Failures come back as error Results: Parameters for input that is not a
// JSON object or violates the schema (the message names the field and what
// was expected); the handler's stage otherwise; Execution for a panic in the
// handler or a handler error without a stage.
func (t *Tool) Call(ctx context.Context, call *Call) (res *Result) {
	if call == nil {
		call = &Call{}
	}
	if call.Name == "" {
		call.Name = t.name
	}
	input, perr := decodeInput(call.Input)
	if perr == nil {
		perr = t.validate(input)
	}
	if perr != nil {
		return ErrorResult(perr, t.name)
	}
	if len(bytes.TrimSpace(call.Input)) == 0 {
		call.Input = json.RawMessage("{}")
	}
	defer func() {
		if p := recover(); p != nil {
			res = ErrorResult(Errorf(Execution, "the tool panicked: %v", p).
				WithHint("report this as a bug in the tool; the effect may be partial, inspect before retrying"), t.name)
		}
	}()
	out, err := t.handler(ctx, call)
	if err != nil {
		if ctx.Err() != nil && !errors.As(err, new(*Error)) {
			err = &Error{Stage: Execution, Msg: "cancelled: " + err.Error(), Err: err,
				Hint: "the call was stopped; inspect the state before retrying"}
		}
		return ErrorResult(err, t.name)
	}
	if out == nil {
		out = &Result{}
	}
	return out
}

// decodeInput parses raw as exactly one JSON object, with numbers kept as
// float64 the way the schema library expects.
func decodeInput(raw json.RawMessage) (map[string]any, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, Errorf(Parameters, "input is not valid JSON: %v", err).
			WithHint("send the arguments as one JSON object")
	}
	if dec.More() {
		return nil, Errorf(Parameters, "input has data after the JSON object").
			WithHint("send the arguments as one JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, Errorf(Parameters, "input must be a JSON object, got %s", jsonKind(v)).
			WithHint("send the arguments as one JSON object")
	}
	return obj, nil
}

func (t *Tool) validate(input map[string]any) *Error {
	if err := t.resolved.Validate(input); err != nil {
		field, what := describeValidation(err.Error())
		msg := "invalid input"
		if field != "" {
			msg += " at field " + field
		}
		return &Error{Stage: Parameters, Msg: msg + ": " + what, Err: err,
			Hint: "correct the arguments to match the input schema of " + t.name}
	}
	return nil
}

var validatingRE = regexp.MustCompile(`validating ([^:]*): `)

// describeValidation turns the schema library's nested message
// ("validating root: validating /properties/path: type: 5 has type ...")
// into an instance field path ("path", "edits[].old", "a.x" through a $ref)
// and the innermost complaint.
func describeValidation(msg string) (field, what string) {
	locs := validatingRE.FindAllStringSubmatchIndex(msg, -1)
	what = msg
	var parts []string
	prev := ""
	for _, loc := range locs {
		ptr := msg[loc[2]:loc[3]]
		if ptr == "root" {
			ptr = ""
		}
		if prev != "" && strings.HasPrefix(ptr, prev) {
			parts = append(parts, fieldFromPointer(ptr[len(prev):]))
		} else if ptr != "" {
			parts = append(parts, fieldFromPointer(stripDefs(ptr)))
		}
		prev = ptr
		what = msg[loc[1]:]
	}
	field = strings.Join(parts, "")
	field = strings.TrimPrefix(field, ".")
	if strings.HasPrefix(what, "required: missing properties: ") {
		what = "missing required " + strings.TrimPrefix(what, "required: missing properties: ")
	} else if strings.HasPrefix(what, "unexpected additional properties ") {
		what = "unknown " + strings.TrimPrefix(what, "unexpected ") + " (not in the schema)"
	}
	return field, what
}

// stripDefs removes a leading "/$defs/name" or "/definitions/name", the
// target of a $ref, which is not part of the instance path.
func stripDefs(ptr string) string {
	for _, p := range []string{"/$defs/", "/definitions/"} {
		if strings.HasPrefix(ptr, p) {
			rest := ptr[len(p):]
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				return rest[i:]
			}
			return ""
		}
	}
	return ptr
}

// fieldFromPointer maps a schema JSON pointer to an instance field path:
// "/properties/edits/items/properties/old" -> "edits[].old".
func fieldFromPointer(ptr string) string {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var out strings.Builder
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties", "patternProperties":
			if i+1 < len(parts) {
				out.WriteByte('.')
				out.WriteString(parts[i+1])
				i++
			}
		case "items", "prefixItems", "additionalItems":
			out.WriteString("[]")
		}
	}
	return out.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// Decode unmarshals a validated call input into T (unknown fields are
// rejected, as the schema should already have). An error here is a
// Parameters-stage *Error.
func Decode[T any](call *Call) (T, error) {
	var v T
	raw := bytes.TrimSpace(call.Input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, Errorf(Parameters, "cannot decode input: %v", err).
			WithHint("correct the arguments to match the input schema")
	}
	return v, nil
}
