package tool

import (
	"regexp"
	"strconv"
	"strings"
)

// Cut says that a result shows less than there is: who cut it and at which
// bound, what there is in all, what is shown, what is left out, and how to
// get the rest. [Cut.Notice] renders the one notice format of every cut
// result (shell output cut by execute, any result cut by the result bound,
// a read_file window that stops before the end of the file). A cut result
// carries the notice as its first line, the fixed place a model reads
// before the payload (case BH-047):
//
//	[cut by WHO at BOUND: TOTAL; SHOWN shown[ (HOW)]; OMITTED omitted[ (LINES)]; NEXT]
//
// for example
//
//	[cut by execute at the 30,000-character output cap: 79,940 characters in 3,001 lines produced; 30,000 characters shown (first 15,000 and last 15,000); 49,940 characters omitted (lines 582-2,446); recover them with view_tool_call {"id":"c1","lines":"582-2446"}]
//	[cut by aibuddy at the 30,000-character result bound: 1,200,000 characters in 1,200 lines produced; 30,000 characters shown (first 15,000 and last 15,000); 1,170,000 characters omitted (lines 16-1,186); recover them with view_tool_call {"toolCallId":"call_1","part":"result","lines":"16-1186"}]
//	[cut by read_file at the 30,000-character result bound: the file has 2,000 lines; lines 1-342 shown; lines 343-2,000 omitted; continue with read_file {"path":"notes.md","offset":343}]
//
// Counts are characters (Unicode code points) and 1-based lines, written
// with thousands separators; a line range is inclusive. A result whose
// middle is omitted also holds [CutMarker] where the gap is. [ParseCut]
// reads a notice back into its parts.
type Cut struct {
	// By is the component that cut: "execute", "read_file", "aibuddy".
	By string
	// Bound is the bound that decided, e.g. "the 30,000-character result
	// bound" or "the 262,144-byte bound per call".
	Bound string

	// TotalChars and TotalLines are what there is in all; -1 when not
	// known. When File is set the totals are a file's ("the file has
	// 2,000 lines"; with TotalLines -1 "the file has more than L lines",
	// L the last line shown), otherwise output produced ("79,940
	// characters in 3,001 lines produced").
	TotalChars, TotalLines int64
	File                   bool

	// HeadChars and TailChars, when either is set, are the characters
	// shown before and after an omitted middle. Otherwise the result is a
	// window of lines ShownFirst..ShownLast.
	HeadChars, TailChars  int64
	ShownFirst, ShownLast int64

	// OmittedChars are the characters left out (0 when not known, as for a
	// file window); OmittedFirst..OmittedLast the lines they touch
	// (OmittedLast 0: to the end, its number not known).
	OmittedChars              int64
	OmittedFirst, OmittedLast int64

	// Next is how to get what was omitted, a clause that begins with a verb
	// ("recover them with view_tool_call {...}", "continue with read_file
	// {...}"), or why it cannot be recovered and what to do instead.
	Next string
}

// Notice renders c in the one cut-notice format, on one line, without a
// line ending.
func (c Cut) Notice() string {
	var b strings.Builder
	b.WriteString("[cut by ")
	b.WriteString(c.By)
	b.WriteString(" at ")
	b.WriteString(c.Bound)
	b.WriteString(": ")
	switch {
	case c.File && c.TotalLines >= 0:
		b.WriteString("the file has " + cutPlural(c.TotalLines, "line", "lines"))
	case c.File:
		b.WriteString("the file has more than " + cutPlural(c.ShownLast, "line", "lines"))
	case c.TotalLines >= 0:
		b.WriteString(cutPlural(c.TotalChars, "character", "characters") + " in " + cutPlural(c.TotalLines, "line", "lines") + " produced")
	default:
		b.WriteString(cutPlural(c.TotalChars, "character", "characters") + " produced")
	}
	b.WriteString("; ")
	if c.HeadChars > 0 || c.TailChars > 0 {
		b.WriteString(cutPlural(c.HeadChars+c.TailChars, "character", "characters") +
			" shown (first " + cutCount(c.HeadChars) + " and last " + cutCount(c.TailChars) + ")")
	} else {
		b.WriteString(cutLines(c.ShownFirst, c.ShownLast))
		b.WriteString(" shown")
	}
	b.WriteString("; ")
	if c.OmittedChars > 0 {
		b.WriteString(cutPlural(c.OmittedChars, "character", "characters") + " omitted (" + cutLines(c.OmittedFirst, c.OmittedLast) + "); ")
	} else {
		b.WriteString(cutLines(c.OmittedFirst, c.OmittedLast) + " omitted; ")
	}
	b.WriteString(c.Next)
	b.WriteString("]")
	return b.String()
}

// CutMarker is the line that stands where the middle of a cut result was
// left out, e.g. "[49,940 characters omitted: lines 582-2,446]" (case
// BH-046); the result's first line is the [Cut] notice that says how to
// recover them.
func CutMarker(omittedChars, firstLine, lastLine int64) string {
	return "[" + cutPlural(omittedChars, "character", "characters") + " omitted: " + cutLines(firstLine, lastLine) + "]"
}

// CutParts are the clauses of a notice as [ParseCut] finds them: By and
// Bound, then Total, Shown and Omitted without their "shown"/"omitted"
// words (Shown "30,000 characters (first 15,000 and last 15,000)" or
// "lines 1-342", Omitted "49,940 characters (lines 582-2,446)" or "lines
// 343-2,000"), and Next.
type CutParts struct {
	By, Bound, Total, Shown, Omitted, Next string
}

var cutNoticeRE = regexp.MustCompile(`^\[cut by (\S+) at ([^:;\]]+): ([^;]+); ([^;]+?) shown((?: \([^;()]*\))?); ([^;]+?) omitted((?: \([^;()]*\))?); (.+)\]$`)

// ParseCut splits a notice line (as [Cut.Notice] renders it) into its
// parts; ok is false when line is not a cut notice.
func ParseCut(line string) (p CutParts, ok bool) {
	m := cutNoticeRE.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
	if m == nil {
		return CutParts{}, false
	}
	return CutParts{By: m[1], Bound: m[2], Total: m[3], Shown: m[4] + m[5], Omitted: m[6] + m[7], Next: m[8]}, true
}

// cutLines renders a 1-based inclusive line range: "line 7", "lines
// 16-1,186", "lines 343 to the end" (last 0).
func cutLines(first, last int64) string {
	switch {
	case last == 0:
		return "lines " + cutCount(first) + " to the end"
	case last <= first:
		return "line " + cutCount(first)
	}
	return "lines " + cutCount(first) + "-" + cutCount(last)
}

// cutPlural returns "1 line" or "2,000 lines".
func cutPlural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return cutCount(n) + " " + many
}

// cutCount formats n with thousands separators: 1200000 -> "1,200,000".
func cutCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}
