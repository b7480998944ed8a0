package compact

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// streamSample is ~1.3 MB of text whose pieces straddle the 256 KiB chunk
// boundaries: multi-byte characters, invalid and truncated sequences,
// CRLF endings, empty lines and one line longer than lineMax.
func streamSample(seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	pieces := []string{"a", "é", "€", "😀", "\xe2\x82", "\xf0\x9f", "\x80", "\xff", "\n", "\r\n", "\r\r\n", "\n\n", "row 12345 ", "x"}
	var b strings.Builder
	for b.Len() < 600_000 {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	b.WriteString("\n" + strings.Repeat("long€", lineMax/5+1000) + "\r\n")
	for b.Len() < 1_300_000 {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// The streaming passes equal the whole-text results of Go's decoding and
// strings.SplitAfter (the previous in-memory implementation).
func TestStreamingEqualsWholeText(t *testing.T) {
	for seed := range uint64(3) {
		s := streamSample(seed)
		if seed == 1 {
			s = strings.TrimRight(s, "\r\n") // no final newline
		}
		r := strings.NewReader(s)
		runes := []rune(s)
		for _, off := range []int{0, 1, scanChunk - 2, scanChunk + 1, 3*scanChunk - 1, len(runes) - 5, len(runes) + 10} {
			st, got, err := sliceText(r, int64(len(s)), off, 4000)
			if err != nil {
				t.Fatal(err)
			}
			o := min(off, len(runes))
			want := runes[o:min(o+4000, len(runes))]
			if st.chars != len(runes) || st.lines() != lineCount(s) || string(got) != string(want) {
				t.Fatalf("seed %d offset %d: %d chars %d lines, want %d %d; slice equal %v",
					seed, off, st.chars, st.lines(), len(runes), lineCount(s), string(got) == string(want))
			}
		}
		lines := strings.SplitAfter(s, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for _, rg := range [][2]int{{1, 1}, {1, 3}, {5, 2}, {100, 5000}, {len(lines) - 2, len(lines) + 50}, {len(lines) + 1, len(lines) + 3}, {0, 0}} {
			lo, hi, last, err := lineWindow(r, int64(len(s)), rg[0], rg[1])
			if err != nil {
				t.Fatal(err)
			}
			first, wantLast := max(rg[0], 1), min(rg[1], len(lines))
			want := ""
			if first <= wantLast {
				want = strings.Join(lines[first-1:wantLast], "")
			}
			if s[lo:hi] != want || last != wantLast {
				t.Fatalf("seed %d lines %v: got %d bytes last %d, want %d bytes last %d", seed, rg, hi-lo, last, len(want), wantLast)
			}
		}
		n, long := 0, 0
		err := eachLine(r, int64(len(s)), func(no int, text []byte, sec *io.SectionReader, chars, withNL int) error {
			if sec != nil {
				long++
				text = make([]byte, sec.Size())
				sec.ReadAt(text, 0)
			}
			l := lines[no-1]
			tr := strings.TrimRight(l, "\r\n")
			if string(text) != tr || chars != utf8.RuneCountInString(tr) || withNL != utf8.RuneCountInString(l) {
				t.Fatalf("seed %d line %d differs", seed, no)
			}
			n = no
			return nil
		})
		if err != nil || n != len(lines) || long != 1 {
			t.Fatalf("seed %d: %d lines (%d long), want %d (1): %v", seed, n, long, len(lines), err)
		}
	}
	if at, _ := runeStartBefore(bytes.NewReader([]byte("ab€\x80\x80")), 4); at != 2 {
		t.Fatalf("rune start %d", at)
	}
}

func TestRuneCountEqualsUTF8(t *testing.T) {
	for _, s := range []string{"", "abc", "abcdefghij€", "\xe2\x82x\xff😀é", streamSample(9)[:100_000]} {
		if runeCount([]byte(s)) != utf8.RuneCountInString(s) {
			t.Errorf("%q", s[:min(len(s), 40)])
		}
	}
}
