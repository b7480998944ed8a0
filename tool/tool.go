package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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
	// CompileOnUse defers compiling InputSchema to the tool's first Call or
	// [Tool.Compile], once; Define then only checks that InputSchema is a
	// JSON object. The caller must already have checked the schema with
	// [CheckSchema]. A schema that then fails to compile makes Compile
	// return its *DefinitionError and every Call a Discovery-stage error
	// naming it. For tools of which a run uses few, such as thousands of
	// deferred MCP tools, where compiling every schema at start-up would
	// cost more than the tools that are used. Default false: Define
	// compiles.
	CompileOnUse bool
	// Verify is the tool's check of its own effect, run by the
	// Verification stage on every successful result (package pipeline):
	// write_file compares the read-back hash with the content sent,
	// execute its exit code with its header. nil: the tool declares no
	// check, and its results pass the stage unverified.
	Verify VerifyFunc
	// OutputFile says where the tool keeps the whole raw output of one
	// call while it runs (execute's full output file), for view_tool_call
	// to read a call that has no result yet. nil: none.
	OutputFile OutputFileFunc
	// Access, when set, says what a call reaches (its approval target: a
	// kind of access, paths, a command, a URL); see [Access]. nil: the
	// tool is matched by name and annotations only.
	Access AccessFunc
}

// Tool is a defined tool: a name, a description, a compiled input schema and
// a handler. It is immutable and safe for concurrent calls.
type Tool struct {
	name        string
	description string
	raw         json.RawMessage
	annotations *Annotations
	handler     Handler
	verify      VerifyFunc
	outputFile  OutputFileFunc
	access      AccessFunc

	once      sync.Once
	compiled  atomic.Bool
	schema    *jsonschema.Schema // set by once
	schemaErr error              // a *DefinitionError, set by once
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
	raw := bytes.TrimSpace(spec.InputSchema)
	t := &Tool{
		name:        spec.Name,
		description: spec.Description,
		raw:         append(json.RawMessage(nil), raw...),
		annotations: spec.Annotations,
		handler:     spec.Handler,
		verify:      spec.Verify,
		outputFile:  spec.OutputFile,
		access:      spec.Access,
	}
	if spec.CompileOnUse {
		if len(raw) == 0 || raw[0] != '{' {
			return fail("inputSchema", "must be a JSON object", nil)
		}
		return t, nil
	}
	if err := t.Compile(); err != nil {
		return nil, err
	}
	return t, nil
}

// Compile compiles the input schema if that has not happened yet (a tool
// defined with [Spec.CompileOnUse]) and returns the outcome, the same on
// every call: nil, or the *DefinitionError (wrapping [ErrDefinition]) that
// names the keyword at fault. Safe for concurrent use; the work is done
// once.
func (t *Tool) Compile() error {
	t.once.Do(func() {
		sch, keyword, err := Compile(t.raw)
		if err != nil {
			t.schemaErr = &DefinitionError{Tool: t.name, Keyword: keyword, Msg: err.Error(), Err: err}
		}
		t.schema = sch
		t.compiled.Store(true)
	})
	return t.schemaErr
}

// Compiled reports, without compiling, whether the input schema has been
// compiled (always true for a tool Define compiled) and, if so, the error
// [Tool.Compile] returned.
func (t *Tool) Compiled() (done bool, err error) {
	if !t.compiled.Load() {
		return false, nil
	}
	return true, t.schemaErr
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

// Compile checks a JSON Schema for use as a tool input schema and compiles
// it without network access, with github.com/santhosh-tekuri/jsonschema/v6
// (draft 2020-12 by default; "$schema" may choose draft-07 and earlier).
// It is CompileWith(raw, nil).
func Compile(raw json.RawMessage) (*jsonschema.Schema, string, error) {
	return CompileWith(raw, nil)
}

// CompileWith is Compile with the bounds of opts (nil: defaults). The schema
// first passes [CheckSchema] (depth, top-level type, local references,
// reference cycles, keyword shapes), then the compiler's meta-schema check.
// On failure it also returns the offending keyword or location: "depth"
// (nested deeper than opts.MaxDepth), "inputSchema" (not a JSON object),
// "type" (top level not "object"), "$ref" (a remote or unresolvable
// reference, or a reference cycle), or the JSON pointer of the place that
// fails the meta-schema, e.g. "/properties/required" (case BH-037).
func CompileWith(raw json.RawMessage, opts *CheckOptions) (*jsonschema.Schema, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, "inputSchema", errors.New("must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, "inputSchema", fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, "inputSchema", errors.New("not valid JSON: data after the schema object")
	}
	if _, keyword, err := check(generic, opts); err != nil {
		return nil, keyword, err
	}
	return compileChecked(raw, generic)
}

// compileChecked compiles a schema that passed check; doc is its decoded
// form.
func compileChecked(raw json.RawMessage, doc any) (*jsonschema.Schema, string, error) {
	if _, ok := doc.(map[string]any); !ok {
		var err error
		if doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(raw)); err != nil {
			return nil, "inputSchema", fmt.Errorf("not valid JSON: %w", err)
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noRemote{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, "inputSchema", err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, compileKeyword(err), errors.New(describeCompile(err))
	}
	return sch, "", nil
}

// schemaURL names the one in-memory document a tool schema is.
const schemaURL = "urn:aibuddy:input-schema"

// noRemote refuses every URL: a tool schema must resolve on its own.
type noRemote struct{}

func (noRemote) Load(url string) (any, error) {
	return nil, fmt.Errorf("remote reference %s: only references inside the schema resolve", url)
}

func compileKeyword(err error) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			if leaves := leafErrors(ve); len(leaves) > 0 {
				first := "/" + strings.Join(leaves[0].InstanceLocation, "/")
				for _, l := range leaves[1:] {
					if loc := "/" + strings.Join(l.InstanceLocation, "/"); loc < first {
						first = loc
					}
				}
				return first
			}
		}
		return "inputSchema"
	}
	switch err.(type) {
	case *jsonschema.JSONPointerNotFoundError, *jsonschema.AnchorNotFoundError, *jsonschema.LoadURLError,
		*jsonschema.UnsupportedURLSchemeError, *jsonschema.InvalidJsonPointerError:
		return "$ref"
	}
	return "inputSchema"
}

func describeCompile(err error) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			var parts []string
			seen := map[string]bool{}
			leaves := leafErrors(ve)
			slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
				return strings.Compare(strings.Join(a.InstanceLocation, "/"), strings.Join(b.InstanceLocation, "/"))
			})
			for _, l := range leaves {
				loc := "/" + strings.Join(l.InstanceLocation, "/")
				if seen[loc] { // anyOf alternatives at one place: the first says it
					continue
				}
				seen[loc] = true
				parts = append(parts, fmt.Sprintf("at %s: %s", loc, l.ErrorKind.LocalizedString(printer)))
			}
			return "not a valid JSON Schema (meta-schema check): " + strings.Join(parts, "; ")
		}
	}
	var pe *jsonschema.JSONPointerNotFoundError
	if errors.As(err, &pe) {
		return fmt.Sprintf("reference %s does not resolve inside the schema", strings.TrimPrefix(pe.URL, schemaURL))
	}
	return strings.ReplaceAll(err.Error(), schemaURL, "schema")
}

var printer = message.NewPrinter(language.English)

// leafErrors returns the innermost errors of a validation error tree,
// skipping the grouping kinds (allOf, $ref, schema) that only wrap others.
func leafErrors(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leafErrors(c)...)
	}
	return out
}

// scanRefs walks a decoded schema and returns the first $ref or
// $dynamicRef that does not start with '#', and whether it holds any $ref
// at all (local). Keywords whose values are data, not schemas (const, default,
// enum, examples), are not walked. A map of named subschemas (properties,
// $defs, ...) is walked with named set, so a property called "default" is
// still inspected.
func scanRefs(v any, named bool) (remote string, local bool) {
	switch v := v.(type) {
	case map[string]any:
		if !named {
			for _, k := range []string{"$ref", "$dynamicRef"} {
				if ref, ok := v[k].(string); ok {
					local = true
					if ref != "" && !strings.HasPrefix(ref, "#") {
						return ref, true
					}
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
			r, has := scanRefs(sub, isMap)
			if r != "" {
				return r, true
			}
			local = local || has
		}
	case []any:
		for _, sub := range v {
			r, has := scanRefs(sub, false)
			if r != "" {
				return r, true
			}
			local = local || has
		}
	}
	return "", local
}

// Name is the tool's wire name.
func (t *Tool) Name() string { return t.name }

// Description is the model-facing description.
func (t *Tool) Description() string { return t.description }

// InputSchema is the schema as given to Define (raw JSON, whitespace
// trimmed). Callers must not modify it.
func (t *Tool) InputSchema() json.RawMessage { return t.raw }

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
	if !t.validatedIn(ctx, call.Input) {
		if err := t.Validate(call.Input); err != nil {
			return ErrorResult(err, t.name)
		}
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

// Validate checks input as [Tool.Call] does before its handler runs: one
// JSON object (empty input counts as {}) that satisfies the input schema.
// It returns nil, a Parameters-stage *Error naming each field at fault
// and what was expected, or, for a tool whose schema did not compile at
// its first use, the Discovery-stage *Error saying the tool cannot be
// used. The pipeline's Parameters stage calls it before Authorization, so
// nobody is asked to approve a call that cannot run.
func (t *Tool) Validate(input json.RawMessage) error {
	if err := t.Compile(); err != nil {
		return unusable(err)
	}
	in, perr := decodeInput(input)
	if perr == nil {
		perr = t.validate(in)
	}
	if perr != nil {
		return perr
	}
	return nil
}

// validatedKey is the context key of the input [Tool.Validated] marks.
type validatedKey struct{}

// validated is one input a tool's Validate accepted.
type validated struct {
	t     *Tool
	input []byte
}

// Validated returns a copy of ctx recording that input passed t's
// [Tool.Validate], so that [Tool.Call] on that context with the same input
// (byte for byte) does not decode and check it a second time: the
// pipeline's Parameters stage validates before Authorization, and the
// check of a large input (a 10 MiB write_file content) costs about as
// much as the write. Whether an input is valid depends on the tool's
// schema and the bytes alone, so an input changed on the way (even
// copied) is compared byte for byte and checked again when it differs.
// Call it only with an input Validate returned nil for.
func (t *Tool) Validated(ctx context.Context, input json.RawMessage) context.Context {
	return context.WithValue(ctx, validatedKey{}, validated{t: t, input: input})
}

// validatedIn reports whether ctx records input as validated by t.
func (t *Tool) validatedIn(ctx context.Context, input json.RawMessage) bool {
	v, ok := ctx.Value(validatedKey{}).(validated)
	return ok && v.t == t && bytes.Equal(v.input, input)
}

// unusable is the Discovery-stage error of a call to a tool whose input
// schema did not compile at its first use.
func unusable(err error) *Error {
	msg := err.Error()
	var de *DefinitionError
	if errors.As(err, &de) {
		msg = de.Keyword + ": " + de.Msg
	}
	return (&Error{Stage: Discovery, Msg: "this tool cannot be used: its input schema was rejected when it was first loaded (" + msg + ")", Err: err}).
		WithHint("do the task with another tool; the tool's provider must fix its input schema")
}

// decodeInput parses raw as exactly one JSON object, numbers kept exact
// (json.Number) for the schema check.
func decodeInput(raw json.RawMessage) (map[string]any, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
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
	err := t.schema.Validate(input)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Error{Stage: Parameters, Msg: "invalid input: " + err.Error(), Err: err}
	}
	var parts []string
	for _, l := range leafErrors(ve) {
		parts = append(parts, describeLeaf(l))
	}
	// The validator walks properties in map order: sort for a stable message.
	slices.Sort(parts)
	parts = slices.Compact(parts)
	return &Error{Stage: Parameters, Msg: "invalid input: " + strings.Join(parts, "; "), Err: err,
		Hint: "correct the arguments to match the input schema of " + t.name}
}

// describeLeaf renders one schema violation with its field path, e.g.
// "screen.id is required", "field n: minimum: got 0, want 1".
func describeLeaf(l *jsonschema.ValidationError) string {
	field := fieldPath(l.InstanceLocation)
	join := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	switch k := l.ErrorKind.(type) {
	case *kind.Required:
		var names []string
		for _, m := range k.Missing {
			names = append(names, join(m))
		}
		return strings.Join(names, ", ") + " is required"
	case *kind.AdditionalProperties:
		var names []string
		for _, p := range k.Properties {
			names = append(names, join(p))
		}
		return "unknown field " + strings.Join(names, ", ") + " (not in the schema)"
	case *kind.Type:
		return fmt.Sprintf("field %s: got %s, want %s", orRoot(field), k.Got, strings.Join(k.Want, " or "))
	}
	return fmt.Sprintf("field %s: %s", orRoot(field), l.ErrorKind.LocalizedString(printer))
}

func orRoot(field string) string {
	if field == "" {
		return "(input)"
	}
	return field
}

// fieldPath renders an instance location: ["edits","0","old"] ->
// "edits[0].old".
func fieldPath(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
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
