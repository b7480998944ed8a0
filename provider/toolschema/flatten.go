package toolschema

import (
	"fmt"
	"strings"
)

// flattenRoot removes a top-level anyOf or oneOf (key k, branches list) the
// way no provider rejects it while the model still sees every field
// (issue 14: "top-level anyOf/oneOf flattened to an object whose fields
// the model can see"):
//
//   - the properties of every branch become root properties; a property
//     that branches describe differently becomes an anyOf of their
//     schemas, or one enum when every branch gives it a const
//     (a discriminator such as "kind");
//   - a name is required at the root only when every branch requires it;
//   - additionalProperties false is kept when every branch had it;
//   - a root property keeps the root's schema (both must hold).
//
// The result accepts every value the original accepts (it is looser), so
// the alternatives come back as one sentence for the description, e.g.
// "exactly one of these forms: (kind=file; path required) or (kind=url;
// url required)", and the note is Lossy: the full schema still validates
// the model's arguments at dispatch.
func flattenRoot(root map[string]any, k string, list []any, notes *[]Note) string {
	rp, _ := root["properties"].(map[string]any)
	if rp == nil {
		rp = map[string]any{}
	}
	variants := map[string][]any{}
	var order []string
	var words []string
	var requiredAll map[string]bool
	closedAll := len(list) > 0
	for _, b := range list {
		bm, ok := asMap(b)
		if !ok {
			continue
		}
		words = append(words, "("+branchWords(bm)+")")
		req := map[string]bool{}
		for _, r := range strs(bm["required"]) {
			req[r] = true
		}
		if requiredAll == nil {
			requiredAll = req
		} else {
			for r := range requiredAll {
				if !req[r] {
					delete(requiredAll, r)
				}
			}
		}
		if bm["additionalProperties"] != false {
			closedAll = false
		}
		bp, _ := bm["properties"].(map[string]any)
		for _, name := range sortedKeys(bp) {
			if _, inRoot := rp[name]; inRoot {
				continue
			}
			if _, seen := variants[name]; !seen {
				order = append(order, name)
			}
			dup := false
			for _, v := range variants[name] {
				if jsonEqual(v, bp[name]) {
					dup = true
					break
				}
			}
			if !dup {
				variants[name] = append(variants[name], bp[name])
			}
		}
	}
	for _, name := range order {
		rp[name] = joinVariants(variants[name])
	}
	if len(rp) > 0 {
		root["properties"] = rp
	}
	if len(requiredAll) > 0 {
		have := map[string]bool{}
		var all []any
		for _, r := range strs(root["required"]) {
			have[r] = true
			all = append(all, r)
		}
		for _, r := range sortedKeys(requiredAll) {
			if !have[r] {
				all = append(all, r)
			}
		}
		root["required"] = all
	}
	if _, set := root["additionalProperties"]; !set && closedAll && len(order) > 0 {
		root["additionalProperties"] = false
	}
	lead := "at least one of these forms: "
	if k == "oneOf" {
		lead = "exactly one of these forms: "
	}
	sentence := lead + strings.Join(words, " or ")
	what := "removed top-level " + k + " (not accepted at the top level)"
	if len(order) > 0 {
		what = fmt.Sprintf("flattened top-level %s: its branches' fields %s are root properties", k, strings.Join(order, ", "))
	}
	*notes = append(*notes, Note{Path: "/" + k, Lossy: true, What: what + "; described in the description: " + sentence})
	return sentence
}

// joinVariants is one schema for a property that branches describe as vs:
// the schema itself, an enum of the branches' consts, or an anyOf.
func joinVariants(vs []any) any {
	if len(vs) == 1 {
		return vs[0]
	}
	var enum []any
	var typ any
	for i, v := range vs {
		m, ok := v.(map[string]any)
		if !ok {
			enum = nil
			break
		}
		c, hasConst := m["const"]
		if !hasConst {
			enum = nil
			break
		}
		for key := range m {
			if key != "const" && key != "type" && !annotations[key] {
				hasConst = false
			}
		}
		if !hasConst || (i > 0 && !jsonEqual(m["type"], typ)) {
			enum = nil
			break
		}
		typ = m["type"]
		enum = append(enum, c)
	}
	if enum != nil {
		out := map[string]any{"enum": enum}
		if typ != nil {
			out["type"] = typ
		}
		return out
	}
	return map[string]any{"anyOf": append([]any(nil), vs...)}
}

// branchWords names one branch of a flattened combinator: its
// discriminator consts, its required fields, else the fields it lists,
// and any other constraint in plain language.
func branchWords(b map[string]any) string {
	var parts []string
	bp, _ := b["properties"].(map[string]any)
	consts := map[string]bool{}
	for _, name := range sortedKeys(bp) {
		if pm, ok := bp[name].(map[string]any); ok {
			if c, ok := pm["const"]; ok {
				parts = append(parts, name+"="+scalar(c))
				consts[name] = true
			}
		}
	}
	var req []string
	for _, r := range strs(b["required"]) {
		if !consts[r] {
			req = append(req, r)
		}
	}
	switch {
	case len(req) > 0:
		parts = append(parts, strings.Join(req, ", ")+requiredWord(len(req)))
	case len(bp) > len(consts):
		var names []string
		for _, n := range sortedKeys(bp) {
			if !consts[n] {
				names = append(names, n)
			}
		}
		parts = append(parts, "fields "+strings.Join(names, ", "))
	}
	rest := map[string]any{}
	for key, v := range b {
		switch key {
		case "properties", "required", "type", "additionalProperties", "title", "description", "$comment":
		default:
			rest[key] = v
		}
	}
	if len(rest) > 0 {
		parts = append(parts, describe(rest, ""))
	}
	if t, ok := b["type"].(string); ok && t != "object" {
		parts = append(parts, "is "+typeWords(t))
	}
	if len(parts) == 0 {
		return "any fields"
	}
	return strings.Join(parts, "; ")
}
