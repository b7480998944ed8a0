package localsandbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
)

// TestWholeBufferScanEqualsLineByLine: grep's whole-buffer scan reports
// exactly what the line-by-line scan reports (files, line numbers, texts,
// counts), for patterns whose meaning could differ across lines: anchors,
// multi-line classes, (?s), empty matches, word boundaries.
func TestWholeBufferScanEqualsLineByLine(t *testing.T) {
	ws := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "b", "ab", " ", "\t", "\n", "\n\n", "é", "x", "_", "ba", "a\nb", "\u00a0", "€"}
	for i := range 60 {
		var b []byte
		for range rng.IntN(300) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		if i%7 == 0 {
			b = append(b, "a\r\nb\r\n"...) // CR files take the line path in both
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fast, err := New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	slow.lineByLine = true
	patterns := []string{`ab`, `^ab`, `b$`, `^$`, `^`, `$`, `a\s*b`, `a[^x]b`, `(?s)a.b`, `\bab\b`, `x*`, `b\n?a`,
		`a+b+`, `é`, `(?m)^b`, `[[:space:]]a`, `a|b$`, `\Aa`, `b\z`}
	for _, p := range patterns {
		for _, ic := range []bool{false, true} {
			req := sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: p, IgnoreCase: ic, MaxResults: 100000}
			a, err1 := fast.Search(context.Background(), req)
			b, err2 := slow.Search(context.Background(), req)
			if err1 != nil || err2 != nil {
				t.Fatalf("%q: %v / %v", p, err1, err2)
			}
			if a.Total != b.Total || !reflect.DeepEqual(a.Matches, b.Matches) || a.FilesSearched != b.FilesSearched {
				t.Errorf("pattern %q ignore_case %v: whole-buffer Total %d (%d matches), line-by-line Total %d (%d matches)",
					p, ic, a.Total, len(a.Matches), b.Total, len(b.Matches))
				seen := map[string]int{}
				for _, m := range a.Matches {
					seen[fmt.Sprintf("%s:%d", m.Path, m.Line)]++
				}
				for _, m := range b.Matches {
					seen[fmt.Sprintf("%s:%d", m.Path, m.Line)]--
				}
				for k, v := range seen {
					if v != 0 {
						t.Logf("  %s: %+d", k, v)
					}
				}
			}
		}
	}
}
