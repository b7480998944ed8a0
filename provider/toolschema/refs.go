package toolschema

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// maxInlined bounds how many schema nodes inlining may copy; past it, the
// remaining references are kept under $defs instead of being expanded (a
// diamond of references would otherwise grow exponentially).
const maxInlined = 20000

// inliner expands local $refs of one document.
type inliner struct {
	doc       map[string]any
	recursive map[string]bool   // ref -> part of a reference cycle
	names     map[string]string // ref -> name under the output $defs
	defs      map[string]any    // name -> projected definition
	stack     []string          // refs being inlined, outermost first
	budget    int
	inlined   int
	kept      int
	// cut > 0: no $defs in the output; a recursive reference is expanded
	// until it is nested cut times inside itself, then replaced by a
	// described stub (Gemini, which resolves no $ref).
	cut  int
	cuts map[string]int // ref -> stubs emitted
}

// inlineRefs returns doc with every non-recursive local $ref replaced by a
// copy of its target (siblings merged in, or joined with allOf where they
// conflict) and every recursive one rewritten to "#/$defs/<name>", with the
// definitions it needs under the root $defs. Source $defs/definitions are
// dropped everywhere once their references are resolved.
func inlineRefs(doc map[string]any, notes *[]Note) (map[string]any, error) {
	return inlineRefsCut(doc, 0, notes)
}

// inlineRefsCut is inlineRefs; with cut > 0 every reference is expanded,
// a recursive one until it is nested cut times inside itself, and the
// output has no $ref and no $defs (each cut is a Lossy note).
func inlineRefsCut(doc map[string]any, cut int, notes *[]Note) (map[string]any, error) {
	in := &inliner{
		doc: doc, recursive: map[string]bool{}, names: map[string]string{},
		defs: map[string]any{}, budget: maxInlined, cut: cut, cuts: map[string]int{},
	}
	for _, r := range refsIn(doc) {
		if _, ok := resolve(doc, r); !ok {
			return nil, fmt.Errorf("%w: $ref %q does not resolve inside the schema", ErrSchema, r)
		}
	}
	hadDefs := doc["$defs"] != nil || doc["definitions"] != nil
	out, err := in.node(doc, "")
	if err != nil {
		return nil, err
	}
	root := out.(map[string]any)
	if len(in.defs) > 0 {
		root["$defs"] = in.defs
	}
	for _, r := range sortedKeys(in.cuts) {
		*notes = append(*notes, Note{Lossy: true, What: fmt.Sprintf("recursive $ref %q cut off at nesting depth %d (%d place(s)); described there", r, in.cut, in.cuts[r])})
	}
	switch {
	case in.inlined > 0 && in.kept > 0:
		*notes = append(*notes, Note{What: fmt.Sprintf("inlined %d $ref(s); kept %d recursive or repeated definition(s) under $defs", in.inlined, len(in.defs))})
	case in.inlined > 0:
		*notes = append(*notes, Note{What: fmt.Sprintf("inlined %d $ref(s) into place", in.inlined)})
	case in.kept > 0:
		*notes = append(*notes, Note{What: fmt.Sprintf("kept %d recursive definition(s) under $defs", len(in.defs))})
	case hadDefs:
		*notes = append(*notes, Note{What: "dropped $defs/definitions that no $ref uses"})
	}
	return root, nil
}

var skipDefs = map[string]bool{"$defs": true, "definitions": true}

// expand inlines the target of ref (the document's node at that
// pointer), with ref on the stack while it is walked so a cycle back to
// it is seen, and counts it as inlined.
func (in *inliner) expand(ref, path string) (map[string]any, error) {
	target, _ := resolve(in.doc, ref)
	in.stack = append(in.stack, ref)
	expanded, err := in.node(target, path)
	in.stack = in.stack[:len(in.stack)-1]
	if err != nil {
		return nil, err
	}
	in.inlined++
	em, _ := asMap(expanded)
	return em, nil
}

func (in *inliner) node(v any, path string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	in.budget--
	ref, hasRef := m["$ref"].(string)
	out, err := walk(m, path, skipDefs, in.node)
	if err != nil || !hasRef {
		return out, err
	}
	delete(out, "$ref")
	if in.cut > 0 {
		return in.expandOrCut(ref, out, path)
	}
	if ref == "#" {
		// The root itself: it is the root of the output too.
		out["$ref"] = "#"
		in.kept++
		return out, nil
	}
	if in.isRecursive(ref) || in.budget <= 0 || in.onStack(ref) {
		name, err := in.define(ref)
		if err != nil {
			return nil, err
		}
		out["$ref"] = "#/$defs/" + escape(name)
		in.kept++
		return out, nil
	}
	em, err := in.expand(ref, path)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return em, nil
	}
	if merged, ok := merge(em, out); ok {
		return merged, nil
	}
	// Siblings that constrain differently from the target: both must hold.
	return map[string]any{"allOf": []any{em, out}}, nil
}

// expandOrCut inlines ref's target in place (siblings in out), or, when
// ref is already nested in.cut times on the stack or the budget is spent,
// puts a stub there that says what was cut.
func (in *inliner) expandOrCut(ref string, out map[string]any, path string) (any, error) {
	depth := 0
	for _, r := range in.stack {
		if r == ref {
			depth++
		}
	}
	if depth >= in.cut || in.budget <= 0 {
		in.cuts[ref]++
		name := strings.TrimPrefix(ref, "#")
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		if name == "" {
			name = "the whole input"
		}
		stub := map[string]any{}
		for k, v := range out {
			if annotations[k] {
				stub[k] = v
			}
		}
		appendDescription(stub, fmt.Sprintf("Same shape as %s (nested deeper than %d levels; not spelled out here).", name, in.cut))
		return stub, nil
	}
	em, err := in.expand(ref, path)
	if err != nil {
		return nil, err
	}
	if _, isRoot := em["$defs"]; isRoot || ref == "#" {
		em = copyMap(em)
		delete(em, "$defs")
		delete(em, "$schema")
		delete(em, "$id")
	}
	if len(out) == 0 {
		return em, nil
	}
	if merged, ok := merge(em, out); ok {
		return merged, nil
	}
	return map[string]any{"allOf": []any{em, out}}, nil
}

func (in *inliner) onStack(ref string) bool {
	for _, r := range in.stack {
		if r == ref {
			return true
		}
	}
	return false
}

// isRecursive reports whether ref's target reaches ref again through
// references.
func (in *inliner) isRecursive(ref string) bool {
	if r, ok := in.recursive[ref]; ok {
		return r
	}
	seen := map[string]bool{}
	var reaches func(r string) bool
	reaches = func(r string) bool {
		if seen[r] {
			return false
		}
		seen[r] = true
		target, ok := resolve(in.doc, r)
		if !ok {
			return false
		}
		for _, next := range refsIn(stripDefs(target)) {
			if next == ref || next == "#" || reaches(next) {
				return true
			}
		}
		return false
	}
	in.recursive[ref] = reaches(ref)
	return in.recursive[ref]
}

// stripDefs hides a map's own $defs/definitions from refsIn: references
// inside unused definitions do not make a schema recursive.
func stripDefs(v any) any {
	m, ok := v.(map[string]any)
	if !ok || (m["$defs"] == nil && m["definitions"] == nil) {
		return v
	}
	c := make(map[string]any, len(m))
	for k, x := range m {
		if !skipDefs[k] {
			c[k] = x
		}
	}
	return c
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// define builds (once) the output definition for ref and returns its name.
func (in *inliner) define(ref string) (string, error) {
	if name, ok := in.names[ref]; ok {
		return name, nil
	}
	base := strings.TrimPrefix(ref, "#")
	for _, p := range []string{"/$defs/", "/definitions/"} {
		if strings.HasPrefix(base, p) && !strings.Contains(base[len(p):], "/") {
			base = base[len(p):]
		}
	}
	base = strings.Trim(unsafeName.ReplaceAllString(strings.ReplaceAll(strings.ReplaceAll(base, "~1", "_"), "~0", "_"), "_"), "_")
	if base == "" {
		base = "def"
	}
	name := base
	for i := 2; in.defs[name] != nil; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	in.names[ref] = name
	in.defs[name] = map[string]any{} // placeholder while the body is built
	target, _ := resolve(in.doc, ref)
	in.stack = append(in.stack, ref)
	body, err := in.node(target, "/$defs/"+escape(name))
	in.stack = in.stack[:len(in.stack)-1]
	if err != nil {
		return "", err
	}
	in.defs[name] = body
	return name, nil
}

// simplify removes branches that match nothing from anyOf/oneOf, drops
// allOf branches that accept everything, and collapses a one-branch
// anyOf/oneOf/allOf into its parent when no keyword conflicts (case BH-038).
func simplify(v any, path string, notes *[]Note) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out, _ := walk(m, path, nil, func(sub any, p string) (any, error) {
		return simplify(sub, p, notes), nil
	})
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		list, ok := out[k].([]any)
		if !ok {
			continue
		}
		var kept []any
		removed := 0
		for _, b := range list {
			drop := (k != "allOf" && isImpossible(b)) || (k == "allOf" && isTrivial(b))
			if drop {
				removed++
				continue
			}
			kept = append(kept, b)
		}
		if removed > 0 && len(kept) > 0 {
			what := "removed %d branch(es) of %s that match nothing"
			if k == "allOf" {
				what = "removed %d branch(es) of %s that accept everything"
			}
			*notes = append(*notes, Note{Path: path + "/" + k, What: fmt.Sprintf(what, removed, k)})
		}
		if len(kept) == 0 {
			if k == "allOf" {
				delete(out, k)
			}
			continue // an anyOf of nothing stays: the property really is unusable
		}
		out[k] = kept
		if len(kept) == 1 {
			if bm, ok := asMap(kept[0]); ok {
				rest := make(map[string]any, len(out))
				for kk, vv := range out {
					if kk != k {
						rest[kk] = vv
					}
				}
				if merged, ok := merge(bm, rest); ok {
					*notes = append(*notes, Note{Path: path + "/" + k, What: "collapsed a one-branch " + k + " into its parent"})
					out = merged
				}
			}
		}
	}
	return out
}

// isTrivial reports a schema every value matches: true or {}.
func isTrivial(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case map[string]any:
		return len(v) == 0
	}
	return false
}
