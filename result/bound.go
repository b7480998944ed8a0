package result

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/tool"
)

// DefaultMaxModelChars is the default bound of a result's model
// projection, in characters (runes) of text: the seed's 30,000-character
// output cap, the same number execute applies to its own output.
const DefaultMaxModelChars = 30000

// Bound returns the model projection of res bounded to maxChars characters
// (runes) of text (case BH-049: a single result larger than the context
// window). A result whose text blocks together hold at most maxChars
// characters is returned as is (the same pointer). Otherwise the copy
// keeps the first and last maxChars/2 characters of the result's text and
// replaces the middle with [tool.CutMarker], under the [tool.Cut] notice
// as its first line (BH-047: one fixed place, read before the payload, in
// the format execute and read_file use too):
//
//	[cut by aibuddy at the 30,000-character result bound: 1,200,000 characters in 1,200 lines produced; 30,000 characters shown (first 15,000 and last 15,000); 1,170,000 characters omitted (lines 16-1,186); recover them with view_tool_call {"toolCallId":"call_1","part":"result","lines":"16-1186"} (or "pattern" to search them)]
//
// Positions and line numbers refer to the result's text as
// tool.Result.AllText joins it, which is what view_tool_call's part
// "result" reads from the record, so the named line range (whole lines)
// covers the omitted characters exactly. Image blocks are kept unchanged
// and in order; text blocks wholly inside the omitted middle are dropped.
// The copy's evidence gains model_total_chars, model_shown_chars and
// model_omitted_chars; the rest of the evidence is kept.
//
// recoverable says whether the raw output is in a record under id; when
// false the marker says it cannot be recovered and how to narrow the call
// instead. A result whose own tool already capped it says so with
// evidence shown_chars (execute does); when that number is within
// maxChars the result passes unchanged, so a tool's marker is never
// doubled. maxChars <= 0 means [DefaultMaxModelChars]. Stage: Projection.
func Bound(res *tool.Result, id string, maxChars int, recoverable bool) *tool.Result {
	if res == nil {
		return res
	}
	if maxChars <= 0 {
		maxChars = DefaultMaxModelChars
	}
	textChars := 0
	for _, c := range res.Content {
		if c.Type == tool.TextContent || c.Type == "" {
			textChars += utf8.RuneCountInString(c.Text)
		}
	}
	if textChars <= maxChars {
		return res
	}
	if n, ok := evidenceInt(res.Evidence[tool.EvidenceShownChars]); ok && n >= 0 && n <= int64(maxChars) {
		return res
	}

	// The coordinates are those of res.AllText(): blocks joined with "\n",
	// an image as its "[image MIME, N bytes]" placeholder.
	type span struct{ start, end int } // runes of AllText
	spans := make([]span, len(res.Content))
	joined := res.AllText()
	pos := 0
	for i, c := range res.Content {
		n := 0
		if c.Type == tool.TextContent || c.Type == "" {
			n = utf8.RuneCountInString(c.Text)
		} else {
			n = utf8.RuneCountInString(fmt.Sprintf("[%s %s, %d bytes]", c.Type, c.MIMEType, len(c.Data)))
		}
		spans[i] = span{pos, pos + n}
		pos += n + 1
	}
	total := utf8.RuneCountInString(joined)
	headN, tailN := maxChars/2, maxChars-maxChars/2
	cutFrom, cutTo := headN, total-tailN // omitted: runes [cutFrom, cutTo)
	omitted := cutTo - cutFrom

	runes := []rune(joined)
	lineAt := func(p int) int { return 1 + strings.Count(string(runes[:p]), "\n") }
	firstLine, lastLine := lineAt(cutFrom), lineAt(cutTo-1)
	totalLines := strings.Count(joined, "\n")
	if !strings.HasSuffix(joined, "\n") {
		totalLines++
	}
	how := "they cannot be recovered (the raw output could not be recorded): run the call again narrower (a smaller range, a filter, fewer items)"
	if recoverable {
		idJSON, _ := json.Marshal(id)
		lineArg := strconv.Itoa(firstLine)
		if lastLine > firstLine {
			lineArg += "-" + strconv.Itoa(lastLine)
		}
		how = fmt.Sprintf(`recover them with view_tool_call {"toolCallId":%s,"part":"result","lines":"%s"} (or "pattern" to search them)`, idJSON, lineArg)
	}
	header := tool.Cut{
		By: "aibuddy", Bound: "the " + count(int64(maxChars)) + "-character result bound",
		TotalChars: int64(total), TotalLines: int64(totalLines),
		HeadChars: int64(headN), TailChars: int64(tailN),
		OmittedChars: int64(omitted), OmittedFirst: int64(firstLine), OmittedLast: int64(lastLine),
		Next: how,
	}.Notice() + "\n"
	marker := tool.CutMarker(int64(omitted), int64(firstLine), int64(lastLine))

	out := &tool.Result{IsError: res.IsError, Stage: res.Stage, Evidence: maps.Clone(res.Evidence)}
	if out.Evidence == nil {
		out.Evidence = tool.Evidence{}
	}
	out.Evidence[tool.EvidenceModelTotalChars] = total
	out.Evidence[tool.EvidenceModelShownChars] = headN + tailN
	out.Evidence[tool.EvidenceModelOmittedChars] = omitted
	out.Content = append(out.Content, tool.Content{Type: tool.TextContent, Text: header})
	marked := false
	for i, c := range res.Content {
		s := spans[i]
		if c.Type != tool.TextContent && c.Type != "" {
			if !marked && s.start >= cutFrom {
				out.Content = append(out.Content, tool.Content{Type: tool.TextContent, Text: marker})
				marked = true
			}
			out.Content = append(out.Content, c) // images untouched
			continue
		}
		r := runes[s.start:s.end]
		var b strings.Builder
		if s.start < cutFrom {
			b.WriteString(string(r[:min(s.end, cutFrom)-s.start]))
		}
		if !marked && s.end > cutFrom {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteString("\n")
			}
			b.WriteString(marker)
			marked = true
			if s.end > cutTo {
				b.WriteString("\n")
			}
		}
		if s.end > cutTo {
			b.WriteString(string(r[max(s.start, cutTo)-s.start:]))
		}
		if b.Len() > 0 {
			out.Content = append(out.Content, tool.Content{Type: tool.TextContent, Text: b.String()})
		}
	}
	if !marked {
		out.Content = append(out.Content, tool.Content{Type: tool.TextContent, Text: marker})
	}
	// The header is its own block so the head keeps its first character
	// where the tool put it; join it with the first text block.
	if len(out.Content) > 1 && out.Content[1].Type == tool.TextContent {
		out.Content[1].Text = header + out.Content[1].Text
		out.Content = out.Content[1:]
	}
	return out
}

// evidenceInt reads an evidence number of any Go numeric type (or a
// json.Number).
func evidenceInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case uint64:
		return int64(n), true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// count formats n with thousands separators: 1200000 -> "1,200,000".
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// plural returns "1 line" or "2,000 lines".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return count(n) + " " + many
}
