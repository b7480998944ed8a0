package localsandbox

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// candidates explains why old (line endings already adapted) does not occur
// in norm, naming the closest lines: first the tolerant matches that would
// have succeeded (line-number prefixes, whitespace, typographic quotes,
// letter case), then the most similar line. They are hints for the model;
// Edit never applies a tolerant match.
func candidates(norm []byte, old string) []string {
	fileLines := strings.Split(string(norm), "\n")
	oldLines := strings.Split(old, "\n")
	if len(oldLines) > 1 && oldLines[len(oldLines)-1] == "" {
		oldLines = oldLines[:len(oldLines)-1]
	}
	var out []string
	add := func(s string) {
		if len(out) < maxCandidates {
			out = append(out, s)
		}
	}

	if stripped, ok := stripLineNumbers(oldLines); ok && strings.Contains(string(norm), stripped) {
		add("old_string starts its lines with line-number prefixes copied from read_file output; drop them and the text matches exactly")
	}
	for _, w := range findWindows(fileLines, oldLines, squashSpace) {
		add(fmt.Sprintf("%s match if whitespace is ignored; %s", lineRange(w), indentNote(fileLines[w[0]:w[1]], oldLines)))
	}
	if len(out) == 0 {
		fold := func(s string) string { return squashSpace(foldTypography(s)) }
		for _, w := range findWindows(fileLines, oldLines, fold) {
			add(fmt.Sprintf("%s match if typographic quotes, dashes and spaces are treated as ASCII; %s; copy the file's characters exactly",
				lineRange(w), typographyNote(strings.Join(fileLines[w[0]:w[1]], "\n"), old)))
		}
	}
	if len(out) == 0 {
		lower := func(s string) string { return strings.ToLower(squashSpace(s)) }
		for _, w := range findWindows(fileLines, oldLines, lower) {
			add(fmt.Sprintf("%s match if letter case is ignored", lineRange(w)))
		}
	}
	if len(out) == 0 {
		if n, score := closestLine(fileLines, oldLines); n >= 0 {
			add(fmt.Sprintf("no exact match; the line most like the first line of old_string is line %d (%d%% similar): %q",
				n+1, int(score*100), clipString(fileLines[n], maxCandidateChars)))
		} else {
			add("no exact match and no similar line; read the file again before editing")
		}
	}
	return out
}

// findWindows returns [start, end) line windows of fileLines matching
// oldLines under norm: inner lines equal, the first line a suffix, the last
// a prefix (a one-line old string: contained).
func findWindows(fileLines, oldLines []string, norm func(string) string) [][2]int {
	n := len(oldLines)
	if n == 0 || n > len(fileLines) {
		return nil
	}
	no := make([]string, n)
	blank := true
	for i, l := range oldLines {
		no[i] = norm(l)
		if no[i] != "" {
			blank = false
		}
	}
	if blank {
		return nil
	}
	nf := make([]string, len(fileLines))
	for i, l := range fileLines {
		nf[i] = norm(l)
	}
	var out [][2]int
	for i := 0; i+n <= len(nf) && len(out) < maxCandidates; i++ {
		ok := true
		for j := 0; j < n && ok; j++ {
			fl, ol := nf[i+j], no[j]
			switch {
			case n == 1:
				ok = strings.Contains(fl, ol)
			case j == 0:
				ok = strings.HasSuffix(fl, ol)
			case j == n-1:
				ok = strings.HasPrefix(fl, ol)
			default:
				ok = fl == ol
			}
		}
		if ok {
			out = append(out, [2]int{i, i + n})
		}
	}
	return out
}

func lineRange(w [2]int) string {
	if w[1]-w[0] == 1 {
		return fmt.Sprintf("line %d would", w[0]+1)
	}
	return fmt.Sprintf("lines %d-%d", w[0]+1, w[1])
}

func squashSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// indentNote names the indentation difference between the file's lines and
// old_string's lines.
func indentNote(fileLines, oldLines []string) string {
	f, o := indentKind(fileLines), indentKind(oldLines)
	switch {
	case f == "tabs" && o != "tabs":
		return "the file indents with TAB (0x09), old_string with " + orWord(o, "no indentation")
	case f == "spaces" && o == "tabs":
		return "the file indents with spaces, old_string with TAB (0x09)"
	case f == "mixed":
		return "the file indents with a mix of TAB (0x09) and spaces"
	}
	return "spaces inside or at the ends of the lines differ"
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func indentKind(lines []string) string {
	tabs, spaces := 0, 0
	for _, l := range lines {
		ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if strings.Contains(ind, "\t") {
			tabs++
		} else if ind != "" {
			spaces++
		}
	}
	switch {
	case tabs > 0 && spaces > 0:
		return "mixed"
	case tabs > 0:
		return "tabs"
	case spaces > 0:
		return "spaces"
	}
	return ""
}

var typography = map[rune]string{
	'\u2018': "'", '\u2019': "'", '\u201A': "'", '\u201B': "'", '\u2032': "'",
	'\u201C': `"`, '\u201D': `"`, '\u201E': `"`, '\u201F': `"`, '\u2033': `"`,
	'\u2013': "-", '\u2014': "-", '\u2212': "-", '\u2026': "...",
	'\u00A0': " ", '\u2009': " ", '\u202F': " ", '\u200B': "",
}

func foldTypography(s string) string {
	var b strings.Builder
	for _, r := range s {
		if t, ok := typography[r]; ok {
			b.WriteString(t)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// typographyNote lists the typographic characters on either side.
func typographyNote(file, old string) string {
	list := func(s string) string {
		seen := map[rune]bool{}
		var parts []string
		for _, r := range s {
			if _, ok := typography[r]; ok && !seen[r] {
				seen[r] = true
				parts = append(parts, fmt.Sprintf("%c (U+%04X)", r, r))
			}
		}
		return strings.Join(parts, ", ")
	}
	f, o := list(file), list(old)
	switch {
	case f != "" && o == "":
		return "the file has " + f
	case f == "" && o != "":
		return "old_string has " + o + ", the file plain ASCII"
	}
	return "the file has " + orWord(f, "none") + "; old_string has " + orWord(o, "none")
}

// lineNumberPrefix matches a read_file style line-number prefix.
var lineNumberPrefix = regexp.MustCompile(`^\s*\d+(\t|→|\||:\s| )`)

// stripLineNumbers removes line-number prefixes when every non-blank line
// carries one.
func stripLineNumbers(lines []string) (string, bool) {
	out := make([]string, len(lines))
	any := false
	for i, l := range lines {
		loc := lineNumberPrefix.FindStringIndex(l)
		if loc == nil {
			if strings.TrimSpace(l) != "" {
				return "", false
			}
			out[i] = l
			continue
		}
		any = true
		out[i] = l[loc[1]:]
	}
	return strings.Join(out, "\n"), any
}

// closestLine finds the file line most similar to the first non-blank line
// of old (bigram Dice coefficient on trimmed text, at least 0.5).
func closestLine(fileLines, oldLines []string) (int, float64) {
	target := ""
	for _, l := range oldLines {
		if t := strings.TrimSpace(l); t != "" {
			target = t
			break
		}
	}
	if target == "" {
		return -1, 0
	}
	tb := bigrams(clipString(target, 512))
	best, bestScore := -1, 0.5
	for i, l := range fileLines[:min(len(fileLines), 50000)] {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if sc := dice(tb, bigrams(clipString(t, 512))); sc > bestScore {
			best, bestScore = i, sc
		}
	}
	return best, bestScore
}

func bigrams(s string) map[[2]rune]int {
	m := map[[2]rune]int{}
	var prev rune = -1
	for _, r := range s {
		r = unicode.ToLower(r)
		if prev >= 0 {
			m[[2]rune{prev, r}]++
		}
		prev = r
	}
	return m
}

func dice(a, b map[[2]rune]int) float64 {
	na, nb, both := 0, 0, 0
	for k, v := range a {
		na += v
		both += min(v, b[k])
	}
	for _, v := range b {
		nb += v
	}
	if na+nb == 0 {
		return 0
	}
	return 2 * float64(both) / float64(na+nb)
}

// clipString cuts s to n characters, marking the cut with "…".
func clipString(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string(clipChars([]byte(s), n)) + "…"
}
