package toolschema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// ForAnthropic projects schema into an Anthropic Messages API tool
// input_schema (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use,
// "input_schema"; the API answers 400 "input_schema does not support oneOf,
// allOf, or anyOf at the top level").
//
// What it does, each step reported as a [Note]:
//   - non-recursive local $refs are inlined; recursive ones point into the
//     root $defs, which holds exactly the definitions they need (BH-034);
//   - branches that match nothing are removed and a one-branch anyOf/oneOf
//     collapses (BH-038);
//   - a top-level allOf branch that only adds properties and required
//     names is merged into the root; every other top-level allOf, anyOf,
//     oneOf, if/then/else and not is removed and written into the root
//     description as plain language, e.g. "size ≤ 64 when mode=quick"
//     (BH-031; Lossy);
//   - other root keywords (description, additionalProperties, ...) are kept
//     (BH-035).
//
// schema must be a JSON object; a $ref that does not resolve inside it is an
// error wrapping [ErrSchema]. The output is compact JSON, keys sorted, and
// every $ref in it resolves inside it.
func ForAnthropic(schema json.RawMessage) (json.RawMessage, []Note, error) {
	root, notes, err := prepare(schema)
	if err != nil {
		return nil, nil, err
	}
	return finish(root, notes)
}

// ForOpenAI projects schema into non-strict OpenAI function parameters
// (Responses API function tools or chat completions "parameters" with
// "strict": false), and for chat-completions compatible endpoints (local
// model servers) that may not resolve $ref or accept top-level combinators.
// It does what [ForAnthropic] does.
func ForOpenAI(schema json.RawMessage) (json.RawMessage, []Note, error) {
	return ForAnthropic(schema)
}

// prepare runs the steps every projection shares.
func prepare(schema json.RawMessage) (map[string]any, []Note, error) {
	doc, err := decode(schema)
	if err != nil {
		return nil, nil, err
	}
	var notes []Note
	root, err := inlineRefs(doc, &notes)
	if err != nil {
		return nil, nil, err
	}
	root = simplify(root, "", &notes).(map[string]any)
	liftRoot(root, &notes)
	if _, ok := root["type"]; !ok {
		root["type"] = "object"
		notes = append(notes, Note{What: `added "type": "object" at the top level`})
	}
	return root, notes, nil
}

func finish(root map[string]any, notes []Note) (json.RawMessage, []Note, error) {
	if err := checkRefs(root); err != nil {
		// A bug in the projection, never a document to send (BH-035).
		return nil, nil, fmt.Errorf("toolschema: projection left a dangling reference: %w", err)
	}
	out, err := encode(root)
	if err != nil {
		return nil, nil, err
	}
	return out, notes, nil
}

// liftRoot removes top-level combinators providers reject, merging what
// can be merged without loss and describing the rest.
func liftRoot(root map[string]any, notes *[]Note) {
	var prose []string
	if list, ok := root["allOf"].([]any); ok {
		delete(root, "allOf")
		for i, b := range list {
			bm, ok := asMap(b)
			if ok && mergeObjectBranch(root, bm) {
				*notes = append(*notes, Note{Path: fmt.Sprintf("/allOf/%d", i), What: "merged a top-level allOf branch into the root properties"})
				continue
			}
			d := describe(b, "")
			prose = append(prose, d)
			*notes = append(*notes, Note{Path: fmt.Sprintf("/allOf/%d", i), Lossy: true,
				What: "removed a top-level allOf branch (not accepted at the top level); described in the description: " + d})
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if list, ok := root[k].([]any); ok {
			delete(root, k)
			prose = append(prose, flattenRoot(root, k, list, notes))
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "not"} {
		if x, ok := root[k]; ok {
			delete(root, k)
			d := describe(map[string]any{k: x}, "")
			prose = append(prose, d)
			*notes = append(*notes, Note{Path: "/" + k, Lossy: true,
				What: "removed top-level " + k + " (not accepted at the top level); described in the description: " + d})
		}
	}
	if _, ok := root["if"]; ok {
		cond := map[string]any{}
		for _, k := range []string{"if", "then", "else"} {
			if x, ok := root[k]; ok {
				cond[k] = x
				delete(root, k)
			}
		}
		d := describe(cond, "")
		prose = append(prose, d)
		*notes = append(*notes, Note{Path: "/if", Lossy: true,
			What: "removed top-level if/then/else; described in the description: " + d})
	} else {
		delete(root, "then") // without "if" they never apply
		delete(root, "else")
	}
	if len(prose) > 0 {
		appendDescription(root, "Also required (checked when called): "+strings.Join(prose, "; ")+".")
	}
}

// mergeObjectBranch merges an allOf branch that only lists properties and
// required names into root; the conjunction is unchanged. It reports false
// (and leaves root alone) for any other branch.
func mergeObjectBranch(root, b map[string]any) bool {
	for k, v := range b {
		switch k {
		case "properties", "required", "description", "title", "$comment":
		case "type":
			if v != "object" {
				return false
			}
		default:
			return false
		}
	}
	if bp, ok := b["properties"].(map[string]any); ok {
		rp, _ := root["properties"].(map[string]any)
		if rp == nil {
			rp = map[string]any{}
		}
		if ap, ok := root["additionalProperties"]; ok && ap != true {
			for name := range bp {
				if _, exists := rp[name]; !exists {
					return false // would change what additionalProperties admits
				}
			}
		}
		for name, sub := range bp {
			if old, exists := rp[name]; exists && !jsonEqual(old, sub) {
				rp[name] = map[string]any{"allOf": []any{old, sub}}
			} else {
				rp[name] = sub
			}
		}
		root["properties"] = rp
	}
	if req := strs(b["required"]); len(req) > 0 {
		have := map[string]bool{}
		var all []any
		for _, r := range strs(root["required"]) {
			have[r] = true
			all = append(all, r)
		}
		for _, r := range req {
			if !have[r] {
				have[r] = true
				all = append(all, r)
			}
		}
		root["required"] = all
	}
	return true
}

// ForOpenAIStrict projects schema for an OpenAI function tool with
// "strict": true, following "Supported schemas" in
// https://platform.openai.com/docs/guides/structured-outputs#supported-schemas,
// with the default [StrictOptions]; see [ForOpenAIStrictWith].
func ForOpenAIStrict(schema json.RawMessage) (json.RawMessage, []Note, error) {
	return ForOpenAIStrictWith(schema, StrictOptions{})
}

// StrictOptions tune [ForOpenAIStrictWith].
type StrictOptions struct {
	// NoRewrite sends strict only a schema that already is in the strict
	// subset as given: one that needs an optional property made nullable,
	// "additionalProperties": false added or a oneOf sent as anyOf fails
	// with [ErrNotStrict] (case BH-093, "when rewriting is not allowed").
	// Default false: such meaning-preserving rewrites are made.
	NoRewrite bool
}

// ForOpenAIStrictWith projects schema for an OpenAI function tool with
// "strict": true (Structured Outputs, "Supported schemas",
// https://platform.openai.com/docs/guides/structured-outputs#supported-schemas),
// only when that loses nothing (issue 14: "strict only when the schema fits
// strict mode's subset"; case BH-093):
//   - every object gets "additionalProperties": false and lists all its
//     properties in required; a property that was optional takes a null
//     type union ("type": ["string", "null"], or an added {"type":"null"}
//     anyOf branch), so it stays optional in meaning: pass the model's
//     arguments through [RestoreOptional] before validating them against
//     the full schema;
//   - a oneOf whose branches are disjoint (distinct JSON types, or
//     distinct consts) is sent as anyOf;
//   - default and examples move into the description (annotations);
//   - $defs with $ref (recursion included) are supported and kept.
//
// It fails with an error wrapping [ErrNotStrict], whose text is the reason
// to log and record, whenever strict mode cannot carry the schema as it
// means: a keyword strict mode does not support (not, if/then/else,
// minLength, maxLength, uniqueItems, patternProperties, min/maxProperties,
// a format outside date-time, time, date, duration, email, hostname, ipv4,
// ipv6, uuid, ...), a oneOf of overlapping branches, an allOf that cannot
// be merged, a top-level combinator, a value of any type ({} or true), an
// object of any shape, an open map, a tuple (prefixItems or array-form
// items); with opts.NoRewrite also any rewrite (Note.Rewrite). The caller
// then sends [ForOpenAI] with "strict": false and validates the arguments
// against the full schema at dispatch, as for every call.
func ForOpenAIStrictWith(schema json.RawMessage, opts StrictOptions) (json.RawMessage, []Note, error) {
	root, notes, err := prepare(schema)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range []string{"$schema", "$id"} {
		delete(root, k)
	}
	out, err := strictify(root, "", &notes)
	if err != nil {
		return nil, nil, err
	}
	rm := out.(map[string]any)
	if defs, ok := rm["$defs"].(map[string]any); ok {
		for _, name := range sortedKeys(defs) {
			sd, err := strictify(defs[name], "/$defs/"+escape(name), &notes)
			if err != nil {
				return nil, nil, err
			}
			defs[name] = sd
		}
	}
	for _, n := range notes {
		if n.Lossy {
			return nil, nil, fmt.Errorf("%w: %s", ErrNotStrict, n)
		}
		if n.Rewrite && opts.NoRewrite {
			return nil, nil, fmt.Errorf("%w: would need a rewrite, which settings do not allow: %s", ErrNotStrict, n)
		}
	}
	return finish(rm, notes)
}

// strictDrop lists keywords strict mode rejects; they are described in
// prose and removed.
var strictDrop = []string{
	"not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
	"patternProperties", "unevaluatedProperties", "unevaluatedItems", "propertyNames",
	"minProperties", "maxProperties", "contains", "minContains", "maxContains",
	"uniqueItems", "minLength", "maxLength",
	"contentMediaType", "contentEncoding", "contentSchema",
}

// silent lists annotation keywords removed without a note.
var silent = []string{"$comment", "deprecated", "readOnly", "writeOnly", "$schema", "$id", "$anchor"}

// strictFormats are the string formats strict mode accepts.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

func strictify(v any, path string, notes *[]Note) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && !b {
			return map[string]any{"not": map[string]any{}}, fmt.Errorf("%w: %s matches nothing", ErrNotStrict, orRoot(path))
		}
		return nil, fmt.Errorf("%w: %s accepts a value of any type", ErrNotStrict, orRoot(path))
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = x
	}
	if _, ok := out["$ref"]; ok {
		for k := range out {
			if k != "$ref" && k != "description" {
				delete(out, k)
			}
		}
		return out, nil
	}
	for _, k := range silent {
		delete(out, k)
	}
	var prose []string
	if list, ok := out["allOf"].([]any); ok {
		delete(out, "allOf")
		for i, b := range list {
			bm, _ := asMap(b)
			if merged, ok := merge(out, bm); ok && bm != nil {
				out = merged
				*notes = append(*notes, Note{Path: fmt.Sprintf("%s/allOf/%d", path, i), What: "merged an allOf branch into its parent (strict mode has no allOf)"})
				continue
			}
			d := describe(b, "")
			prose = append(prose, d)
			*notes = append(*notes, Note{Path: fmt.Sprintf("%s/allOf/%d", path, i), Lossy: true, What: "removed an allOf branch strict mode cannot express; described: " + d})
		}
	}
	var words []string
	for _, k := range []string{"default", "examples"} {
		if x, ok := out[k]; ok {
			delete(out, k)
			if k == "default" {
				words = append(words, "default "+scalar(x))
			} else {
				words = append(words, "e.g. "+list(x))
			}
			*notes = append(*notes, Note{Path: path + "/" + k, What: k + " moved into the description (not supported in strict mode)"})
		}
	}
	if x, ok := out["oneOf"]; ok {
		delete(out, "oneOf")
		if _, has := out["anyOf"]; !has && disjoint(listOf(x)) {
			out["anyOf"] = x
			*notes = append(*notes, Note{Path: path + "/oneOf", Rewrite: true, What: "oneOf sent as anyOf (its branches are disjoint, so the meaning is the same)"})
		} else if _, has := out["anyOf"]; has {
			d := describe(map[string]any{"oneOf": x}, "")
			prose = append(prose, d)
			*notes = append(*notes, Note{Path: path + "/oneOf", Lossy: true, What: "removed oneOf beside anyOf; described: " + d})
		} else {
			out["anyOf"] = x
			prose = append(prose, "exactly one of the alternatives applies")
			*notes = append(*notes, Note{Path: path + "/oneOf", Lossy: true, What: "oneOf sent as anyOf (strict mode has no oneOf)"})
		}
	}
	if f, ok := out["format"].(string); ok && !strictFormats[f] {
		delete(out, "format")
		prose = append(prose, "in "+f+" format")
		*notes = append(*notes, Note{Path: path + "/format", Lossy: true, What: "removed format " + f + " (not supported in strict mode)"})
	}
	var dropped []string
	for _, k := range strictDrop {
		if _, ok := out[k]; ok {
			dropped = append(dropped, k)
		}
	}
	if len(dropped) > 0 {
		sub := map[string]any{}
		for _, k := range dropped {
			sub[k] = out[k]
			delete(out, k)
		}
		d := describe(sub, "")
		if d != "" {
			prose = append(prose, d)
		}
		*notes = append(*notes, Note{Path: path, Lossy: true, What: "removed " + strings.Join(dropped, ", ") + " (not supported in strict mode); described: " + d})
	}
	if _, ok := out["prefixItems"]; ok {
		return nil, fmt.Errorf("%w: %s is a tuple (prefixItems)", ErrNotStrict, orRoot(path))
	}
	if _, ok := out["items"].([]any); ok {
		return nil, fmt.Errorf("%w: %s is a tuple (array-form items)", ErrNotStrict, orRoot(path))
	}
	if list, ok := out["anyOf"].([]any); ok {
		nl := make([]any, len(list))
		for i, b := range list {
			sb, err := strictify(b, fmt.Sprintf("%s/anyOf/%d", path, i), notes)
			if err != nil {
				return nil, err
			}
			nl[i] = sb
		}
		out["anyOf"] = nl
	}
	if it, ok := out["items"]; ok {
		si, err := strictify(it, path+"/items", notes)
		if err != nil {
			return nil, err
		}
		out["items"] = si
	}
	if isObject(out) {
		if err := strictObject(out, path, notes); err != nil {
			return nil, err
		}
	}
	_, hasType := out["type"]
	_, hasAny := out["anyOf"]
	_, hasEnum := out["enum"]
	_, hasConst := out["const"]
	if !hasType && !hasAny && !hasEnum && !hasConst {
		return nil, fmt.Errorf("%w: %s accepts a value of any type", ErrNotStrict, orRoot(path))
	}
	if len(prose) > 0 {
		appendDescription(out, "Also: "+strings.Join(prose, "; ")+".")
	}
	if len(words) > 0 {
		appendDescription(out, capitalize(strings.Join(words, "; "))+".")
	}
	return out, nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// disjoint reports branches no value can match twice: each has one JSON
// type and no two share it (integer and number overlap), or each has a
// const and no two are equal.
func disjoint(branches []any) bool {
	if len(branches) < 2 {
		return true
	}
	types := map[string]bool{}
	byType := true
	var consts []any
	byConst := true
	for _, b := range branches {
		m, ok := b.(map[string]any)
		if !ok {
			return false
		}
		t, ok := m["type"].(string)
		if !ok || types[t] || (t == "integer" && types["number"]) || (t == "number" && types["integer"]) {
			byType = false
		}
		types[t] = true
		c, ok := m["const"]
		if !ok {
			byConst = false
		}
		for _, o := range consts {
			if jsonEqual(o, c) {
				byConst = false
			}
		}
		consts = append(consts, c)
	}
	return byType || byConst
}

func isObject(m map[string]any) bool {
	if _, ok := m["properties"]; ok {
		return true
	}
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, e := range t {
			if e == "object" {
				return true
			}
		}
	}
	return false
}

func strictObject(out map[string]any, path string, notes *[]Note) error {
	props, _ := out["properties"].(map[string]any)
	if ap, ok := out["additionalProperties"]; ok && ap != false {
		if len(props) == 0 {
			return fmt.Errorf("%w: %s is an open map (additionalProperties without named properties)", ErrNotStrict, orRoot(path))
		}
		*notes = append(*notes, Note{Path: path + "/additionalProperties", Lossy: true, What: "other fields not allowed (strict mode requires additionalProperties false)"})
	} else if !ok && len(props) == 0 && path != "" {
		return fmt.Errorf("%w: %s is an object of any shape", ErrNotStrict, orRoot(path))
	}
	if _, ok := out["type"]; !ok {
		out["type"] = "object"
	}
	if _, had := out["additionalProperties"]; !had {
		*notes = append(*notes, Note{Path: path, Rewrite: true, What: `added "additionalProperties": false (strict mode)`})
	}
	out["additionalProperties"] = false
	required := map[string]bool{}
	for _, r := range strs(out["required"]) {
		required[r] = true
	}
	np := make(map[string]any, len(props))
	names := sortedKeys(props)
	var optional []string
	for _, name := range names {
		p := path + "/properties/" + escape(name)
		sp, err := strictify(props[name], p, notes)
		if err != nil {
			return err
		}
		if !required[name] {
			sp = nullable(sp)
			optional = append(optional, name)
		}
		np[name] = sp
	}
	if len(optional) > 0 {
		*notes = append(*notes, Note{Path: path + "/required", Rewrite: true, What: "optional " + strings.Join(optional, ", ") + " listed as required with a null type union (strict mode); null means absent"})
	}
	out["properties"] = np
	req := make([]any, len(names))
	for i, n := range names {
		req[i] = n
	}
	out["required"] = req
	return nil
}

// nullable widens a strict schema to also accept null.
func nullable(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if acceptsNull(m) {
		return m
	}
	if _, ok := m["$ref"]; ok {
		return map[string]any{"anyOf": []any{m, map[string]any{"type": "null"}}}
	}
	if list, ok := m["anyOf"].([]any); ok {
		out := copyMap(m)
		out["anyOf"] = append(append([]any(nil), list...), map[string]any{"type": "null"})
		return out
	}
	out := copyMap(m)
	switch t := m["type"].(type) {
	case string:
		out["type"] = []any{t, "null"}
	case []any:
		out["type"] = append(append([]any(nil), t...), "null")
	default:
		return map[string]any{"anyOf": []any{m, map[string]any{"type": "null"}}}
	}
	if e, ok := m["enum"].([]any); ok {
		out["enum"] = append(append([]any(nil), e...), nil)
	}
	if c, ok := m["const"]; ok {
		delete(out, "const")
		out["enum"] = []any{c, nil}
	}
	return out
}

func acceptsNull(m map[string]any) bool {
	switch t := m["type"].(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		for _, e := range t {
			if e == "null" {
				return true
			}
		}
	}
	if list, ok := m["anyOf"].([]any); ok {
		for _, b := range list {
			if bm, ok := b.(map[string]any); ok && acceptsNull(bm) {
				return true
			}
		}
	}
	return false
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func orRoot(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// RestoreOptional undoes the null union [ForOpenAIStrict] adds: it removes
// from args every property whose value is null where the full schema does
// not require it and does not accept null, recursing into nested objects
// (properties, items, local $refs, and anyOf/oneOf branches, where a null
// that no branch listing the property requires or accepts is removed).
// args is the model's arguments object;
// the result is what to validate and run. Values the schema does not
// describe are left alone. An args value that is not a JSON object is
// returned unchanged, for the validator to reject.
func RestoreOptional(schema, args json.RawMessage) (json.RawMessage, error) {
	doc, err := decode(schema)
	if err != nil {
		return nil, err
	}
	in, err := decode(args)
	if err != nil {
		return args, nil
	}
	if !restore(doc, doc, in, 0) {
		return args, nil
	}
	return encode(in)
}

func restore(doc map[string]any, s any, v any, depth int) bool {
	m, ok := s.(map[string]any)
	if !ok || depth > 64 {
		return false
	}
	if ref, ok := m["$ref"].(string); ok {
		if t, ok := resolve(doc, ref); ok {
			changed := restore(doc, t, v, depth+1)
			rest := copyMap(m)
			delete(rest, "$ref")
			return restore(doc, rest, v, depth+1) || changed
		}
	}
	changed := false
	for _, b := range listOf(m["allOf"]) {
		if restore(doc, b, v, depth+1) {
			changed = true
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if restoreBranches(doc, listOf(m[k]), v, depth) {
			changed = true
		}
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		required := map[string]bool{}
		for _, r := range strs(m["required"]) {
			required[r] = true
		}
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, described := props[k]
			if !described {
				continue
			}
			if val[k] == nil {
				pm, _ := asMap(ps)
				if !required[k] && (pm == nil || !schemaAcceptsNull(doc, pm, 0)) {
					delete(val, k)
					changed = true
				}
				continue
			}
			if restore(doc, ps, val[k], depth+1) {
				changed = true
			}
		}
	case []any:
		if it, ok := m["items"]; ok {
			for _, e := range val {
				if restore(doc, it, e, depth+1) {
					changed = true
				}
			}
		}
	}
	return changed
}

// restoreBranches undoes strict mode's nulls in an object value matched
// against anyOf/oneOf branches (each branch was made strict on its own): a
// null property is removed when no branch that lists it requires it or
// accepts null, and a non-null one is restored against the branch that
// lists it when exactly one does.
func restoreBranches(doc map[string]any, branches []any, v any, depth int) bool {
	val, ok := v.(map[string]any)
	if !ok || len(branches) == 0 {
		return false
	}
	changed := false
	for _, k := range sortedKeys(val) {
		var listing []any
		keep := false
		for _, b := range branches {
			bm, _ := b.(map[string]any)
			if ref, ok := bm["$ref"].(string); ok {
				if t, ok := resolve(doc, ref); ok {
					bm, _ = t.(map[string]any)
				}
			}
			props, _ := bm["properties"].(map[string]any)
			ps, described := props[k]
			if !described {
				continue
			}
			listing = append(listing, ps)
			for _, r := range strs(bm["required"]) {
				if r == k {
					keep = true
				}
			}
			if pm, ok := asMap(ps); !ok || schemaAcceptsNull(doc, pm, 0) {
				keep = true
			}
		}
		switch {
		case val[k] == nil && len(listing) > 0 && !keep:
			delete(val, k)
			changed = true
		case val[k] != nil && len(listing) == 1:
			if restore(doc, listing[0], val[k], depth+1) {
				changed = true
			}
		}
	}
	return changed
}

func schemaAcceptsNull(doc, m map[string]any, depth int) bool {
	if depth > 64 {
		return false
	}
	if len(m) == 0 || acceptsNull(m) {
		return true
	}
	if ref, ok := m["$ref"].(string); ok {
		if t, ok := resolve(doc, ref); ok {
			if tm, ok := asMap(t); ok && schemaAcceptsNull(doc, tm, depth+1) {
				return true
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		for _, b := range listOf(m[k]) {
			if bm, ok := asMap(b); ok && schemaAcceptsNull(doc, bm, depth+1) {
				return true
			}
		}
	}
	for _, e := range listOf(m["enum"]) {
		if e == nil {
			return true
		}
	}
	if c, ok := m["const"]; ok && c == nil {
		return true
	}
	return false
}
