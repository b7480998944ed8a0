package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// DefaultMaxSchemaDepth is the default of [CheckOptions.MaxDepth]: the
// deepest nesting of JSON objects and arrays an input schema may have, the
// top-level object counting as level 1. Real tool schemas stay far below it
// (a property of a property of an array item is level 7); a schema nested
// 500 levels deep takes the schema compiler seconds, 2,000 levels minutes.
const DefaultMaxSchemaDepth = 128

// CheckOptions bound [CheckSchema] and [CompileWith]. A nil *CheckOptions
// means the defaults.
type CheckOptions struct {
	// MaxDepth is the deepest nesting of JSON objects and arrays allowed,
	// in levels (the top-level object is level 1). Default
	// [DefaultMaxSchemaDepth].
	MaxDepth int
}

func (o *CheckOptions) maxDepth() int {
	if o == nil || o.MaxDepth <= 0 {
		return DefaultMaxSchemaDepth
	}
	return o.MaxDepth
}

// CheckSchema checks a decoded JSON Schema (the generic form encoding/json
// gives: map[string]any, []any, string, float64 or json.Number, bool, nil)
// for use as a tool input schema without compiling it, in time linear in
// its size. It is the check [Define] relies on when [Spec.CompileOnUse] is
// set; the full meta-schema check then happens at the first use.
//
// It fails, returning the keyword or location at fault and the reason,
// when the schema:
//   - is nested deeper than opts.MaxDepth ("depth");
//   - is not a JSON object, or its top level is not "type": "object"
//     ("inputSchema", "type");
//   - has a $ref that is not local, does not resolve inside the schema, or
//     is part of a reference cycle that applies to the same value forever
//     ("$ref"): {"$ref": "#"} at the top, a $ref to itself, or $defs that
//     refer to each other through $ref, allOf, anyOf, oneOf, not or
//     if/then/else only (JSON Schema 2020-12 §9.4.1 leaves such a schema's
//     behaviour undefined; the compiler reports it at every call that
//     reaches it). A recursive schema that recurses through properties,
//     items or another keyword that moves to a part of the value (a tree
//     type in $defs) is legal and passes;
//   - has a keyword value of a shape no draft allows: properties,
//     patternProperties or $defs that is not an object of schemas, allOf,
//     anyOf or oneOf that is not an array of schemas, required that is not
//     an array of strings, a type name outside the seven JSON Schema types,
//     a length, count or bound that is not a number (the location, e.g.
//     "/properties/required" for BH-037).
//
// A schema using what this check does not model (a nested $id, which
// moves the base of references, $dynamicRef, $recursiveRef, or a $schema
// other than drafts 04, 06, 07, 2019-09 and 2020-12) is compiled instead,
// so the answer is always as strict as this or stricter.
func CheckSchema(v any, opts *CheckOptions) (keyword string, err error) {
	c, keyword, err := check(v, opts)
	if err != nil || !c.exotic {
		return keyword, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "inputSchema", fmt.Errorf("cannot be encoded: %w", err)
	}
	_, keyword, err = compileChecked(raw, nil)
	return keyword, err
}

// CheckDepth is the first step of [CheckSchema] on its own: it fails when
// v, a decoded JSON value, nests JSON objects and arrays deeper than
// opts.MaxDepth levels. It walks no deeper than that, so it is safe on any
// value; callers that transform a schema before checking it run it first.
func CheckDepth(v any, opts *CheckOptions) error {
	max := opts.maxDepth()
	if rev, deep := tooDeep(v, 1, max); deep {
		slices.Reverse(rev)
		loc := ""
		if len(rev) > 0 {
			loc = "/" + strings.Join(rev, "/")
		}
		return depthError(max, loc)
	}
	return nil
}

func depthError(max int, loc string) error {
	return fmt.Errorf("nested deeper than %d levels of JSON objects and arrays (at %s)", max, clipLoc(loc))
}

// checker holds one CheckSchema pass.
type checker struct {
	root    map[string]any
	draft   int             // 4, 6, 7, 2019 or 2020
	exotic  bool            // uses what only the compiler judges
	anchors map[string]any  // $anchor (or draft-07 "$id": "#name") -> schema
	refs    []refSite       // every $ref met, in walk order
	locs    map[node]string // schema object -> its location, as walked
}

type refSite struct {
	from   map[string]any
	ref    string
	loc    string // location of the schema holding the $ref
	target any    // resolved: map[string]any or bool
}

// node identifies one decoded JSON object: maps are references, so the
// same object reached two ways is one node.
type node unsafe.Pointer

func nodeOf(m map[string]any) node { return node(reflect.ValueOf(m).UnsafePointer()) }

// check runs the structural check; exotic reports that the compiler must
// judge the rest.
func check(v any, opts *CheckOptions) (*checker, string, error) {
	if err := CheckDepth(v, opts); err != nil {
		return nil, "depth", err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, "inputSchema", errors.New("must be a JSON object")
	}
	switch typ := root["type"].(type) {
	case string:
		if typ != "object" {
			return nil, "type", fmt.Errorf(`top level must be "type": "object", got %q`, typ)
		}
	case nil:
		return nil, "type", errors.New(`top level must be "type": "object" (missing)`)
	default:
		b, _ := json.Marshal(typ)
		return nil, "type", fmt.Errorf(`top level must be "type": "object", got %s`, b)
	}
	ref, hasRefs := scanRefs(root, false)
	if ref != "" {
		return nil, "$ref", fmt.Errorf("%q is not local; only references inside the schema (#/$defs/...) resolve without network access", ref)
	}
	c := &checker{root: root, draft: 2020, anchors: map[string]any{}}
	if hasRefs {
		c.locs = map[node]string{}
	}
	if s, has := root["$schema"]; has {
		str, _ := s.(string)
		if c.draft = draftOf(str); c.draft == 0 {
			c.exotic = true
			return c, "", nil
		}
	}
	if loc, msg := c.walk(root, nil); msg != "" {
		return nil, orTop(loc), errors.New("not a valid JSON Schema: at " + orTop(loc) + ": " + msg)
	}
	if c.exotic {
		return c, "", nil
	}
	slices.SortStableFunc(c.refs, func(a, b refSite) int { return strings.Compare(a.loc, b.loc) })
	for i := range c.refs {
		r := &c.refs[i]
		if t, ok := c.resolve(r.ref); ok {
			r.target = t
		}
	}
	// Only what validation can reach counts, as for the compiler: a
	// reference in a definition nothing uses is never followed.
	reach := c.reachable()
	for _, r := range c.refs {
		if !reach[nodeOf(r.from)] {
			continue
		}
		if r.target == nil {
			return nil, "$ref", fmt.Errorf("reference %s does not resolve inside the schema (at %s)", r.ref, orTop(r.loc))
		}
		if tm, ok := r.target.(map[string]any); ok {
			if _, walked := c.locs[nodeOf(tm)]; !walked {
				// A reference into what is not a schema keyword here
				// ("#/properties", draft-07 "$defs"): the compiler judges.
				c.exotic = true
				return c, "", nil
			}
		}
	}
	if cycle := c.cycle(reach); cycle != "" {
		return nil, "$ref", fmt.Errorf("$ref cycle %s: these schemas apply to the same value again and again, so no value can be validated; "+
			"a recursive schema must recurse through properties or items", cycle)
	}
	return c, "", nil
}

// reachable is the set of schema objects validation can reach from the
// root: through every subschema keyword but $defs and definitions, and
// through resolved references.
func (c *checker) reachable() map[node]bool {
	targets := map[node]any{}
	for _, r := range c.refs {
		if r.target != nil {
			targets[nodeOf(r.from)] = r.target
		}
	}
	seen := map[node]bool{}
	stack := []any{c.root}
	push := func(v any) {
		if m, ok := v.(map[string]any); ok && !seen[nodeOf(m)] {
			stack = append(stack, m)
		}
	}
	for len(stack) > 0 {
		m, _ := stack[len(stack)-1].(map[string]any)
		stack = stack[:len(stack)-1]
		if m == nil || seen[nodeOf(m)] {
			continue
		}
		seen[nodeOf(m)] = true
		if t, ok := targets[nodeOf(m)]; ok {
			push(t)
		}
		for k, x := range m {
			switch k {
			case "properties", "patternProperties", "dependencies", "dependentSchemas":
				if k == "dependentSchemas" && c.draft <= 7 {
					continue
				}
				if sub, ok := x.(map[string]any); ok {
					for _, v := range sub {
						push(v)
					}
				}
			case "allOf", "anyOf", "oneOf", "prefixItems", "items":
				if arr, ok := x.([]any); ok {
					for _, v := range arr {
						push(v)
					}
				} else {
					push(x)
				}
			default:
				if d, ok := singleSubschema[k]; ok && c.draft >= d {
					push(x)
				}
			}
		}
	}
	return seen
}

// tooDeep reports whether v nests deeper than max, walking no deeper than
// max+1, and if so the path to the first place that does, innermost
// segment first (built only on the way out of a failure).
func tooDeep(v any, depth, max int) ([]string, bool) {
	switch v := v.(type) {
	case map[string]any:
		if depth > max {
			return nil, true
		}
		for k, sub := range v {
			if p, deep := tooDeep(sub, depth+1, max); deep {
				return append(p, escapeToken(k)), true
			}
		}
	case []any:
		if depth > max {
			return nil, true
		}
		for i, sub := range v {
			if p, deep := tooDeep(sub, depth+1, max); deep {
				return append(p, strconv.Itoa(i)), true
			}
		}
	}
	return nil, false
}

// clipLoc shortens a deep location to its first and last segments.
func clipLoc(loc string) string {
	parts := strings.Split(loc, "/")
	if len(parts) <= 12 {
		return orTop(loc)
	}
	return strings.Join(parts[:6], "/") + "/…/" + strings.Join(parts[len(parts)-5:], "/")
}

func orTop(loc string) string {
	if loc == "" {
		return "/"
	}
	return loc
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// draftOf maps a $schema URL to a draft; 0 when it is none we model.
func draftOf(u string) int {
	u = strings.TrimSuffix(u, "#")
	if rest, ok := strings.CutPrefix(u, "http://"); ok {
		u = rest
	} else {
		u = strings.TrimPrefix(u, "https://")
	}
	switch u {
	case "json-schema.org/schema", "json-schema.org/draft/2020-12/schema":
		return 2020
	case "json-schema.org/draft/2019-09/schema":
		return 2019
	case "json-schema.org/draft-07/schema":
		return 7
	case "json-schema.org/draft-06/schema":
		return 6
	case "json-schema.org/draft-04/schema":
		return 4
	}
	return 0
}

var typeNames = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// fault is the first problem found, by location: walks keep the one whose
// location sorts first, so the answer does not depend on map order.
type fault struct{ loc, msg string }

func (f *fault) add(loc, msg string) {
	if msg != "" && (f.msg == "" || loc < f.loc) {
		f.loc, f.msg = loc, msg
	}
}

// walk checks one schema (a JSON object or boolean) at p and the
// subschemas under it. It returns the location and reason of the fault
// whose location sorts first, or msg "".
func (c *checker) walk(v any, p *wpath) (string, string) {
	var m map[string]any
	switch v := v.(type) {
	case bool:
		return "", ""
	case map[string]any:
		m = v
	default:
		return p.String(), "a schema must be an object or a boolean, got " + jsonKindOf(v)
	}
	if c.locs != nil {
		if _, seen := c.locs[nodeOf(m)]; !seen {
			c.locs[nodeOf(m)] = p.String()
		}
	}
	var f fault
	at := func(k string) string { return p.String() + "/" + escapeToken(k) }
	idKey := "$id"
	if c.draft == 4 {
		idKey = "id"
	}
	for k, x := range m {
		switch k {
		case "$dynamicRef", "$recursiveRef", "$dynamicAnchor", "$recursiveAnchor":
			c.exotic = true
		case idKey:
			if id, ok := x.(string); ok {
				switch {
				case strings.HasPrefix(id, "#") && c.draft <= 7:
					c.anchors[strings.TrimPrefix(id, "#")] = m
				case p != nil:
					c.exotic = true // a nested base URI: the compiler resolves against it
				}
			}
		case "$anchor":
			if a, ok := x.(string); ok && c.draft >= 2019 {
				c.anchors[a] = m
			}
		case "$ref":
			s, ok := x.(string)
			if !ok {
				f.add(at(k), "$ref must be a string, got "+jsonKindOf(x))
				continue
			}
			c.refs = append(c.refs, refSite{from: m, ref: s, loc: p.String()})
		case "type":
			if msg := checkType(x); msg != "" {
				f.add(at(k), msg)
			}
		case "required":
			arr, ok := x.([]any)
			if !ok {
				f.add(at(k), "required must be an array of property names, got "+jsonKindOf(x))
				continue
			}
			for i, e := range arr {
				if _, ok := e.(string); !ok {
					f.add(at(k)+"/"+strconv.Itoa(i), "required must hold property names (strings), got "+jsonKindOf(e))
					break
				}
			}
		case "enum":
			if _, ok := x.([]any); !ok {
				f.add(at(k), "enum must be an array, got "+jsonKindOf(x))
			}
		case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
			"minimum", "maximum", "multipleOf": // numbers in every draft
			if !isNumber(x) {
				f.add(at(k), k+" must be a number, got "+jsonKindOf(x))
			}
		case "title", "description", "pattern", "format": // strings in every draft
			if _, ok := x.(string); !ok {
				f.add(at(k), k+" must be a string, got "+jsonKindOf(x))
			}
		case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies":
			// Maps of named subschemas. $defs and dependentSchemas are
			// keywords from draft 2019-09 on; before, they are data the
			// compiler looks into only when a $ref points there (then the
			// compiler judges: see check).
			if (k == "$defs" || k == "dependentSchemas") && c.draft <= 7 {
				continue
			}
			sub, ok := x.(map[string]any)
			if !ok {
				f.add(at(k), k+" must be an object of schemas, got "+jsonKindOf(x))
				continue
			}
			kp := wpath{p, k}
			for name, s := range sub {
				if _, isArr := s.([]any); isArr && k == "dependencies" {
					continue // property dependencies: names, not a schema
				}
				np := wpath{&kp, escapeToken(name)}
				f.add(c.walk(s, &np))
			}
		case "allOf", "anyOf", "oneOf", "prefixItems":
			if k == "prefixItems" && c.draft < 2020 {
				continue
			}
			arr, ok := x.([]any)
			if !ok {
				f.add(at(k), k+" must be an array of schemas, got "+jsonKindOf(x))
				continue
			}
			kp := wpath{p, k}
			for i, s := range arr {
				np := wpath{&kp, strconv.Itoa(i)}
				f.add(c.walk(s, &np))
			}
		case "items":
			kp := wpath{p, k}
			if arr, ok := x.([]any); ok {
				for i, s := range arr {
					np := wpath{&kp, strconv.Itoa(i)}
					f.add(c.walk(s, &np))
				}
				continue
			}
			f.add(c.walk(x, &kp))
		default:
			// Single subschemas, each from the draft that made it a keyword.
			if d, ok := singleSubschema[k]; ok && c.draft >= d && !(k == "additionalItems" && c.draft >= 2020) {
				kp := wpath{p, k}
				f.add(c.walk(x, &kp))
			}
		}
	}
	return f.loc, f.msg
}

// singleSubschema maps each keyword whose value is one schema to the
// draft that introduced it.
var singleSubschema = map[string]int{"not": 4, "additionalProperties": 4, "additionalItems": 4,
	"propertyNames": 6, "contains": 6, "if": 7, "then": 7, "else": 7,
	"unevaluatedProperties": 2019, "unevaluatedItems": 2019, "contentSchema": 2019}

// wpath is a schema location built only when needed: each step of the
// walk adds a segment on the stack.
type wpath struct {
	parent *wpath
	seg    string
}

// String renders the location as a JSON pointer ("" for the root).
func (p *wpath) String() string {
	var segs []string
	for q := p; q != nil; q = q.parent {
		segs = append(segs, q.seg)
	}
	if len(segs) == 0 {
		return ""
	}
	slices.Reverse(segs)
	return "/" + strings.Join(segs, "/")
}

func checkType(t any) string {
	switch t := t.(type) {
	case string:
		if !slices.Contains(typeNames, t) {
			return fmt.Sprintf("type %q is not one of %s", t, strings.Join(typeNames, ", "))
		}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return "type must list type names (strings), got " + jsonKindOf(e)
			}
			if !slices.Contains(typeNames, s) {
				return fmt.Sprintf("type %q is not one of %s", s, strings.Join(typeNames, ", "))
			}
		}
	default:
		return "type must be a type name or an array of them, got " + jsonKindOf(t)
	}
	return ""
}

func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

func isNumber(v any) bool {
	switch v.(type) {
	case float64, float32, json.Number, int, int64:
		return true
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// resolve finds a local reference: "#" (the root), "#/json/pointer"
// (percent-decoded, then ~1 and ~0), or "#name" (an anchor). The target
// must be a schema (an object or a boolean).
func (c *checker) resolve(ref string) (any, bool) {
	if ref == "" {
		return c.root, true // the document itself, as "#"
	}
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		t, ok := c.anchors[frag]
		return t, ok
	}
	var cur any = c.root
	if frag == "" {
		return cur, true
	}
	for _, part := range strings.Split(frag[1:], "/") {
		if p, err := url.PathUnescape(part); err == nil {
			part = p
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[part]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, isSchema(cur)
}

// inPlace lists the schemas that apply to the same value as m: its $ref
// target and its allOf, anyOf, oneOf, not, if/then/else and dependent
// schemas. In drafts before 2019-09 a $ref replaces its siblings.
func (c *checker) inPlace(m map[string]any, target func(map[string]any) (any, bool)) []any {
	var out []any
	if t, has := target(m); has {
		out = append(out, t)
		if c.draft <= 7 {
			return out
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if arr, ok := m[k].([]any); ok {
			out = append(out, arr...)
		}
	}
	for _, k := range []string{"not", "if", "then", "else"} {
		if s, ok := m[k]; ok {
			out = append(out, s)
		}
	}
	for _, dep := range []string{"dependentSchemas", "dependencies"} {
		if dep == "dependentSchemas" && c.draft <= 7 {
			continue
		}
		if sub, ok := m[dep].(map[string]any); ok {
			for _, name := range sortedKeys(sub) {
				out = append(out, sub[name])
			}
		}
	}
	return out
}

// cycle finds a chain of schemas that apply to the same value and lead
// back to where they started through a $ref; it returns the chain as
// locations joined by " -> ", or "".
func (c *checker) cycle(reach map[node]bool) string {
	targets := map[node]any{}
	for _, r := range c.refs {
		if r.target != nil {
			targets[nodeOf(r.from)] = r.target
		}
	}
	target := func(m map[string]any) (any, bool) {
		t, ok := targets[nodeOf(m)]
		return t, ok
	}
	const (
		white = iota
		grey
		black
	)
	color := map[node]int{}
	var path []map[string]any
	var found []map[string]any
	var visit func(m map[string]any) bool
	visit = func(m map[string]any) bool {
		n := nodeOf(m)
		switch color[n] {
		case grey:
			for i := range path {
				if nodeOf(path[i]) == n {
					found = append(slices.Clone(path[i:]), m)
					return true
				}
			}
		case black:
			return false
		}
		color[n] = grey
		path = append(path, m)
		for _, s := range c.inPlace(m, target) {
			if sm, ok := s.(map[string]any); ok && visit(sm) {
				return true
			}
		}
		path = path[:len(path)-1]
		color[n] = black
		return false
	}
	for _, r := range c.refs {
		if reach[nodeOf(r.from)] && visit(r.from) {
			break
		}
	}
	if found == nil {
		return ""
	}
	parts := make([]string, len(found))
	for i, m := range found {
		loc, ok := c.locs[nodeOf(m)]
		if !ok {
			loc = "(a $ref target)"
		}
		parts[i] = "#" + loc
	}
	return strings.Join(parts, " -> ")
}

func jsonKindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, float32, json.Number, int, int64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
