package toolschema

import (
	"encoding/json"
	"fmt"
	"strings"
)

// describe renders a schema's constraints as short plain language, e.g.
// "size ≤ 64 when mode=quick" for
// {"if":{"properties":{"mode":{"const":"quick"}}},"then":{"properties":{"size":{"maximum":64}}}}.
// field is the name of the value described ("" for the object itself).
func describe(v any, field string) string {
	m, ok := asMap(v)
	if !ok {
		return compact(v)
	}
	if isImpossible(m) {
		return "never allowed"
	}
	var parts []string
	name := func(s string) string {
		if field == "" {
			return s
		}
		return field + " " + s
	}
	subject := field
	if subject == "" {
		subject = "value"
	}
	for _, k := range sortedKeys(m) {
		x := m[k]
		switch k {
		case "description", "title", "$comment", "examples", "default", "$defs", "definitions", "then", "else":
		case "type":
			parts = append(parts, name("is "+typeWords(x)))
		case "const":
			if field == "" {
				parts = append(parts, "value="+scalar(x))
			} else {
				parts = append(parts, field+"="+scalar(x))
			}
		case "enum":
			parts = append(parts, name("is one of "+list(x)))
		case "minimum":
			parts = append(parts, subject+" ≥ "+scalar(x))
		case "maximum":
			parts = append(parts, subject+" ≤ "+scalar(x))
		case "exclusiveMinimum":
			parts = append(parts, subject+" > "+scalar(x))
		case "exclusiveMaximum":
			parts = append(parts, subject+" < "+scalar(x))
		case "multipleOf":
			parts = append(parts, subject+" is a multiple of "+scalar(x))
		case "minLength":
			parts = append(parts, "length of "+subject+" ≥ "+scalar(x))
		case "maxLength":
			parts = append(parts, "length of "+subject+" ≤ "+scalar(x))
		case "pattern":
			parts = append(parts, subject+" matches /"+fmt.Sprint(x)+"/")
		case "format":
			parts = append(parts, subject+" is in "+fmt.Sprint(x)+" format")
		case "minItems":
			parts = append(parts, subject+" has at least "+scalar(x)+" item(s)")
		case "maxItems":
			parts = append(parts, subject+" has at most "+scalar(x)+" item(s)")
		case "uniqueItems":
			if b, _ := x.(bool); b {
				parts = append(parts, "items of "+subject+" are unique")
			}
		case "minProperties":
			parts = append(parts, subject+" has at least "+scalar(x)+" field(s)")
		case "maxProperties":
			parts = append(parts, subject+" has at most "+scalar(x)+" field(s)")
		case "required":
			if names := strs(x); len(names) > 0 {
				parts = append(parts, prefixed(field, names)+requiredWord(len(names)))
			}
		case "dependentRequired":
			if dm, ok := x.(map[string]any); ok {
				for _, p := range sortedKeys(dm) {
					parts = append(parts, prefixed(field, strs(dm[p]))+requiredWord(len(strs(dm[p])))+" when "+prefixed(field, []string{p})+" is given")
				}
			}
		case "properties":
			if pm, ok := x.(map[string]any); ok {
				for _, p := range sortedKeys(pm) {
					if d := describe(pm[p], prefixed(field, []string{p})); d != "" {
						parts = append(parts, d)
					}
				}
			}
		case "additionalProperties":
			if b, ok := x.(bool); ok && !b {
				parts = append(parts, "no fields other than those listed")
			} else {
				parts = append(parts, "other fields: "+describe(x, ""))
			}
		case "items":
			parts = append(parts, "each item of "+subject+": "+describe(x, ""))
		case "contains":
			parts = append(parts, subject+" contains an item where "+describe(x, ""))
		case "not":
			parts = append(parts, "not ("+describe(x, field)+")")
		case "allOf":
			for _, b := range listOf(x) {
				if d := describe(b, field); d != "" {
					parts = append(parts, d)
				}
			}
		case "anyOf", "oneOf":
			var alts []string
			for _, b := range listOf(x) {
				alts = append(alts, "("+describe(b, field)+")")
			}
			word := "at least one of: "
			if k == "oneOf" {
				word = "exactly one of: "
			}
			parts = append(parts, word+strings.Join(alts, " or "))
		case "if":
			cond := describe(x, field)
			if then, ok := m["then"]; ok {
				parts = append(parts, describe(then, field)+" when "+cond)
			}
			if els, ok := m["else"]; ok {
				parts = append(parts, describe(els, field)+" unless "+cond)
			}
		default:
			parts = append(parts, k+": "+compact(x))
		}
	}
	return strings.Join(parts, "; ")
}

func requiredWord(n int) string {
	if n == 1 {
		return " is required"
	}
	return " are required"
}

func prefixed(field string, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		if field != "" {
			n = field + "." + n
		}
		out[i] = n
	}
	return strings.Join(out, ", ")
}

func typeWords(x any) string {
	switch t := x.(type) {
	case string:
		return article(t)
	case []any:
		var ws []string
		for _, e := range t {
			ws = append(ws, fmt.Sprint(e))
		}
		return "a " + strings.Join(ws, " or ")
	}
	return compact(x)
}

func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func scalar(x any) string {
	switch x := x.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return compact(x)
}

func list(x any) string {
	var out []string
	for _, e := range listOf(x) {
		out = append(out, scalar(e))
	}
	return strings.Join(out, ", ")
}

func listOf(x any) []any {
	l, _ := x.([]any)
	return l
}

func strs(x any) []string {
	var out []string
	for _, e := range listOf(x) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func compact(x any) string {
	b, err := encode(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}

// appendDescription adds a sentence to a schema's description.
func appendDescription(m map[string]any, sentence string) {
	d, _ := m["description"].(string)
	d = strings.TrimSpace(d)
	if d != "" && !strings.HasSuffix(d, ".") {
		d += "."
	}
	if d != "" {
		d += " "
	}
	m["description"] = d + sentence
}
