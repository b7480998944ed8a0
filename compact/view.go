package compact

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/theory/jsonpath"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// maxProviderMatches bounds the calls listed when a provider id names
// several calls of the task.
const maxProviderMatches = 10

// byProviderID resolves id as the model provider's id of a call of the
// current task (tool.TaskID): a model may name a call by the tool_use id
// it gave it rather than by the toolCallId its results name. One match is
// that call; several (providers reuse ids, some send "call_0" on every
// turn) are a Parameters error listing them; none, or a store without
// provider ids, is the not-found error.
func (v *viewer) byProviderID(ctx context.Context, id string) (*store.Record, error) {
	notFound := tool.Errorf(tool.Parameters, "no recorded tool call has id %q", id).
		WithHint("use the toolCallId exactly as a compacted result's stub names it")
	p, ok := v.st.(store.ProviderIDs)
	task := tool.TaskID(ctx)
	if !ok || task == "" {
		return nil, notFound
	}
	ids, err := p.ByProviderID(ctx, task, id)
	if err != nil {
		return nil, tool.Errorf(tool.Execution, "looking up provider id %q failed: %w", id, err).WithHint("retry later")
	}
	switch len(ids) {
	case 0:
		return nil, notFound
	case 1:
		rec, err := v.st.Get(ctx, ids[0])
		if err != nil {
			return nil, tool.Errorf(tool.Execution, "reading the record of %q failed: %w", ids[0], err).WithHint("retry later")
		}
		return rec, nil
	}
	var list []string
	for _, c := range ids[:min(len(ids), maxProviderMatches)] {
		line := c
		if rec, err := v.st.Get(ctx, c); err == nil {
			line += " (" + rec.Tool + " " + shortInput(rec.Input, 80) + ")"
		}
		list = append(list, line)
	}
	more := ""
	if len(ids) > maxProviderMatches {
		more = fmt.Sprintf("; %d more: aibuddy calls list --task %s", len(ids)-maxProviderMatches, task)
	}
	return nil, tool.Errorf(tool.Parameters, "%q is the provider's id of %d calls of this task, not a toolCallId: %s%s",
		id, len(ids), strings.Join(list, ", "), more).WithHint("pass the toolCallId of the one you mean")
}

// shortInput is a call's input as compact JSON cut to n characters.
func shortInput(in json.RawMessage, n int) string {
	var buf bytes.Buffer
	if json.Compact(&buf, in) != nil {
		buf.Reset()
		buf.Write(in)
	}
	r := []rune(buf.String())
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}

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
	DefaultViewChars     = 8000     // characters of one slice
	DefaultViewTokens    = 2000     // tokens of one slice
	DefaultViewJSONBytes = 16 << 20 // bytes of an output file json_path reads whole (16 MiB)
)

// ViewOptions configure view_tool_call. Zero fields take their defaults.
type ViewOptions struct {
	// MaxChars bounds one slice, in characters (runes). Default 8,000.
	MaxChars int
	// MaxTokens bounds one slice, in tokens; a slice over it is shortened.
	// Default 2,000 (under the 2,500-token threshold, so a recovery is
	// never itself compacted).
	MaxTokens int
	// MaxJSONBytes bounds, in bytes, a full output file that json_path
	// reads and parses whole; a larger file is a Parameters error that
	// points to pattern, lines or "part":"result". Default 16 MiB. Every
	// other selection streams the file (see "Memory" on [ViewToolCall]).
	MaxJSONBytes int64
	// Counter counts tokens. Default [Count].
	Counter Counter
	// FullOutputDir is where execute keeps full command output
	// (coretools.ExecuteOptions.OutputDir). When set, a record whose
	// evidence names a full output file inside it
	// (tool.EvidenceFullOutputPath) is viewed through that file (the raw
	// output, including what execute's own 30,000 character cap omitted),
	// and a call still running or interrupted through the file its tool
	// declares (tool.Tool.OutputFile, looked up with Tool); paths
	// elsewhere are never opened. Default "": records only.
	FullOutputDir string
	// Tool finds a tool of the run by name, for what it declares about
	// its records (tool.Tool.OutputFile). Group sets it from the run
	// (registry.Env.Tool). Default nil: no declarations, so an
	// unfinished call is viewed from its record only.
	Tool func(name string) (*tool.Tool, bool)
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
// (characters); pattern lists matching lines instead, numbered as in the
// whole source (also within a lines range). Evidence keys:
// tool_call_id, source, total_chars, offset, end, next_offset (-1 at the
// end), matches (pattern). An id that is no toolCallId is tried as the
// model provider's id of a call of the current task (tool.TaskID; stores
// implementing store.ProviderIDs): one such call is viewed, several are a
// Parameters error naming their toolCallIds (at most 10). An unknown id,
// a bad JSONPath, a json_path on
// output that is not JSON or on an output file over MaxJSONBytes, or a bad
// pattern is a Parameters error; a failed read of an output file is an
// Execution error.
//
// Memory: an execute output file is never read whole. offset/limit reads
// it once in 256 KiB chunks, counting characters as it goes and keeping
// only the slice (at most MaxChars characters); lines reads only up to the
// end of the range; pattern reads it line by line, holding one line of up
// to 1 MiB (a longer line is matched as a stream and cut from the file).
// So one call holds about a megabyte plus the answer whatever the file's
// size, and takes time proportional to the bytes it reads. json_path
// parses the whole file, so it is refused on files over MaxJSONBytes. A
// record's own output (a result text, the raw input) is already in memory
// with the record and is read from there.
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
	if v.o.MaxJSONBytes <= 0 {
		v.o.MaxJSONBytes = DefaultViewJSONBytes
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
			var o ViewOptions
			if opts != nil {
				o = *opts
			}
			if o.Tool == nil {
				o.Tool = env.Tool
			}
			return []*tool.Tool{ViewToolCall(st, dataDir, &o)}, nil
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
		rec, err = v.byProviderID(ctx, id)
		if err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, tool.Errorf(tool.Execution, "reading the record of %q failed: %w", id, err).WithHint("retry later")
	}
	src, label, err := v.source(ctx, rec, in.Part)
	if err != nil {
		return nil, err
	}
	defer src.close()
	if in.JSONPath != "" {
		doc, err := src.jsonText(v.o.MaxJSONBytes)
		if err != nil {
			return nil, err
		}
		sel, err := selectJSON(doc, in.JSONPath)
		if err != nil {
			return nil, err
		}
		src = textSource(sel)
		label += " → " + in.JSONPath
	}
	lineBase := 0 // lines before the window, for pattern line numbers
	if in.Lines != "" {
		a, b, found := strings.Cut(in.Lines, "-")
		first, _ := strconv.Atoi(a)
		last := first
		if found {
			last, _ = strconv.Atoi(b)
		}
		first = max(first, 1)
		lo, hi, clamped, err := lineWindow(src.r, src.n, first, last)
		if err != nil {
			return nil, tool.Errorf(tool.Execution, "reading the output of %q failed: %w", id, err).WithHint("retry later")
		}
		src.r, src.n = io.NewSectionReader(src.r, lo, hi-lo), hi-lo
		lineBase = first - 1
		label += fmt.Sprintf(" → lines %s-%s", num(first), num(clamped))
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
		return v.grep(rec, src, lineBase, label, in, next)
	}
	return v.slice(rec, src, label, in, next)
}

// viewSource is the text a view reads: n bytes through r, a full output
// file (f is set) or a text in memory.
type viewSource struct {
	r io.ReaderAt
	n int64
	f *os.File
	// stored: the bytes are a payload in the store (viewpayload.go),
	// bounded for json_path as a file is.
	stored bool
}

func textSource(s string) viewSource { return viewSource{r: strings.NewReader(s), n: int64(len(s))} }

func (s viewSource) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// jsonText is the whole source for json_path: a text in memory as it is, a
// file only up to maxBytes (a Parameters error beyond).
func (s viewSource) jsonText(maxBytes int64) (string, error) {
	if (s.f != nil || s.stored) && s.n > maxBytes {
		return "", tool.Errorf(tool.Parameters, "json_path reads the output whole, and this output file is %s bytes, over the %s-byte bound of view_tool_call", num64(s.n), num64(maxBytes)).
			WithHint(`use pattern or lines on it, or json_path with "part":"result" (the result text)`)
	}
	b := make([]byte, s.n)
	if _, err := s.r.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && len(b) == int(s.n)) {
		return "", tool.Errorf(tool.Execution, "reading the output failed: %w", err).WithHint("retry later")
	}
	return string(b), nil
}

// source returns the text a view reads and a description of it. An execute
// output file is opened, not read: the caller closes the source.
func (v *viewer) source(ctx context.Context, rec *store.Record, part string) (viewSource, string, error) {
	if part == "input" {
		return textSource(string(rec.Input)), "raw input", nil
	}
	raw := rec.Output
	if len(bytes.TrimSpace(raw)) == 0 && rec.Pointer != "" {
		if off, err := LoadOffload(ctx, v.st, v.dataDir, rec.TaskID, rec.Pointer); err == nil {
			raw = off.Output
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if part != "result" && (rec.Outcome == store.OutcomeRunning || rec.Outcome == store.OutcomeInterrupted) {
			// A call that never finished (execute) may still have the
			// output printed so far in the file its tool declares.
			if src, ok := v.partialOutput(rec); ok {
				return src, "partial full output file of " + rec.Tool + " (raw bytes as produced before the call ended unfinished: outcome " + string(rec.Outcome) + "); its effect may be partial", nil
			}
		}
		switch rec.Outcome {
		case store.OutcomeRunning:
			return textSource(""), "no output recorded (outcome running: the call is still running, or the process ended before it finished)", nil
		case store.OutcomeInterrupted:
			return textSource(""), fmt.Sprintf("no output recorded (outcome interrupted: the process ended while the call ran; found at %s); its effect may be partial", rec.InterruptedAt.Format(time.RFC3339)), nil
		}
		return textSource(""), "no output recorded", nil
	}
	w, err := result.Decode(raw)
	if err != nil {
		return viewSource{}, "", tool.Errorf(tool.Execution, "the record of %q is unreadable: %w", rec.ToolCallID, err)
	}
	if part != "result" {
		if p, ok := fullOutputPath(v.o.FullOutputDir, w); ok {
			if f, err := os.Open(p); err == nil {
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					return viewSource{r: f, n: fi.Size(), f: f}, "full output file of " + rec.Tool + " (raw bytes as produced)", nil
				}
				f.Close()
			}
		}
		if src, ok := payloadOutput(ctx, v.st, rec, w); ok { // another process's call
			return src, "full output of " + rec.Tool + " kept in the store (raw bytes as produced)", nil
		}
	}
	return textSource(w.Text()), "output text", nil
}

// partialOutput opens the full output file of a call that has no final
// record (running, or interrupted by its process's end): the file its tool
// declares it writes while the call runs (tool.Tool.OutputFile; execute:
// <FullOutputDir>/<task>/<toolCallId>.log, ids as safe file names), when
// it lies inside FullOutputDir.
func (v *viewer) partialOutput(rec *store.Record) (viewSource, bool) {
	if v.o.FullOutputDir == "" || v.o.Tool == nil {
		return viewSource{}, false
	}
	t, ok := v.o.Tool(rec.Tool)
	if !ok {
		return viewSource{}, false
	}
	p := t.OutputFile(rec.TaskID, rec.ToolCallID)
	if p == "" || !inside(v.o.FullOutputDir, p) {
		return viewSource{}, false
	}
	f, err := os.Open(p)
	if err != nil {
		return viewSource{}, false
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		return viewSource{r: f, n: fi.Size(), f: f}, true
	}
	f.Close()
	return viewSource{}, false
}

// fullOutputPath is the full output file a result names in its evidence
// (tool.EvidenceFullOutputPath), when it lies inside dir. Evidence is
// written by aibuddy's own tools and the MCP client (an upstream server
// cannot set this key), and the file must lie in aibuddy's own folder.
func fullOutputPath(dir string, w result.Wire) (string, bool) {
	if dir == "" {
		return "", false
	}
	p, ok := w.Evidence[tool.EvidenceFullOutputPath].(string)
	if !ok || !inside(dir, p) {
		return "", false
	}
	return p, true
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

func (v *viewer) limit(in viewInput) int {
	if in.Limit != nil && *in.Limit < v.o.MaxChars {
		return *in.Limit
	}
	return v.o.MaxChars
}

// slice returns characters offset..offset+limit of src, shortened to the
// token bound, in one streaming pass that also counts the totals.
func (v *viewer) slice(rec *store.Record, src viewSource, label string, in viewInput, next map[string]any) (*tool.Result, error) {
	off := 0
	if in.Offset != nil {
		off = *in.Offset
	}
	st, r, err := sliceText(src.r, src.n, off, v.limit(in))
	if err != nil {
		return nil, tool.Errorf(tool.Execution, "reading the output of %q failed: %w", rec.ToolCallID, err).WithHint("retry later")
	}
	total := st.chars
	off = min(off, total)
	end := off + len(r)
	for end > off {
		n := v.o.Counter(string(r[:end-off]))
		if n <= v.o.MaxTokens {
			break
		}
		end = off + min((end-off)*v.o.MaxTokens*19/(n*20), (end-off)-1)
	}
	body := string(r[:end-off])
	var h strings.Builder
	fmt.Fprintf(&h, "view_tool_call: toolCallId=%s · tool=%s · outcome=%s\n", rec.ToolCallID, rec.Tool, rec.Outcome)
	fmt.Fprintf(&h, "source: %s (%s in %s)\n", label, plural(total, "character", "characters"), plural(st.lines(), "line", "lines"))
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
	return tool.TextWith(h.String(), tool.Evidence{
		"tool_call_id": rec.ToolCallID, "source": label, "total_chars": total,
		"offset": off, "end": end, "next_offset": nextOff,
	}), nil
}

// grep lists the lines of src matching in.Pattern, each with its number
// (lineBase plus its place in src) and cut to 300 characters around the
// first match, in one streaming pass.
func (v *viewer) grep(rec *store.Record, src viewSource, lineBase int, label string, in viewInput, next map[string]any) (*tool.Result, error) {
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
	var out strings.Builder
	total, shown, chars := 0, 0, 0
	stopped := -1
	srcChars, srcLines := 0, 0
	err = eachLine(src.r, src.n, func(no int, line []byte, long *io.SectionReader, lineChars, withNL int) error {
		srcChars += withNL
		srcLines = no
		var loc []int
		if long == nil {
			if !re.Match(line) {
				return nil
			}
		} else if loc = re.FindReaderIndex(bufio.NewReaderSize(long, scanChunk)); loc == nil {
			return nil
		}
		total++
		if total <= skip || stopped >= 0 {
			return nil
		}
		if long == nil {
			loc = re.FindIndex(line)
		}
		var s string
		if lineChars > 300 {
			var cut string
			start := max(loc[0]-100, 0)
			if long == nil {
				for start > 0 && !utf8.RuneStart(line[start]) {
					start--
				}
				r := []rune(string(line[start:]))
				cut = string(r[:min(300, len(r))])
			} else {
				at, err := runeStartBefore(long, int64(start))
				if err != nil {
					return err
				}
				start = int(at)
				b := make([]byte, min(int64(300*utf8.UTFMax+utf8.UTFMax), long.Size()-at))
				if _, err := long.ReadAt(b, at); err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				r := []rune(string(b))
				cut = string(r[:min(300, len(r))])
			}
			s = fmt.Sprintf("[line of %s characters; showing from byte %s] %s…", num(lineChars), num(start), cut)
		} else {
			s = string(line)
		}
		entry := fmt.Sprintf("%d: %s\n", lineBase+no, s)
		ec := utf8.RuneCountInString(entry)
		if shown >= maxMatches || chars+ec > v.o.MaxChars || v.o.Counter(out.String()+entry) > v.o.MaxTokens {
			stopped = total - 1
			return nil
		}
		out.WriteString(entry)
		chars += ec
		shown++
		return nil
	})
	if err != nil {
		return nil, tool.Errorf(tool.Execution, "reading the output of %q failed: %w", rec.ToolCallID, err).WithHint("retry later")
	}
	var h strings.Builder
	fmt.Fprintf(&h, "view_tool_call: toolCallId=%s · tool=%s · outcome=%s\n", rec.ToolCallID, rec.Tool, rec.Outcome)
	fmt.Fprintf(&h, "source: %s (%s in %s)\n", label, plural(srcChars, "character", "characters"), plural(srcLines, "line", "lines"))
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
	return tool.TextWith(h.String(), tool.Evidence{
		"tool_call_id": rec.ToolCallID, "source": label, "total_chars": srcChars,
		"matches": total, "offset": skip, "next_offset": nextOff,
	}), nil
}

func num64(n int64) string { return thousands.Sprintf("%d", n) }
