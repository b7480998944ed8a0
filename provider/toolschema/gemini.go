package toolschema

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultGeminiRefDepth is how many times [ForGemini] nests a recursive
// $ref inside itself before it cuts the rest off with a note.
const DefaultGeminiRefDepth = 3

// GeminiOptions tune [ForGemini].
type GeminiOptions struct {
	// RefDepth is how many times a recursive $ref is expanded inside
	// itself before the rest is cut off (replaced by a description).
	// 0 means DefaultGeminiRefDepth.
	RefDepth int
}

// geminiKeep lists the Schema fields Gemini accepts and this projection
// passes through unchanged: the "select subset of an OpenAPI 3.0 schema
// object" of the Gemini API reference ("Schema",
// https://ai.google.dev/api/caching#Schema), minus the fields handled on
// their own below (type, format, enum, items, properties, required, anyOf).
var geminiKeep = map[string]bool{
	"title": true, "description": true, "nullable": true, "default": true, "example": true,
	"minItems": true, "maxItems": true, "minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "minProperties": true, "maxProperties": true,
	"propertyOrdering": true,
}

// geminiFormats are the formats the Gemini reference names per type
// ("for NUMBER type: float, double; for INTEGER type: int32, int64; for
// STRING type: enum, date-time").
var geminiFormats = map[string]map[string]bool{
	"number":  {"float": true, "double": true},
	"integer": {"int32": true, "int64": true},
	"string":  {"enum": true, "date-time": true},
}

// geminiSilent are annotations removed without a note.
var geminiSilent = map[string]bool{
	"$schema": true, "$id": true, "$anchor": true, "$comment": true, "$defs": true, "definitions": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// ForGemini projects schema into the Schema subset of Gemini function
// declarations (https://ai.google.dev/api/caching#Schema: "a select subset
// of an OpenAPI 3.0 schema object"), for the Gemini API and for its
// OpenAI-compatible chat completions endpoint
// (https://ai.google.dev/gemini-api/docs/openai), whose parser rejects the
// whole request on the first field it does not know (case BH-094).
//
// What it does, each step a [Note] (Lossy where Gemini no longer enforces
// what the full schema does; the full schema still validates the
// arguments at dispatch):
//   - every $ref is inlined; a recursive one is expanded opts.RefDepth
//     times and then cut off with a description (BH-034: "cuts off at a
//     fixed depth with a note"); the output has no $ref and no $defs;
//   - top-level combinators are flattened or described as in [ForAnthropic];
//   - $schema, $id, $comment and other annotations are removed;
//     additionalProperties is removed (a schema-valued one is described);
//   - a type list becomes one type and "nullable": true, or no type with
//     the types described; an anyOf/oneOf of one schema and null becomes
//     that schema, nullable; any other nested anyOf/oneOf becomes a
//     schema without a type whose description lists the alternatives;
//   - exclusiveMinimum/exclusiveMaximum on an integer become
//     minimum/maximum ± 1 (exact); on a number, inclusive bounds plus a
//     description;
//   - const becomes a one-value enum for a string; enums keep string
//     values only (others are described); examples becomes example;
//   - uniqueItems, multipleOf, not, if/then/else, patternProperties,
//     dependentRequired, a format Gemini does not name, tuples and every
//     other keyword outside the subset are removed and described;
//   - an object without properties below the top level (Gemini: "should
//     be non-empty for OBJECT type") and an array without items lose their
//     type or get a described untyped items, not an error;
//   - required keeps only names listed in properties.
//
// schema must be a JSON object; a $ref that does not resolve inside it is
// an error wrapping [ErrSchema]. The output is compact JSON with sorted
// keys, "type": "object" at the top.
func ForGemini(schema json.RawMessage, opts GeminiOptions) (json.RawMessage, []Note, error) {
	doc, err := decode(schema)
	if err != nil {
		return nil, nil, err
	}
	depth := opts.RefDepth
	if depth <= 0 {
		depth = DefaultGeminiRefDepth
	}
	var notes []Note
	root, err := inlineRefsCut(doc, depth, &notes)
	if err != nil {
		return nil, nil, err
	}
	root = simplify(root, "", &notes).(map[string]any)
	liftRoot(root, &notes)
	g := gemini(root, "", true, &notes)
	g["type"] = "object"
	if p, ok := g["properties"].(map[string]any); !ok || p == nil {
		g["properties"] = map[string]any{}
	}
	return finish(g, notes)
}

// gemini converts one node.
func gemini(v any, path string, root bool, notes *[]Note) map[string]any {
	m, ok := asMap(v)
	if !ok {
		return map[string]any{}
	}
	if isImpossible(m) {
		*notes = append(*notes, Note{Path: path, Lossy: true, What: "a schema no value matches; described"})
		return map[string]any{"description": "Never allowed: leave it out."}
	}
	m = copyMap(m)
	var prose []string
	lossy := func(key, what, words string) {
		*notes = append(*notes, Note{Path: path + key, Lossy: true, What: what})
		if words != "" {
			prose = append(prose, words)
		}
	}
	nullable := false
	// Combinators first: they may merge into m.
	if list, ok := m["allOf"].([]any); ok {
		delete(m, "allOf")
		for i, b := range list {
			bm, _ := asMap(b)
			if merged, ok := merge(m, bm); ok && bm != nil {
				m = merged
				*notes = append(*notes, Note{Path: fmt.Sprintf("%s/allOf/%d", path, i), What: "merged an allOf branch into its parent (Gemini has no allOf)"})
				continue
			}
			d := describe(b, "")
			lossy(fmt.Sprintf("/allOf/%d", i), "removed an allOf branch Gemini cannot express; described: "+d, d)
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		list, ok := m[k].([]any)
		if !ok {
			continue
		}
		delete(m, k)
		var rest []any
		hasNull := false
		for _, b := range list {
			if bm, ok := b.(map[string]any); ok && len(bm) == 1 && bm["type"] == "null" {
				hasNull = true
				continue
			}
			rest = append(rest, b)
		}
		if len(rest) == 1 {
			if bm, ok := asMap(rest[0]); ok {
				if merged, ok := merge(bm, m); ok {
					m = merged
					nullable = nullable || hasNull
					*notes = append(*notes, Note{Path: path + "/" + k, What: k + " of one schema and null sent as that schema with nullable"})
					continue
				}
			}
		}
		d := describe(map[string]any{k: list}, "")
		lossy("/"+k, "removed "+k+" (not sent to Gemini); the node has no type and the alternatives are described: "+d, d)
		delete(m, "type")
	}
	out := map[string]any{}
	typ := ""
	switch t := m["type"].(type) {
	case string:
		if t == "null" {
			nullable = true
			prose = append(prose, "always null")
			*notes = append(*notes, Note{Path: path + "/type", Lossy: true, What: `type "null" sent as nullable without a type`})
		} else {
			typ = t
		}
	case []any:
		var nonNull []string
		for _, e := range t {
			if s, _ := e.(string); s == "null" {
				nullable = true
			} else if s != "" {
				nonNull = append(nonNull, s)
			}
		}
		if len(nonNull) == 1 {
			typ = nonNull[0]
			*notes = append(*notes, Note{Path: path + "/type", What: "type list sent as one type with nullable"})
		} else if len(nonNull) > 1 {
			lossy("/type", "type list "+compact(t)+" has no Gemini form; sent without a type, described", "is "+typeWords(t))
		}
	}
	if typ == "" && (m["properties"] != nil) {
		typ = "object"
	}
	for _, k := range sortedKeys(m) {
		x := m[k]
		switch {
		case k == "type":
		case geminiSilent[k]:
		case geminiKeep[k]:
			if k == "nullable" {
				if b, _ := x.(bool); b {
					nullable = true
				}
				continue
			}
			if f, ok := number(x); ok && (k == "minimum" || k == "maximum") {
				out[k] = tighter(k, out[k], nil, f)
				continue
			}
			out[k] = x
		case k == "examples":
			if l := listOf(x); len(l) > 0 {
				out["example"] = l[0]
				*notes = append(*notes, Note{Path: path + "/examples", What: "examples sent as example (the first)"})
			}
		case k == "format":
			f, _ := x.(string)
			if geminiFormats[typ][f] {
				out[k] = f
			} else {
				lossy("/format", "removed format "+f+" (not a Gemini format for this type); described", "in "+f+" format")
			}
		case k == "const":
			if s, ok := x.(string); ok {
				out["enum"] = []any{s}
				if typ == "" {
					typ = "string"
				}
				*notes = append(*notes, Note{Path: path + "/const", What: "const sent as a one-value enum"})
			} else if x == nil {
				nullable = true
				prose = append(prose, "always null")
			} else {
				lossy("/const", "removed const (Gemini enums hold strings only); described", "value="+scalar(x))
			}
		case k == "enum":
			var ss []any
			other := false
			for _, e := range listOf(x) {
				switch e := e.(type) {
				case string:
					ss = append(ss, e)
				case nil:
					nullable = true
				default:
					other = true
				}
			}
			if other || len(ss) == 0 {
				lossy("/enum", "removed enum (Gemini enums hold strings only); described", "is one of "+list(x))
			} else {
				out["enum"] = ss
				if typ == "" {
					typ = "string"
				}
			}
		case k == "exclusiveMinimum" || k == "exclusiveMaximum":
			n, ok := number(x)
			if !ok {
				lossy("/"+k, "removed "+k+" (not a number); described", k+": "+compact(x))
				continue
			}
			bound, word := "minimum", " > "
			if k == "exclusiveMaximum" {
				bound, word = "maximum", " < "
			}
			if typ == "integer" {
				var inc float64
				if bound == "minimum" {
					inc = math.Floor(n) + 1
				} else {
					inc = math.Ceil(n) - 1
				}
				out[bound] = tighter(bound, out[bound], m[bound], inc)
				*notes = append(*notes, Note{Path: path + "/" + k, What: fmt.Sprintf("%s %s on an integer sent as %s %s (same meaning)", k, scalar(x), bound, strconv.FormatFloat(inc, 'f', -1, 64))})
			} else {
				out[bound] = tighter(bound, out[bound], m[bound], n)
				lossy("/"+k, k+" sent as the inclusive "+bound+"; the strict bound is described", "value"+word+scalar(x))
			}
		case k == "properties":
			pm, _ := x.(map[string]any)
			np := make(map[string]any, len(pm))
			for _, name := range sortedKeys(pm) {
				np[name] = gemini(pm[name], path+"/properties/"+escape(name), false, notes)
			}
			out["properties"] = np
		case k == "required":
			pm, _ := m["properties"].(map[string]any)
			var req []any
			for _, r := range strs(x) {
				if _, ok := pm[r]; ok {
					req = append(req, r)
				} else {
					lossy("/required", "required name "+r+" is not a listed property; removed from required, described", r+" is required")
				}
			}
			if len(req) > 0 {
				out["required"] = req
			}
		case k == "items":
			if _, tuple := x.([]any); tuple {
				lossy("/items", "removed tuple items (Gemini has no tuples); described", "each item by position: "+compact(x))
				continue
			}
			out["items"] = gemini(x, path+"/items", false, notes)
		case k == "additionalProperties":
			if b, ok := x.(bool); ok {
				if !b {
					*notes = append(*notes, Note{Path: path + "/additionalProperties", Lossy: true, What: "removed additionalProperties false (not in the Gemini subset)"})
				}
				continue
			}
			d := describe(x, "")
			lossy("/additionalProperties", "removed additionalProperties (not in the Gemini subset); described: "+d, "other fields: "+d)
		case k == "uniqueItems":
			if b, _ := x.(bool); b {
				lossy("/uniqueItems", "removed uniqueItems (not in the Gemini subset); described", "items are unique")
			}
		default:
			d := describe(map[string]any{k: x}, "")
			lossy("/"+k, "removed "+k+" (not in the Gemini subset); described: "+d, d)
		}
	}
	switch typ {
	case "object":
		if p, _ := out["properties"].(map[string]any); len(p) == 0 && !root {
			delete(out, "properties")
			typ = ""
			lossy("", "an object without listed properties is sent without a type (Gemini wants properties for an object); described", "a JSON object")
		}
	case "array":
		if _, ok := out["items"]; !ok {
			out["items"] = map[string]any{"description": "Any JSON value."}
			*notes = append(*notes, Note{Path: path + "/items", What: "added untyped items to an array without items (Gemini wants items for an array)"})
		}
	}
	if typ != "" {
		out["type"] = typ
	}
	if nullable {
		out["nullable"] = true
	}
	if len(prose) > 0 {
		appendDescription(out, "Also: "+strings.Join(prose, "; ")+".")
	}
	return out
}

// number reads a JSON number.
func number(x any) (float64, bool) {
	switch n := x.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// tighter returns the stricter of an inclusive bound already in the output
// or the input and v, as a JSON number.
func tighter(bound string, have, orig any, v float64) any {
	best := v
	for _, c := range []any{have, orig} {
		if f, ok := number(c); ok {
			if (bound == "minimum" && f > best) || (bound == "maximum" && f < best) {
				best = f
			}
		}
	}
	return json.Number(strconv.FormatFloat(best, 'f', -1, 64))
}
