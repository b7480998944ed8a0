package localsandbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/aibuddy/aibuddy/sandbox"
)

// trickyPieces are the bits random lines and patterns are made of: ASCII
// letters with non-ASCII case partners (k and U+212A KELVIN SIGN, s and
// U+017F LONG S), other folds (ß/ẞ, σ/ς/Σ, é/É), a lone invalid byte, a
// truncated Kelvin sign, U+FFFD itself, regexp metacharacters and spaces.
var trickyPieces = []string{
	"k", "K", "\u212a", "s", "S", "\u017f", "ß", "ẞ", "σ", "ς", "Σ", "é", "É", "e", "E",
	"\xff", "\xe2\x84", "\ufffd", ".", "(", ")", "*", "|", " ", "\t", "_", "x", "X", "ctx", "Context", "0", "9",
}

// trickyPatterns name the cases the extraction must get right.
var trickyPatterns = []string{
	`k`, `K`, "\u212a", `s`, `ſ`, `ks`, `KS`, "\u212as", `ß`, `σ`, `Σ`, `é`, `ctx`, `Context`, `context\.Context`,
	`func \w+\(ctx`, `[kK]`, `[k\x{212a}]`, `(?i)[a-c]x`, `ctx|Context`, `k|s|x`, `(ctx)+`, `(?:ks){2,3}`,
	`x*Context`, `Cont?ext`, `^ctx`, `ctx$`, `\bctx\b`, `\Actx`, `ctx\z`, `c.x`, `[^x]ctx`, "\ufffd", `.`,
	`(?s)k.s`, `k\ns`, `[\n k]s`, `(?i:k)S`, `(?-i:k)s`, `x(?:|k)`, `e+É`, `(ß|ẞ)x`, `\Qk.s\E`, `\x{FFFD}x`,
	`[[:upper:]]x`, `\pLx`, `k{0}x`, `(k|)s`, `a^b`, `$x`, `ctx.*Context|k+s`,
}

func randomLine(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteString(trickyPieces[rng.IntN(len(trickyPieces))])
	}
	return b.String()
}

// randomPattern builds a small regular expression over the tricky pieces.
func randomPattern(rng *rand.Rand, depth int) string {
	atom := func() string {
		switch rng.IntN(6) {
		case 0:
			return "[" + regexp.QuoteMeta(trickyPieces[rng.IntN(len(trickyPieces))]) + regexp.QuoteMeta(trickyPieces[rng.IntN(len(trickyPieces))]) + "]"
		case 1:
			return []string{`.`, `\w`, `\s`, `\b`, `^`, `$`, `[^k]`, `\pL`}[rng.IntN(8)]
		case 2:
			if depth > 0 {
				return "(" + randomPattern(rng, depth-1) + ")"
			}
		}
		return regexp.QuoteMeta(trickyPieces[rng.IntN(len(trickyPieces))])
	}
	var b strings.Builder
	for i := range 1 + rng.IntN(4) {
		if i > 0 && rng.IntN(6) == 0 {
			b.WriteString("|")
		}
		b.WriteString(atom())
		b.WriteString([]string{"", "", "", "*", "+", "?", "{2}", "{1,2}"}[rng.IntN(8)])
	}
	if rng.IntN(3) == 0 {
		return "(?i)" + b.String()
	}
	return b.String()
}

// TestPrefilterNeverMissesAMatch: every line the regular expression matches
// holds a needle of its prefilter, for the tricky patterns (as given,
// case-insensitive, and quoted as literal text) and random ones, on random
// lines of case-folding runes, invalid bytes and metacharacters.
func TestPrefilterNeverMissesAMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var exprs []string
	for _, p := range trickyPatterns {
		exprs = append(exprs, p, "(?i)"+p, regexp.QuoteMeta(p), "(?i)"+regexp.QuoteMeta(p))
	}
	for range 3000 {
		exprs = append(exprs, randomPattern(rng, 2))
	}
	lines := make([]string, 4000)
	for i := range lines {
		lines[i] = randomLine(rng)
	}
	withNeedles := 0
	for _, expr := range exprs {
		re, err := regexp.Compile(expr)
		if err != nil {
			continue
		}
		pf := newPrefilter(expr)
		if pf == nil {
			continue
		}
		withNeedles++
		checked := lines
		// Lines built from the pattern's own pieces match far more often.
		for range 200 {
			if s := re.FindString(randomLine(rng) + expr + randomLine(rng)); s != "" {
				checked = append(checked, s, "x"+s+"y")
			}
		}
		for _, line := range checked {
			if re.MatchString(line) && !pf.contains([]byte(line)) {
				t.Fatalf("pattern %q matches line %q but its prefilter finds no needle in it (needles %v)", expr, line, pf.describe())
			}
		}
	}
	if withNeedles < len(exprs)/3 {
		t.Errorf("only %d of %d patterns got a prefilter; the test exercises too little", withNeedles, len(exprs))
	}
}

// TestPrefilterFindsFoldedNeedles: the needles are the regexp's own case
// folds, so "(?i)k" looks for the Kelvin sign too and "(?i)ſ" for s and S.
func TestPrefilterFindsFoldedNeedles(t *testing.T) {
	cases := []struct {
		expr string
		yes  []string
		no   []string
	}{
		{"(?i)kelvin", []string{"KELVIN", "\u212aelvin", "keLviN"}, []string{"kelvi", "k elvin", "\xe2\x84elvin"}},
		{"(?i)ſ", []string{"s", "S", "ſ"}, []string{"ß", "x"}},
		{"(?i)context\\.Context", []string{"CONTEXT.context", "x context.Context y"}, []string{"contextXContext", "context.Contex"}},
		{`func \w+\(ctx context\.Context`, []string{"func f(ctx context.Context"}, []string{"func f(ctx context.Contex", "(ctx context"}},
		{"(?i)ß", []string{"ß", "ẞ"}, []string{"ss", "SS"}},
		{`TODO|FIXME`, []string{"a TODO", "FIXME b"}, []string{"todo", "fixme"}},
	}
	for _, c := range cases {
		pf := newPrefilter(c.expr)
		if pf == nil {
			t.Fatalf("%q: no prefilter", c.expr)
		}
		re := regexp.MustCompile(c.expr)
		for _, s := range c.yes {
			if !pf.contains([]byte(s)) || !re.MatchString(s) {
				t.Errorf("%q on %q: prefilter %v, regexp %v; want both true", c.expr, s, pf.contains([]byte(s)), re.MatchString(s))
			}
		}
		for _, s := range c.no {
			if pf.contains([]byte(s)) {
				t.Errorf("%q on %q: prefilter finds a needle; want none", c.expr, s)
			}
		}
	}
	for _, expr := range []string{`.*`, `\w+`, `a*`, `(?s).`, `k|\w`, `x?`} {
		if newPrefilter(expr) != nil {
			t.Errorf("%q: got a prefilter; an expression that can match without any literal must have none", expr)
		}
	}
}

// TestPrefilteredSearchEqualsRegexp: a search through the prefilter reports
// exactly what the plain regular expression reports line by line (files,
// line numbers, texts, totals), over random files of tricky runes, with
// and without ignore_case and literal.
func TestPrefilteredSearchEqualsRegexp(t *testing.T) {
	ws := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 80 {
		var b strings.Builder
		for range rng.IntN(200) {
			b.WriteString(randomLine(rng))
			b.WriteString([]string{"\n", "\n", "\n", "\n\n", ""}[rng.IntN(5)])
		}
		if i%9 == 0 {
			b.WriteString("ctx\r\nContext\r\n") // CR files take the line path
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fast, err := New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain.lineByLine, plain.noPrefilter = true, true
	patterns := append([]string(nil), trickyPatterns...)
	for range 150 {
		patterns = append(patterns, randomPattern(rng, 1))
	}
	for _, p := range patterns {
		if _, err := regexp.Compile(p); err != nil {
			continue
		}
		for _, ic := range []bool{false, true} {
			for _, lit := range []bool{false, true} {
				req := sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: p, IgnoreCase: ic, Literal: lit, MaxResults: 100000}
				a, err1 := fast.Search(context.Background(), req)
				b, err2 := plain.Search(context.Background(), req)
				if err1 != nil || err2 != nil {
					t.Fatalf("%q: %v / %v", p, err1, err2)
				}
				if a.Total != b.Total || !reflect.DeepEqual(a.Matches, b.Matches) || a.FilesSearched != b.FilesSearched {
					t.Errorf("pattern %q ignore_case %v literal %v: prefiltered Total %d (%d matches), plain regexp Total %d (%d matches)",
						p, ic, lit, a.Total, len(a.Matches), b.Total, len(b.Matches))
				}
			}
		}
	}
}

// FuzzPrefilter: for any pattern and line, a match implies a needle.
func FuzzPrefilter(f *testing.F) {
	for _, p := range trickyPatterns {
		f.Add(p, "x"+p+"y")
		f.Add("(?i)"+p, strings.ToUpper(p))
	}
	f.Add("(?i)kelvin", "\u212aELVIN")
	f.Fuzz(func(t *testing.T, expr, line string) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		pf := newPrefilter(expr)
		if pf == nil {
			return
		}
		for _, l := range strings.Split(line, "\n") {
			if re.MatchString(l) && !pf.contains([]byte(l)) {
				t.Fatalf("pattern %q matches line %q but its prefilter finds no needle in it (needles %v)", expr, l, pf.describe())
			}
		}
	})
}

// describe renders the needles for failure messages.
func (p *prefilter) describe() []string {
	var out []string
	for _, n := range p.needles {
		var b strings.Builder
		for i, s := range n.sets {
			if i == n.anchor {
				b.WriteString("^")
			}
			b.WriteString("{")
			s.each(func(r rune) { fmt.Fprintf(&b, "%q", r) })
			b.WriteString("}")
		}
		out = append(out, b.String())
	}
	return out
}

// TestGlobSetEqualsDoublestar: the direct comparisons of globSet give what
// doublestar.Match gives, for the default denied paths and other shapes.
func TestGlobSetEqualsDoublestar(t *testing.T) {
	globs := []string{".env", ".env.*", "*.pem", "*.key", "id_rsa", "credentials.json", "secrets/*", "**/*.go",
		"*", "a*", "*a", "[ab]*", "*.{js,ts}", `\*x`, "x\\", "?.txt", "**", "d/**/e"}
	names := []string{".env", ".env.local", ".envx", "a.pem", ".pem", "pem", "x.key", "id_rsa", "id_rsa.pub",
		"secrets/a", "d/secrets/a", "a/b.go", "b.go", "a", "ba", "ab", "*x", "x", "a.txt", "ab.txt", "d/x/e", "x.js", "y.ts", "credentials.json"}
	for _, g := range globs {
		set := newGlobSet([]string{g})
		for _, n := range names {
			for _, sub := range []string{n, "dir/" + n} {
				target := sub
				if !strings.Contains(g, "/") {
					target = filepath.Base(sub)
				}
				want, _ := doublestar.Match(g, target)
				if got := set.match(sub); got != want {
					t.Errorf("glob %q on %q: globSet %v, doublestar %v", g, sub, got, want)
				}
			}
		}
	}
}

// TestGlobBaseEqualsDoublestar: a glob "**/NAME" matched as NAME against
// the base name gives what doublestar.Match gives on the whole path.
func TestGlobBaseEqualsDoublestar(t *testing.T) {
	paths := []string{"a.go", "d/a.go", "d/e/a.go", "a.go/x", "d/a.gox", "d/.h.go", "d/a_test.go", "d/x.GO", "go", "d/ago",
		"d/[a].go", "d/e/f/Makefile", "d/e/f/makefile.am"}
	for _, g := range []string{"**/*.go", "**/*_test.go", "**/Makefile", "**/*", "**/a?go", "**/[am]*", "**/*.{go,am}", "**/.h*"} {
		rest := strings.TrimPrefix(g, "**/")
		set := newGlobSet([]string{rest})
		for _, p := range paths {
			want, _ := doublestar.Match(g, p)
			if got := set.match(p); got != want {
				t.Errorf("glob %q on %q: base match %v, doublestar %v", g, p, got, want)
			}
		}
	}
}
