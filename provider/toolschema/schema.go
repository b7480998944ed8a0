package toolschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Note is one change a projection made to a schema, for the caller to log
// with the server and tool it belongs to (case BH-031: "logs a warning that
// names the server and tool").
type Note struct {
	// Path is the JSON pointer, in the input schema, of the place changed
	// ("" is the root).
	Path string
	// What says what was done, in plain language.
	What string
	// Lossy is true when the projected schema is looser or less precise
	// than the original there (a constraint moved into prose, a keyword the
	// provider does not support dropped); such notes deserve a warning.
	// Meaning-preserving rewrites (an inlined $ref, a collapsed one-branch
	// anyOf) are false.
	Lossy bool
	// Rewrite is true when a meaning-preserving change alters the shape the
	// model sends (an optional property made required and nullable, an
	// added "additionalProperties": false, a oneOf of disjoint branches
	// sent as anyOf); [StrictOptions.NoRewrite] refuses strict mode then.
	Rewrite bool
}

// String renders a note as "path: what" ("(root)" for the root).
func (n Note) String() string {
	p := n.Path
	if p == "" {
		p = "(root)"
	}
	return p + ": " + n.What
}

// ErrSchema is wrapped by every error about an input that is not a usable
// tool schema (not a JSON object, a $ref that does not resolve).
var ErrSchema = errors.New("toolschema: unusable input schema")

// ErrNotStrict is wrapped by [ForOpenAIStrict] when the schema cannot be
// expressed in OpenAI's strict subset without changing what the tool
// accepts in a way prose cannot carry (an open map, a value of any type, a
// tuple). Send the [ForOpenAI] projection with "strict": false instead.
var ErrNotStrict = errors.New("toolschema: schema cannot be made strict")

// Keyword positions that hold subschemas (JSON Schema 2020-12 Core §10 and
// Validation; draft-07 "definitions", "dependencies", "additionalItems" and
// array-form "items" too).
var (
	singleKeys = map[string]bool{
		"items": true, "additionalProperties": true, "not": true, "if": true, "then": true,
		"else": true, "contains": true, "propertyNames": true, "additionalItems": true,
		"unevaluatedItems": true, "unevaluatedProperties": true, "contentSchema": true,
	}
	listKeys = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true, "items": true}
	mapKeys  = map[string]bool{
		"properties": true, "patternProperties": true, "dependentSchemas": true,
		"$defs": true, "definitions": true, "dependencies": true,
	}
)

// decode parses raw as one JSON object, numbers kept exact.
func decode(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrSchema, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrSchema)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: must be a JSON object", ErrSchema)
	}
	return m, nil
}

// encode renders v as compact JSON with sorted keys and <, >, & left
// literal (descriptions are read by a model, not a browser).
func encode(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n")), nil
}

// walk returns a shallow copy of schema m whose subschemas are replaced by
// f(sub, pointer). Data keywords (enum, const, default, examples) are not
// walked. skip names keywords to leave out of the copy.
func walk(m map[string]any, path string, skip map[string]bool, f func(v any, path string) (any, error)) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if skip[k] {
			continue
		}
		p := path + "/" + escape(k)
		switch {
		case k == "items" || k == "additionalItems":
			if list, ok := v.([]any); ok {
				nl, err := walkList(list, p, f)
				if err != nil {
					return nil, err
				}
				out[k] = nl
				continue
			}
			nv, err := f(v, p)
			if err != nil {
				return nil, err
			}
			out[k] = nv
		case singleKeys[k]:
			nv, err := f(v, p)
			if err != nil {
				return nil, err
			}
			out[k] = nv
		case listKeys[k]:
			list, ok := v.([]any)
			if !ok {
				out[k] = v
				continue
			}
			nl, err := walkList(list, p, f)
			if err != nil {
				return nil, err
			}
			out[k] = nl
		case mapKeys[k]:
			named, ok := v.(map[string]any)
			if !ok {
				out[k] = v
				continue
			}
			nm := make(map[string]any, len(named))
			for name, sub := range named {
				if _, isList := sub.([]any); isList && k == "dependencies" {
					nm[name] = sub // draft-07 property dependencies: names, not a schema
					continue
				}
				nv, err := f(sub, p+"/"+escape(name))
				if err != nil {
					return nil, err
				}
				nm[name] = nv
			}
			out[k] = nm
		default:
			out[k] = v
		}
	}
	return out, nil
}

func walkList(list []any, path string, f func(v any, path string) (any, error)) ([]any, error) {
	nl := make([]any, len(list))
	for i, sub := range list {
		nv, err := f(sub, path+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		nl[i] = nv
	}
	return nl, nil
}

// escape encodes one JSON pointer token (RFC 6901 §3).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolve finds the target of a local reference in doc: "#", "#/json/pointer"
// (RFC 6901, percent-decoded as a URI fragment) or "#anchor" ($anchor, or a
// draft-07 "$id": "#anchor").
func resolve(doc map[string]any, ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, false
	}
	if frag == "" {
		return doc, true
	}
	if !strings.HasPrefix(frag, "/") {
		return findAnchor(doc, frag)
	}
	var cur any = doc
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func findAnchor(v any, name string) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		if a, ok := v["$anchor"].(string); ok && a == name {
			return v, true
		}
		if id, ok := v["$id"].(string); ok && id == "#"+name {
			return v, true
		}
		for _, k := range sortedKeys(v) {
			switch k {
			case "enum", "const", "default", "examples":
				continue
			}
			if r, ok := findAnchor(v[k], name); ok {
				return r, true
			}
		}
	case []any:
		for _, sub := range v {
			if r, ok := findAnchor(sub, name); ok {
				return r, true
			}
		}
	}
	return nil, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// refsIn lists every "$ref" string in a schema (not in data keywords).
func refsIn(v any) []string {
	var out []string
	var visit func(v any, named bool)
	visit = func(v any, named bool) {
		switch v := v.(type) {
		case map[string]any:
			if !named {
				if r, ok := v["$ref"].(string); ok {
					out = append(out, r)
				}
			}
			for _, k := range sortedKeys(v) {
				if !named {
					switch k {
					case "enum", "const", "default", "examples":
						continue
					}
				}
				visit(v[k], !named && mapKeys[k])
			}
		case []any:
			for _, sub := range v {
				visit(sub, false)
			}
		}
	}
	visit(v, false)
	return out
}

// CheckRefs reports the first "$ref" in schema whose target does not
// resolve inside schema itself, or nil when every one does (case BH-035:
// "for every $ref string in the emitted parameters, the pointer resolves
// inside the emitted document"). Every projection runs it on its output.
func CheckRefs(schema json.RawMessage) error {
	doc, err := decode(schema)
	if err != nil {
		return err
	}
	return checkRefs(doc)
}

func checkRefs(doc map[string]any) error {
	for _, r := range refsIn(doc) {
		if _, ok := resolve(doc, r); !ok {
			return fmt.Errorf("%w: $ref %q does not resolve inside the schema", ErrSchema, r)
		}
	}
	return nil
}

// isImpossible reports a schema that no value matches: false, {"not":{}}
// or {"not":true}, alone.
func isImpossible(v any) bool {
	switch v := v.(type) {
	case bool:
		return !v
	case map[string]any:
		if len(v) != 1 {
			return false
		}
		n, ok := v["not"]
		if !ok {
			return false
		}
		if b, ok := n.(bool); ok {
			return b
		}
		m, ok := n.(map[string]any)
		return ok && len(m) == 0
	}
	return false
}

// annotation keywords: a sibling of $ref or of a collapsed branch may
// override these without changing what validates.
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// merge combines two schemas that must both hold into one map when no
// validation keyword conflicts; ok is false otherwise. Annotations of b win.
func merge(a, b map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		old, exists := out[k]
		if !exists || annotations[k] {
			out[k] = v
			continue
		}
		if jsonEqual(old, v) {
			continue
		}
		return nil, false
	}
	return out, true
}

func jsonEqual(a, b any) bool {
	x, err1 := encode(a)
	y, err2 := encode(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// asMap turns a boolean schema into its map form.
func asMap(v any) (map[string]any, bool) {
	switch v := v.(type) {
	case map[string]any:
		return v, true
	case bool:
		if v {
			return map[string]any{}, true
		}
		return map[string]any{"not": map[string]any{}}, true
	}
	return nil, false
}
