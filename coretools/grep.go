package coretools

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// grepInput is the input of grep.
type grepInput struct {
	Pattern       string   `json:"pattern"`
	Path          string   `json:"path"`
	Literal       bool     `json:"literal"`
	IgnoreCase    bool     `json:"ignore_case"`
	Include       []string `json:"include"`
	Exclude       []string `json:"exclude"`
	Context       int      `json:"context"`
	IncludeHidden bool     `json:"include_hidden"`
	NoIgnore      bool     `json:"no_ignore"`
	MaxResults    int      `json:"max_results"`
}

// maxContextLines bounds grep's context parameter.
const maxContextLines = 10

const grepSchema = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "RE2 regular expression matched against each line (no lookaround or backreferences), or plain text when literal is true."},
    "path": {"type": "string", "description": "Directory or file to search, relative to the workspace root. Default the root. A hidden directory named here is always searched."},
    "literal": {"type": "boolean", "description": "Treat pattern as plain text, not a regular expression. Default false."},
    "ignore_case": {"type": "boolean", "description": "Match case-insensitively. Default false."},
    "include": {"type": "array", "maxItems": 20, "items": {"type": "string"}, "description": "Search only files whose path (relative to path) matches one of these globs, e.g. [\"**/*.go\"]."},
    "exclude": {"type": "array", "maxItems": 20, "items": {"type": "string"}, "description": "Skip files and directories matching any of these globs."},
    "context": {"type": "integer", "minimum": 0, "maximum": %d, "description": "Lines of context to show before and after each match (0 to %d). Default 0."},
    "include_hidden": {"type": "boolean", "description": "Also search files and directories whose name starts with a dot (.git never). Default false."},
    "no_ignore": {"type": "boolean", "description": "Also search files and directories excluded by .gitignore. Default false."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Stop after this many matching lines (default and maximum %d)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

func (f *fsTools) grepTool() *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name:        "grep",
		Description: f.description("grep"),
		InputSchema: []byte(fmt.Sprintf(grepSchema, maxContextLines, maxContextLines, f.opts.SearchMaxResults, f.opts.SearchMaxResults)),
		Annotations: fsReadOnly("Search file contents"),
		Handler:     f.grep,
		Access:      tool.PathAccess(tool.AccessRead, "path"),
	})
}

func (f *fsTools) grep(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[grepInput](call)
	if err != nil {
		return nil, err
	}
	in.Path = fsPathArg(in.Path)
	maxResults := fsCapAt(in.MaxResults, f.opts.SearchMaxResults)
	res, err := f.search(ctx, "grep", sandbox.SearchRequest{
		Mode: sandbox.ModeGrep, Pattern: in.Pattern, Path: in.Path,
		Include: in.Include, Exclude: in.Exclude, Literal: in.Literal, IgnoreCase: in.IgnoreCase,
		IncludeHidden: in.IncludeHidden, NoIgnore: in.NoIgnore, MaxResults: maxResults,
		MaxLineChars: f.opts.SearchMaxLineChars, ContextLines: min(max(in.Context, 0), maxContextLines),
	})
	if err != nil {
		return nil, err
	}
	body, shown := formatMatches(res.Matches, grepRegexp(in), f.opts.SearchMaxLineChars, f.opts.MaxOutputChars)
	sum := searchSummary{
		what: "matches", one: "match", found: len(res.Matches), shown: shown, max: maxResults,
		outChars: f.opts.MaxOutputChars, timeout: f.opts.SearchTimeout, noIgnore: in.NoIgnore, res: res,
	}
	files := map[string]bool{}
	for _, m := range res.Matches {
		files[m.Path] = true
	}
	head := fmt.Sprintf("%s in %s for %q under %s", fsPlural(len(res.Matches), "match", "matches"),
		fsPlural(len(files), "file", "files"), in.Pattern, fsDisplayPath(in.Path))
	if len(res.Matches) == 0 {
		head = fmt.Sprintf("0 matches for %q under %s", in.Pattern, fsDisplayPath(in.Path))
	}
	ev := sum.evidence()
	ev["files"] = len(files)
	return tool.TextWith(sum.render(head, body), ev), nil
}

// grepRegexp compiles the search the way the sandbox runs it, to find the
// match when a line needs clipping here. It returns nil when the pattern
// does not compile (the sandbox reports that).
func grepRegexp(in grepInput) *regexp.Regexp {
	p := in.Pattern
	if in.Literal {
		p = regexp.QuoteMeta(p)
	}
	if in.IgnoreCase {
		p = "(?i)" + p
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil
	}
	return re
}

// formatMatches renders matches grouped by file, in the order given
// (newest file first), ripgrep --heading style: the path on its own line,
// then "12:text" for a matching line and "11-text" for context, with "--"
// between separated groups of one file. A line that is both context and a
// match is shown once, as a match.
//
// A line longer than lineChars characters (or one the sandbox already
// clipped) is kept as a window of lineChars characters around the match and
// ends with "…[line N clipped: 400 of 100,023 characters shown]" (case
// BH-019). The whole output stays within outChars characters; it returns the
// text and the number of matches shown.
func formatMatches(ms []sandbox.Match, re *regexp.Regexp, lineChars, outChars int) (string, int) {
	type row struct {
		text  string
		chars int
		match bool
	}
	out := fsLimiter{max: outChars}
	shown := 0
	for i := 0; i < len(ms); {
		j := i
		for j < len(ms) && ms[j].Path == ms[i].Path {
			j++
		}
		rows := map[int]row{}
		for _, m := range ms[i:j] {
			for _, c := range append(append([]sandbox.Line(nil), m.Before...), m.After...) {
				if _, ok := rows[c.Number]; !ok {
					rows[c.Number] = row{text: c.Text, chars: c.Chars}
				}
			}
			rows[m.Line] = row{text: m.Text, chars: m.Chars, match: true}
		}
		nums := slices.Sorted(maps.Keys(rows))
		if i > 0 && !out.line("") {
			break
		}
		if !out.line(fsShowPath(ms[i].Path)) {
			break
		}
		full := false
		for k, n := range nums {
			if k > 0 && n > nums[k-1]+1 && !out.line("--") {
				full = true
				break
			}
			r := rows[n]
			sep, text, shownChars := "-", "", 0
			if r.match {
				sep = ":"
				text, shownChars = clipAround(r.text, re, lineChars)
			} else {
				text, _ = fsClip(r.text, lineChars)
				shownChars = fsRunes(text)
			}
			line := strconv.Itoa(n) + sep + text
			if chars := max(r.chars, fsRunes(r.text)); shownChars < chars {
				line += fmt.Sprintf("…[line %d clipped: %s of %s characters shown]", n, fsCount(int64(shownChars)), fsCount(int64(chars)))
			}
			if !out.line(line) {
				full = true
				break
			}
			if r.match {
				shown++
			}
		}
		if full {
			break
		}
		i = j
	}
	return strings.TrimRight(out.String(), "\n"), shown
}

// clipAround keeps width characters of s: from the start when the match
// (or, without re, the start) fits in them, otherwise a window that starts a
// quarter of width before the match, marked with a leading "…". It returns
// the text and how many characters of s it holds.
func clipAround(s string, re *regexp.Regexp, width int) (string, int) {
	if fsRunes(s) <= width {
		return s, fsRunes(s)
	}
	start := 0
	if re != nil {
		if loc := re.FindStringIndex(s); loc != nil {
			pre := fsRunes(s[:loc[0]])
			if pre+fsRunes(s[loc[0]:loc[1]]) > width {
				start = max(0, pre-width/4)
			}
		}
	}
	i, n := 0, 0
	for i = range s {
		if n == start {
			break
		}
		n++
	}
	window, _ := fsClip(s[i:], width)
	if start > 0 {
		return "…" + window, fsRunes(window)
	}
	return window, fsRunes(window)
}
