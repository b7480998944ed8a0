package compact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TrimResult is what [TrimText] produced.
type TrimResult struct {
	Text   string // the compact form
	JSON   bool   // the input was one JSON value, trimmed structurally
	Tokens int    // tokens of Text
	// Removed says what was cut, for the stub, e.g. "3,495 of 3,500 array
	// items and 12 string tails sampled away" or "180,000 characters
	// omitted: lines 52-3,447".
	Removed string
}

// TrimText shortens text to at most budget tokens (counted with count):
// JSON (an object or array, after surrounding space) is trimmed
// structurally by [TrimJSON]; anything else keeps its head and tail on
// line boundaries with a marker line. It never returns more than text.
// hint is the recovery call the markers name, e.g.
// `view_tool_call {"id":"call_1"}`.
func TrimText(text string, budget int, count Counter, hint string) TrimResult {
	if count == nil {
		count = Count
	}
	t := strings.TrimSpace(text)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		if r, ok := TrimJSON([]byte(t), budget, count); ok {
			return r
		}
	}
	return trimLines(text, budget, count, hint)
}

// node is a JSON value with object key order kept.
type node struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []*node
	str  string // string value, or the literal of number/bool/null
}

func parseOrdered(b []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := parseNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return n, nil
}

func parseNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n := &node{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				val, err := parseNode(dec)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, kt.(string))
				n.vals = append(n.vals, val)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &node{kind: 'a'}
			for dec.More() {
				val, err := parseNode(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, val)
			}
			_, err := dec.Token()
			return n, err
		}
	case string:
		return &node{kind: 's', str: v}, nil
	case json.Number:
		return &node{kind: 'n', str: v.String()}, nil
	case bool:
		return &node{kind: 'b', str: strconv.FormatBool(v)}, nil
	case nil:
		return &node{kind: 'z', str: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// trimLevel is one setting of the structural trim, from mild to harsh.
type trimLevel struct {
	head, tail int // array items kept at the start and the end
	keys       int // object keys kept
	str        int // characters kept of a string
	depth      int // containers deeper than this become a summary string
}

var trimLevels = []trimLevel{
	{head: 5, tail: 2, keys: 60, str: 400, depth: 12},
	{head: 3, tail: 1, keys: 40, str: 200, depth: 10},
	{head: 2, tail: 1, keys: 25, str: 120, depth: 8},
	{head: 1, tail: 1, keys: 15, str: 80, depth: 6},
	{head: 1, tail: 0, keys: 10, str: 60, depth: 5},
	{head: 1, tail: 0, keys: 6, str: 40, depth: 4},
	{head: 1, tail: 0, keys: 4, str: 30, depth: 3},
	{head: 0, tail: 0, keys: 3, str: 20, depth: 2},
}

// trimStats counts what one rendering removed.
type trimStats struct {
	items, ofItems int // array items removed, in arrays that lost some
	keys           int // object keys removed
	strs           int // strings cut
	strChars       int // characters cut from strings
	deep           int // containers summarized for depth
}

// TrimJSON shortens one JSON value to at most budget tokens keeping its
// shape: arrays keep their first and last items with a marker item
// "… N more items (indices a-b) …" between them, objects keep their first
// keys with a "…" key counting the rest, long strings keep their start
// and end "… [N characters cut] …", containers nested too deep become a
// string such as "{… 12 keys}". Keys keep their order. It tries milder
// settings first and reports false when even the harshest one exceeds the
// budget or the input is not valid JSON.
func TrimJSON(raw []byte, budget int, count Counter) (TrimResult, bool) {
	if count == nil {
		count = Count
	}
	root, err := parseOrdered(raw)
	if err != nil {
		return TrimResult{}, false
	}
	for _, lv := range trimLevels {
		var st trimStats
		var b bytes.Buffer
		render(&b, root, lv, 0, "", &st)
		out := b.String()
		if n := count(out); n <= budget {
			return TrimResult{Text: out, JSON: true, Tokens: n, Removed: st.describe()}, true
		}
	}
	return TrimResult{}, false
}

func (st trimStats) describe() string {
	var parts []string
	if st.items > 0 {
		parts = append(parts, fmt.Sprintf("%s of %s array items", num(st.items), num(st.ofItems)))
	}
	if st.keys > 0 {
		parts = append(parts, plural(st.keys, "object key", "object keys"))
	}
	if st.strs > 0 {
		parts = append(parts, fmt.Sprintf("%s from %s", plural(st.strChars, "character", "characters"), plural(st.strs, "long string", "long strings")))
	}
	if st.deep > 0 {
		parts = append(parts, plural(st.deep, "nested container", "nested containers")+" below the depth limit")
	}
	if len(parts) == 0 {
		return "whitespace only"
	}
	return strings.Join(parts, ", ") + " removed (markers \"…\" in place)"
}

func render(b *bytes.Buffer, n *node, lv trimLevel, depth int, indent string, st *trimStats) {
	in := indent + " "
	switch n.kind {
	case 'o':
		if len(n.keys) == 0 {
			b.WriteString("{}")
			return
		}
		if depth >= lv.depth {
			st.deep++
			writeString(b, fmt.Sprintf("{… %s}", plural(len(n.keys), "key", "keys")))
			return
		}
		b.WriteString("{")
		k := min(len(n.keys), lv.keys)
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n" + in)
			writeString(b, n.keys[i])
			b.WriteString(": ")
			render(b, n.vals[i], lv, depth+1, in, st)
		}
		if rest := len(n.keys) - k; rest > 0 {
			st.keys += rest
			b.WriteString(",\n" + in)
			writeString(b, "…")
			b.WriteString(": ")
			writeString(b, fmt.Sprintf("%s more: %s", plural(rest, "key", "keys"), keyList(n.keys[k:])))
		}
		b.WriteString("\n" + indent + "}")
	case 'a':
		if len(n.vals) == 0 {
			b.WriteString("[]")
			return
		}
		if depth >= lv.depth {
			st.deep++
			writeString(b, fmt.Sprintf("[… %s]", plural(len(n.vals), "item", "items")))
			return
		}
		b.WriteString("[")
		head, tail := lv.head, lv.tail
		if head+tail >= len(n.vals) {
			head, tail = len(n.vals), 0
		}
		if head == 0 && tail == 0 {
			head = 0
		}
		first := true
		item := func(v *node) {
			if !first {
				b.WriteString(",")
			}
			first = false
			b.WriteString("\n" + in)
			render(b, v, lv, depth+1, in, st)
		}
		for i := 0; i < head; i++ {
			item(n.vals[i])
		}
		if cut := len(n.vals) - head - tail; cut > 0 {
			st.items += cut
			st.ofItems += len(n.vals)
			if !first {
				b.WriteString(",")
			}
			first = false
			b.WriteString("\n" + in)
			span := "index " + num(head)
			if cut > 1 {
				span = fmt.Sprintf("indices %s-%s", num(head), num(head+cut-1))
			}
			writeString(b, fmt.Sprintf("… %s (%s) of %s cut …", plural(cut, "more item", "more items"), span, num(len(n.vals))))
		}
		for i := len(n.vals) - tail; i < len(n.vals); i++ {
			item(n.vals[i])
		}
		b.WriteString("\n" + indent + "]")
	case 's':
		s := n.str
		if c := utf8.RuneCountInString(s); c > lv.str {
			r := []rune(s)
			keepHead := lv.str * 2 / 3
			keepTail := lv.str - keepHead
			cut := c - keepHead - keepTail
			st.strs++
			st.strChars += cut
			s = string(r[:keepHead]) + fmt.Sprintf("… [%s cut] …", plural(cut, "character", "characters")) + string(r[c-keepTail:])
		}
		writeString(b, s)
	default:
		b.WriteString(n.str)
	}
}

// keyList names up to 5 keys, then "…".
func keyList(keys []string) string {
	if len(keys) > 5 {
		return strings.Join(keys[:5], ", ") + ", …"
	}
	return strings.Join(keys, ", ")
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // the encoder's newline
}

// errorLine finds lines worth listing from an omitted region.
var errorLine = regexp.MustCompile(`(?i)\b(error|fatal|panic|exception|failed|failure|traceback)\b`)

// trimLines keeps the head and tail of text on line boundaries within
// budget tokens, with a marker naming the omitted characters and lines,
// the recovery hint, and up to 5 error-like lines from the omitted middle
// (BH-046). The head gets 60% of the room: it holds a tool's header
// (exit code, totals), which must survive (BH-045).
func trimLines(text string, budget int, count Counter, hint string) TrimResult {
	total := count(text)
	if total <= budget {
		return TrimResult{Text: text, Tokens: total, Removed: "nothing"}
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	runes := utf8.RuneCountInString(text)
	// Start from the rune share of the budget, shrink until it fits.
	room := int(float64(runes) * float64(budget) / float64(total) * 0.9)
	for attempt := 0; attempt < 12; attempt++ {
		headRoom, tailRoom := room*6/10, room*4/10
		h, hc := 0, 0 // lines and characters of the head
		for h < len(lines) {
			c := utf8.RuneCountInString(lines[h])
			if hc+c > headRoom {
				break
			}
			hc += c
			h++
		}
		t, tc := 0, 0
		for t < len(lines)-h {
			c := utf8.RuneCountInString(lines[len(lines)-1-t])
			if tc+c > tailRoom {
				break
			}
			tc += c
			t++
		}
		var headPart, tailPart string
		headPart = strings.Join(lines[:h], "")
		tailPart = strings.Join(lines[len(lines)-t:], "")
		omitted := lines[h : len(lines)-t]
		partial := ""
		if h == 0 && len(omitted) > 0 {
			// One huge first line: keep its start by characters.
			r := []rune(omitted[0])
			k := min(headRoom, len(r))
			headPart = string(r[:k])
			partial = fmt.Sprintf(" (line 1 cut after %s)", plural(k, "character", "characters"))
		}
		if t == 0 && len(omitted) > 0 {
			// One huge last line: keep its end by characters.
			last := []rune(omitted[len(omitted)-1])
			skip := 0
			if h == 0 && len(omitted) == 1 {
				skip = utf8.RuneCountInString(headPart) // the same line: no overlap
			}
			k := min(tailRoom, len(last)-skip)
			if k > 0 {
				tailPart = string(last[len(last)-k:])
				partial += fmt.Sprintf(" (line %s: last %s kept)", num(len(lines)), plural(k, "character", "characters"))
			}
		}
		omittedChars := runes - utf8.RuneCountInString(headPart) - utf8.RuneCountInString(tailPart)
		first, last := h+1, len(lines)-t
		span := "line " + num(first)
		if last > first {
			span = fmt.Sprintf("lines %s-%s", num(first), num(last))
		}
		var m strings.Builder
		if headPart != "" && !strings.HasSuffix(headPart, "\n") {
			m.WriteString("\n")
		}
		fmt.Fprintf(&m, "[%s omitted: %s%s; cut by aibuddy precompaction (trim); %s with \"lines\":\"%d-%d\" shows them]\n",
			plural(omittedChars, "character", "characters"), span, partial, hint, first, last)
		var errs []string
		for i, l := range omitted {
			if errorLine.MatchString(l) {
				s := strings.TrimRight(l, "\n")
				if r := []rune(s); len(r) > 200 {
					s = string(r[:200]) + "…"
				}
				errs = append(errs, fmt.Sprintf("  line %s: %s", num(h+1+i), s))
				if len(errs) == 5 {
					break
				}
			}
		}
		if len(errs) > 0 {
			m.WriteString("[error-like lines in the omitted part:\n" + strings.Join(errs, "\n") + "]\n")
		}
		out := headPart + m.String() + tailPart
		n := count(out)
		if n <= budget || room < 200 {
			return TrimResult{Text: out, Tokens: n,
				Removed: fmt.Sprintf("%s omitted: %s", plural(omittedChars, "character", "characters"), span)}
		}
		room = room * 3 / 4
	}
	r := []rune(text)
	out := string(r[:min(len(r), 400)]) + "\n[rest omitted by aibuddy precompaction (trim); " + hint + " shows it]"
	return TrimResult{Text: out, Tokens: count(out), Removed: "all but the first 400 characters"}
}

// num formats n with thousands separators (golang.org/x/text/message, English): 65544 -> "65,544".
func num(n int) string { return thousands.Sprintf("%d", n) }

var thousands = message.NewPrinter(language.English)

func plural64(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num64(n) + " " + many
}

// plural returns "1 line" or "2,000 lines".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}
