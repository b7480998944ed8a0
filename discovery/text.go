package discovery

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// splitWords splits s into lower-case words at every boundary a tool name
// or a sentence uses: anything that is not a letter or digit (space,
// punctuation, '_', '-', '.', the "__" of "<server>__<tool>"), a lower-case
// letter or digit followed by an upper-case one ("getWeather" -> get,
// weather; "co2Level" -> co2, level), and the last capital of a run of
// capitals that starts a new word ("HTMLParser" -> html, parser).
// A digit stays with the letters before it ("co2", "s3").
func splitWords(s string, out []string) []string {
	start := -1 // byte offset of the current word, -1 when none
	var prev rune
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(s[start:end]))
		}
		start = -1
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = r
			continue
		}
		if start < 0 {
			start = i
			prev = r
			continue
		}
		if unicode.IsUpper(r) {
			if unicode.IsLower(prev) || unicode.IsDigit(prev) {
				flush(i)
				start = i
			} else if unicode.IsUpper(prev) {
				// "HTMLParser": the P starts a word when a lower-case letter follows.
				if next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):]); unicode.IsLower(next) {
					flush(i)
					start = i
				}
			}
		}
		prev = r
	}
	flush(len(s))
	return out
}

// analyzer turns text into index terms: words (see splitWords), English
// stop words dropped, each word reduced to its Snowball (Porter2) English
// stem. It caches stems; the cache is filled while the index is built and
// only read afterwards, so Search is safe for concurrent use.
type analyzer struct {
	stems  map[string]string // word -> stem, "" for a stop word
	frozen bool
}

func newAnalyzer() *analyzer { return &analyzer{stems: map[string]string{}} }

// term returns the stem of one lower-case word, or "" when the word is a
// stop word or too short to carry meaning (a single letter).
func (a *analyzer) term(w string) string {
	if s, ok := a.stems[w]; ok {
		return s
	}
	var s string
	if utf8.RuneCountInString(w) > 1 && !english.IsStopWord(w) {
		s = english.Stem(w, true)
		if s == "" {
			s = w
		}
	}
	if !a.frozen {
		a.stems[w] = s
	}
	return s
}

// terms analyses text into out (stems in text order, stop words removed).
func (a *analyzer) terms(text string, out []string) []string {
	words := splitWords(text, nil)
	for _, w := range words {
		if t := a.term(w); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// segments splits a query into its sentences, so a request that asks for
// several things ("... Then ... Finally ...") is also searched one request
// at a time. Sentences end at '.', '?', '!', ';' or a line break that is
// followed by a space or the end; a '.' between two non-space characters
// ("3.5", "e.g.") does not end one.
func segments(q string) []string {
	var out []string
	start := 0
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case '.', '?', '!', ';', '\n':
			if i+1 < len(q) && q[i+1] != ' ' && q[i+1] != '\n' && q[i+1] != '"' && q[i+1] != '\'' {
				continue
			}
			if s := strings.TrimSpace(q[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(q[start:]); s != "" {
		out = append(out, s)
	}
	return out
}
