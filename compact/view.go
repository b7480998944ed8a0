package compact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/theory/jsonpath"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// ViewToolCallName is the wire name of the recovery tool.
const ViewToolCallName = "view_tool_call"

// GroupKey is the key of the group that holds view_tool_call; the group
// needs the "records" service (a store.Store).
const GroupKey = "records"

// ServiceRecords is the service name under which a run injects its
// store.Store for view_tool_call (capability.RunSpec.Services).
const ServiceRecords = "records"

// Defaults of ViewOptions.
const (
	DefaultViewChars  = 8000 // characters of one slice
	DefaultViewTokens = 2000 // tokens of one slice
)

// ViewOptions configure view_tool_call. Zero fields take their defaults.
type ViewOptions struct {
	// MaxChars bounds one slice, in characters (runes). Default 8,000.
	MaxChars int
	// MaxTokens bounds one slice, in tokens; a slice over it is shortened.
	// Default 2,000 (under the 2,500-token threshold, so a recovery is
	// never itself compacted).
	MaxTokens int
	// Counter counts tokens. Default [Count].
	Counter Counter
	// FullOutputDir is where execute keeps full command output
	// (coretools.ExecuteOptions.OutputDir). When set, an execute record
	// whose evidence full_output_path lies inside it is viewed through
	// that file (the raw output, including what execute's own 30,000
	// character cap omitted); paths elsewhere are never opened. Default
	// "": records only.
	FullOutputDir string
}

const viewSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "minLength": 1, "description": "The toolCallId named in a compacted result's stub."},
    "toolCallId": {"type": "string", "minLength": 1, "description": "Same as id."},
    "part": {"enum": ["output", "input", "result"], "description": "output (default): the call's full output (for execute, the full output file when kept); result: the result text exactly as the tool returned it; input: the raw arguments."},
    "json_path": {"type": "string", "minLength": 1, "description": "RFC 9535 JSONPath into a JSON output, e.g. $.items[3].name or items[3].name; selects before slicing."},
    "lines": {"type": "string", "pattern": "^[0-9]+(-[0-9]+)?$", "description": "1-based inclusive line range, e.g. \"120-180\" or \"42\"."},
    "pattern": {"type": "string", "minLength": 1, "description": "RE2 regular expression; lists the matching lines with their numbers."},
    "offset": {"type": "integer", "minimum": 0, "description": "Characters to skip (with pattern: matches to skip). Default 0."},
    "limit": {"type": "integer", "minimum": 1, "description": "Characters to return (with pattern: matches). Default and maximum %d."}
  },
  "additionalProperties": false
}`

type viewInput struct {
	ID         string `json:"id"`
	ToolCallID string `json:"toolCallId"`
	Part       string `json:"part"`
	JSONPath   string `json:"json_path"`
	Lines      string `json:"lines"`
	Pattern    string `json:"pattern"`
	Offset     *int   `json:"offset"`
	Limit      *int   `json:"limit"`
}

// ViewToolCall builds the view_tool_call tool over st; offload files are
// read under dataDir when the store no longer holds a raw output. opts
// may be nil.
//
// A call returns one bounded slice of a recorded call: a header (id,
// tool, source and its size in characters and lines, the range shown, the
// bound, and the exact call for the next slice), a "---" line, then the
// slice verbatim. Selection runs json_path, then lines, then offset/limit
// (characters); pattern lists matching lines instead. Evidence keys:
// tool_call_id, source, total_chars, offset, end, next_offset (-1 at the
// end), matches (pattern). An unknown id, a bad JSONPath, a json_path on
// output that is not JSON, or a bad pattern is a Parameters error.
func ViewToolCall(st store.Store, dataDir string, opts *ViewOptions) *tool.Tool {
	v := &viewer{st: st, dataDir: dataDir}
	if opts != nil {
		v.o = *opts
	}
	if v.o.MaxChars <= 0 {
		v.o.MaxChars = DefaultViewChars
	}
	if v.o.MaxTokens <= 0 {
		v.o.MaxTokens = DefaultViewTokens
	}
	if v.o.Counter == nil {
		v.o.Counter = Count
	}
	return tool.MustDefine(tool.Spec{
		Name: ViewToolCallName,
		Description: fmt.Sprintf(`Recover a recorded tool call by its toolCallId: the full output (or input) that a compacted or capped result left out, in bounded slices of at most %s characters.
Use it when a result says it was compacted or truncated and names a toolCallId. Choose a slice: offset/limit (characters), lines ("120-180"), pattern (RE2; lists matching lines with numbers), or json_path (RFC 9535, e.g. $.items[3].name). Each answer states what it shows and the exact call for the next slice.`, num(v.o.MaxChars)),
		InputSchema: []byte(fmt.Sprintf(viewSchema, v.o.MaxChars)),
		Annotations: &tool.Annotations{Title: "View a recorded tool call", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)},
		Handler:     v.call,
	})
}

// Meta is the registry metadata of the records group.
var Meta = registry.Meta{Key: GroupKey, DisplayName: "Call records", Category: "recovery",
	Description: "Recover the full input and output of earlier tool calls by toolCallId (view_tool_call)."}

// Instructions are the records group's runtime instructions.
const Instructions = `Large tool results are compacted for later steps: a stub in brackets names the tool, its arguments, what was removed, and the toolCallId. Nothing is lost: view_tool_call {"id":"<toolCallId>"} returns the original in slices (lines, pattern, json_path, offset/limit). Prefer a pattern or json_path over paging through everything.`

// Group is the records group: view_tool_call over the "records" service,
// which must be a store.Store; dataDir and opts as for ViewToolCall.
func Group(dataDir string, opts *ViewOptions) registry.Group {
	return registry.Group{
		Key:          GroupKey,
		Names:        []string{ViewToolCallName},
		Requires:     registry.Requirements{Services: []string{ServiceRecords}},
		Instructions: Instructions,
		Build: func(env registry.Env) ([]*tool.Tool, error) {
			st, ok := registry.Service[store.Store](env, GroupKey)
			if !ok {
				return nil, fmt.Errorf("compact: the %q service is not a store.Store", GroupKey)
			}
			return []*tool.Tool{ViewToolCall(st, dataDir, opts)}, nil
		},
	}
}

type viewer struct {
	st      store.Store
	dataDir string
	o       ViewOptions
}

func (v *viewer) call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[viewInput](call)
	if err != nil {
		return nil, err
	}
	id := in.ID
	if id == "" {
		id = in.ToolCallID
	}
	if id == "" {
		return nil, tool.Errorf(tool.Parameters, "id is required").WithHint(`pass the toolCallId from the stub: {"id":"call_..."}`)
	}
	if in.ID != "" && in.ToolCallID != "" && in.ID != in.ToolCallID {
		return nil, tool.Errorf(tool.Parameters, "id %q and toolCallId %q differ", in.ID, in.ToolCallID).WithHint("pass one of them")
	}
	rec, err := v.st.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, tool.Errorf(tool.Parameters, "no recorded tool call has id %q", id).
			WithHint("use the toolCallId exactly as a compacted result's stub names it")
	}
	if err != nil {
		return nil, tool.Errorf(tool.Execution, "reading the record of %q failed: %w", id, err).WithHint("retry later")
	}
	src, label, err := v.source(rec, in.Part)
	if err != nil {
		return nil, err
	}
	if in.JSONPath != "" {
		if src, err = selectJSON(src, in.JSONPath); err != nil {
			return nil, err
		}
		label += " → " + in.JSONPath
	}
	if in.Lines != "" {
		var first, last int
		src, first, last = selectLines(src, in.Lines)
		label += fmt.Sprintf(" → lines %s-%s", num(first), num(last))
	}
	next := map[string]any{"id": id}
	if in.Part != "" {
		next["part"] = in.Part
	}
	if in.JSONPath != "" {
		next["json_path"] = in.JSONPath
	}
	if in.Lines != "" {
		next["lines"] = in.Lines
	}
	if in.Pattern != "" {
		return v.grep(rec, src, label, in, next)
	}
	return v.slice(rec, src, label, in, next), nil
}

// source returns the text a view reads and a description of it.
func (v *viewer) source(rec *store.Record, part string) (string, string, error) {
	if part == "input" {
		return string(rec.Input), "raw input", nil
	}
	raw := rec.Output
	if len(bytes.TrimSpace(raw)) == 0 && rec.Pointer != "" {
		if off, err := ReadOffload(v.dataDir, rec.Pointer); err == nil {
			raw = off.Output
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if rec.Outcome == store.OutcomeRunning {
			return "", "no output recorded (outcome running: the call is still running, or the process ended before it finished)", nil
		}
		return "", "no output recorded", nil
	}
	w, err := result.Decode(raw)
	if err != nil {
		return "", "", tool.Errorf(tool.Execution, "the record of %q is unreadable: %w", rec.ToolCallID, err)
	}
	if part != "result" && v.o.FullOutputDir != "" && rec.Tool == "execute" {
		if p, ok := w.Evidence["full_output_path"].(string); ok && inside(v.o.FullOutputDir, p) {
			if data, err := os.ReadFile(p); err == nil {
				return string(data), "full output file of execute (raw bytes as produced)", nil
			}
		}
	}
	return w.Text(), "output text", nil
}

func inside(dir, p string) bool {
	d, err1 := filepath.Abs(dir)
	a, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, a)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "."
}

// selectJSON applies an RFC 9535 JSONPath; a path without a leading '$'
// gets "$." (or "$" before '[') prepended. One node is returned as its
// compact JSON; several as one line each: "<normalized path>\t<json>".
func selectJSON(src, path string) (string, error) {
	p := strings.TrimSpace(path)
	if !strings.HasPrefix(p, "$") {
		if strings.HasPrefix(p, "[") {
			p = "$" + p
		} else {
			p = "$." + p
		}
	}
	q, err := jsonpath.Parse(p)
	if err != nil {
		return "", tool.Errorf(tool.Parameters, "json_path %q: %v", path, err).
			WithHint("use RFC 9535 JSONPath, e.g. $.items[3].name or $.items[*].id")
	}
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return "", tool.Errorf(tool.Parameters, "the output is not JSON (%v), so json_path does not apply", err).
			WithHint("use lines, pattern or offset/limit")
	}
	nodes := q.SelectLocated(doc)
	enc := func(v any) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		_ = e.Encode(v)
		return strings.TrimSuffix(b.String(), "\n")
	}
	switch len(nodes) {
	case 0:
		return "", tool.Errorf(tool.Parameters, "json_path %q selects nothing", path).
			WithHint("check the path against the structure shown in the stub; $.* lists the top level")
	case 1:
		return enc(nodes[0].Node), nil
	}
	var b strings.Builder
	for i, n := range nodes {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(n.Path.String() + "\t" + enc(n.Node))
	}
	return b.String(), nil
}

// selectLines returns lines first..last (1-based, inclusive, clamped) of
// src with their newlines.
func selectLines(src, spec string) (string, int, int) {
	a, b, found := strings.Cut(spec, "-")
	first, _ := strconv.Atoi(a)
	last := first
	if found {
		last, _ = strconv.Atoi(b)
	}
	first = max(first, 1)
	lines := strings.SplitAfter(src, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	last = min(last, len(lines))
	if first > last {
		return "", first, last
	}
	return strings.Join(lines[first-1:last], ""), first, last
}

func (v *viewer) limit(in viewInput) int {
	if in.Limit != nil && *in.Limit < v.o.MaxChars {
		return *in.Limit
	}
	return v.o.MaxChars
}

// slice returns characters offset..offset+limit of src, shortened to the
// token bound.
func (v *viewer) slice(rec *store.Record, src, label string, in viewInput, next map[string]any) *tool.Result {
	r := []rune(src)
	total := len(r)
	off := 0
	if in.Offset != nil {
		off = min(*in.Offset, total)
	}
	end := min(off+v.limit(in), total)
	for end > off {
		n := v.o.Counter(string(r[off:end]))
		if n <= v.o.MaxTokens {
			break
		}
		end = off + min((end-off)*v.o.MaxTokens*19/(n*20), (end-off)-1)
	}
	body := string(r[off:end])
	var h strings.Builder
	fmt.Fprintf(&h, "view_tool_call: toolCallId=%s · tool=%s · outcome=%s\n", rec.ToolCallID, rec.Tool, rec.Outcome)
	fmt.Fprintf(&h, "source: %s (%s in %s)\n", label, plural(total, "character", "characters"), plural(lineCount(src), "line", "lines"))
	nextOff := -1
	if total == 0 {
		h.WriteString("showing: nothing (empty)\n")
	} else {
		fmt.Fprintf(&h, "showing: characters %s-%s of %s (one slice is bounded at %s characters and %s tokens by view_tool_call)\n",
			num(off), num(end), num(total), num(v.o.MaxChars), num(v.o.MaxTokens))
		if end < total {
			nextOff = end
			next["offset"] = end
			nb, _ := json.Marshal(next)
			fmt.Fprintf(&h, "next: view_tool_call %s\n", nb)
		} else {
			h.WriteString("next: none, this is the end\n")
		}
	}
	h.WriteString("---\n")
	h.WriteString(body)
	return tool.TextWith(h.String(), map[string]any{
		"tool_call_id": rec.ToolCallID, "source": label, "total_chars": total,
		"offset": off, "end": end, "next_offset": nextOff,
	})
}

// grep lists the lines of src matching in.Pattern, each with its number
// and cut to 300 characters around the first match.
func (v *viewer) grep(rec *store.Record, src, label string, in viewInput, next map[string]any) (*tool.Result, error) {
	re, err := regexp.Compile(in.Pattern)
	if err != nil {
		return nil, tool.Errorf(tool.Parameters, "pattern %q: %v", in.Pattern, err).WithHint("use RE2 syntax; escape ( ) [ ] . * + ? with a backslash")
	}
	skip := 0
	if in.Offset != nil {
		skip = *in.Offset
	}
	maxMatches := 200
	if in.Limit != nil {
		maxMatches = min(*in.Limit, maxMatches)
	}
	lines := strings.SplitAfter(src, "\n")
	var out strings.Builder
	total, shown, chars := 0, 0, 0
	stopped := -1
	for i, l := range lines {
		line := strings.TrimRight(l, "\r\n")
		loc := re.FindStringIndex(line)
		if loc == nil {
			continue
		}
		total++
		if total <= skip || stopped >= 0 {
			continue
		}
		s := line
		if utf8.RuneCountInString(s) > 300 {
			start := max(loc[0]-100, 0)
			for start > 0 && !utf8.RuneStart(s[start]) {
				start--
			}
			r := []rune(s[start:])
			cut := string(r[:min(300, len(r))])
			s = fmt.Sprintf("[line of %s characters; showing from byte %s] %s…", num(utf8.RuneCountInString(line)), num(start), cut)
		}
		entry := fmt.Sprintf("%d: %s\n", i+1, s)
		if shown >= maxMatches || chars+utf8.RuneCountInString(entry) > v.o.MaxChars ||
			v.o.Counter(out.String()+entry) > v.o.MaxTokens {
			stopped = total - 1
			continue
		}
		out.WriteString(entry)
		chars += utf8.RuneCountInString(entry)
		shown++
	}
	var h strings.Builder
	fmt.Fprintf(&h, "view_tool_call: toolCallId=%s · tool=%s · outcome=%s\n", rec.ToolCallID, rec.Tool, rec.Outcome)
	fmt.Fprintf(&h, "source: %s (%s in %s)\n", label, plural(utf8.RuneCountInString(src), "character", "characters"), plural(lineCount(src), "line", "lines"))
	fmt.Fprintf(&h, "pattern %q: %s; showing %s from match %s (line number: text)\n", in.Pattern, plural(total, "matching line", "matching lines"), num(shown), num(skip+1))
	nextOff := -1
	if stopped >= 0 {
		nextOff = stopped
		next["pattern"] = in.Pattern
		next["offset"] = stopped
		nb, _ := json.Marshal(next)
		fmt.Fprintf(&h, "bounded at %s characters and %s tokens by view_tool_call; next: view_tool_call %s\n", num(v.o.MaxChars), num(v.o.MaxTokens), nb)
	}
	h.WriteString("---\n")
	h.WriteString(strings.TrimSuffix(out.String(), "\n"))
	return tool.TextWith(h.String(), map[string]any{
		"tool_call_id": rec.ToolCallID, "source": label, "total_chars": utf8.RuneCountInString(src),
		"matches": total, "offset": skip, "next_offset": nextOff,
	}), nil
}
