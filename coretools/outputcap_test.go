package coretools

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/tool"
)

// project feeds chunks to a fresh cap on stdout and returns its projection.
func project(max int, chunks ...string) (string, capStats) {
	c := newOutputCap(max, nil)
	w := c.writer(outStdout)
	for _, ch := range chunks {
		w.Write([]byte(ch))
	}
	c.finish()
	return c.projection()
}

// bytewise splits s into one-byte chunks.
func bytewise(s string) []string {
	out := make([]string, len(s))
	for i := range len(s) {
		out[i] = s[i : i+1]
	}
	return out
}

func TestOutputCapEdges(t *testing.T) {
	// BH-029 edge cases: exactly the cap, one over, a trailing newline.
	for _, tc := range []struct {
		name, in, want string
		omitted        int64
	}{
		{"exactly 30,000", strings.Repeat("a", 30000), strings.Repeat("a", 30000), 0},
		{"29,999 plus newline", strings.Repeat("a", 29999) + "\n", strings.Repeat("a", 29999), 0},
		{"30,000 plus newline", strings.Repeat("a", 30000) + "\n",
			strings.Repeat("a", 15000) + "\n[1 character omitted: line 1]\n" + strings.Repeat("a", 14999), 1},
		{"30,001", strings.Repeat("a", 15000) + "b" + strings.Repeat("c", 15000),
			strings.Repeat("a", 15000) + "\n[1 character omitted: line 1]\n" + strings.Repeat("c", 15000), 1},
		{"empty", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, st := project(30000, tc.in)
			if got != tc.want || st.OmittedChars != tc.omitted {
				t.Errorf("projection %d chars (omitted %d), want %d (omitted %d)\n%.80q", len(got), st.OmittedChars, len(tc.want), tc.omitted, got)
			}
		})
	}
}

func TestOutputCapUTF8Straddle(t *testing.T) {
	// 'é' is two bytes; put it across the head cut, across the tail cut and
	// across every chunk boundary; the cut counts characters and never
	// splits the sequence.
	in := strings.Repeat("a", 14999) + "é" + strings.Repeat("x", 20000) + "é" + strings.Repeat("z", 14999)
	for _, chunks := range [][]string{{in}, bytewise(in)} {
		got, st := project(30000, chunks...)
		if !utf8.ValidString(got) {
			t.Fatal("projection is not valid UTF-8")
		}
		head, tail, ok := strings.Cut(got, "\n[20,000 characters omitted: line 1]\n")
		if !ok || head != strings.Repeat("a", 14999)+"é" || tail != "é"+strings.Repeat("z", 14999) {
			t.Errorf("head %q... tail ...%q", head[max(0, len(head)-4):], tail[:4])
		}
		if st.Chars != 50000 || st.Shown != 30000 {
			t.Errorf("stats %+v", st)
		}
	}
}

func TestOutputCapLongSingleLine(t *testing.T) {
	// BH-029: one line longer than the cap is cut inside the line, never
	// "(no output)"; the trailing newline is the tail's last character.
	for _, tc := range []struct {
		in, want string
	}{
		{strings.Repeat("q", 80000), strings.Repeat("q", 15000) + "\n[50,000 characters omitted: line 1]\n" + strings.Repeat("q", 15000)},
		{strings.Repeat("q", 80000) + "\n", strings.Repeat("q", 15000) + "\n[50,001 characters omitted: line 1]\n" + strings.Repeat("q", 14999)},
	} {
		got, st := project(30000, tc.in)
		if got != tc.want {
			t.Errorf("newline=%v: got %d bytes: %.60q ... %.60q", strings.HasSuffix(tc.in, "\n"), len(got), got, got[len(got)-60:])
		}
		if st.Lines != 1 || st.OmittedLines != 1 || st.Shown != 30000 {
			t.Errorf("stats %+v", st)
		}
	}
}

func TestOutputCapANSI(t *testing.T) {
	// BH-026: escape codes are stripped before the cap.
	var in strings.Builder
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&in, "\x1b[2m12:00:%02d\x1b[0m \x1b[1;34mDEBUG\x1b[0m job step %d\n", i%60, i)
	}
	got, st := project(30000, in.String())
	if strings.ContainsRune(got, 0x1b) {
		t.Error("projection holds ESC")
	}
	if !strings.HasPrefix(got, "12:00:01 DEBUG job step 1\n12:00:02 DEBUG job step 2\n") {
		t.Errorf("projection starts %.80q", got)
	}
	plain := regexpANSI(in.String())
	if st.Chars != int64(len(plain)) {
		t.Errorf("counted %d characters, want %d (text only)", st.Chars, len(plain))
	}
	for _, tc := range []struct{ in, want string }{
		{"\x1b]0;window title\x07text", "text"},
		{"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ end", "link end"},
		{"\x1b[?25l\x1b[2K\x1b[1Gdone\x1b[?25h", "done"},
		{"\x1b(Bascii\x1b7saved\x1b8", "asciisaved"},
		{"\x1bPdcs payload\x1b\\after", "after"},
		{"lone \x1b\nnext", "lone \nnext"},
		{"\x1b]unterminated osc\nline two", "\nline two"},
	} {
		for _, chunks := range [][]string{{tc.in}, bytewise(tc.in)} {
			if got, _ := project(30000, chunks...); got != tc.want {
				t.Errorf("%q (%d chunks): got %q, want %q", tc.in, len(chunks), got, tc.want)
			}
		}
	}
}

// regexpANSI removes the SGR sequences the BH-026 input uses.
func regexpANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestOutputCapCarriageReturn(t *testing.T) {
	// BH-027: only the text after the last lone \r of a line is kept;
	// \r\n is a newline; frames do not count.
	in := ""
	for p := 10; p <= 100; p += 10 {
		in += fmt.Sprintf("\rfetch %3d%%", p)
	}
	in += "\nready\r\n"
	for _, chunks := range [][]string{{in}, bytewise(in)} {
		got, st := project(30000, chunks...)
		if got != "fetch 100%\nready" || st.Chars != int64(len("fetch 100%\nready\n")) || st.Lines != 2 {
			t.Errorf("got %q, stats %+v", got, st)
		}
	}
	for in, want := range map[string]string{
		"progress 50%\r":              "progress 50%", // a final lone \r erases nothing
		"a\r\r\nb":                    "a\nb",
		"50%\r\x1b[K100%\n":           "100%",
		"one\rtwo\rthree\nfour\rfive": "three\nfive",
		"abc\b\bX":                    "aX",
	} {
		if got, _ := project(30000, in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestOutputCapInvalidAndBinary(t *testing.T) {
	got, _ := project(30000, "a\xffb\xe2\x82c\x07d")
	// One U+FFFD per invalid byte (utf8.DecodeRune's rule).
	if got != "a\uFFFDb\uFFFD\uFFFDcd" {
		t.Errorf("invalid UTF-8 / controls: %q", got)
	}
	// A sequence cut at the end of the output.
	if got, _ := project(30000, "ok\xe2\x82"); got != "ok\uFFFD" {
		t.Errorf("cut at end: %q", got)
	}
	// BH-097 (a): the invalid bytes are counted with their raw offsets,
	// however the output is chunked (a sequence carried across chunks,
	// one cut at the end).
	for _, chunks := range [][]string{{"a\xffb\xe2\x82c\x07d"}, bytewise("a\xffb\xe2\x82c\x07d"), {"a\xffb\xe2", "\x82c\x07d"}} {
		_, st := project(30000, chunks...)
		if st.InvalidBytes[outStdout] != 3 || st.InvalidAt[outStdout] != [invalidAtMax]int64{1, 3, 4} {
			t.Errorf("%q: invalid bytes %d at %v, want 3 at 1, 3, 4", chunks, st.InvalidBytes[outStdout], st.InvalidAt[outStdout])
		}
	}
	if _, st := project(30000, "ok", "\xe2\x82"); st.InvalidBytes[outStdout] != 2 || st.InvalidAt[outStdout][1] != 3 {
		t.Errorf("cut at end: %+v", st)
	}
	if _, st := project(30000, strings.Repeat("\xff", 7)); st.InvalidBytes[outStdout] != 7 || st.InvalidAt[outStdout] != [invalidAtMax]int64{0, 1, 2, 3, 4} {
		t.Errorf("more than %d: %+v", invalidAtMax, st)
	}
	// BH-011 step 3: binary data is described, not shown.
	c := newOutputCap(30000, nil)
	c.writer(outStdout).Write([]byte("header line\n\x00\x01\x02\xff\xfe binary"))
	c.writer(outStderr).Write([]byte("warning\n"))
	c.writer(outStdout).Write([]byte("more\x00"))
	c.finish()
	got, st := c.projection()
	if got != "header line\nwarning" || st.BinaryBytes[outStdout] != 17 || st.BinaryAt[outStdout] != 12 {
		t.Errorf("binary: %q %+v", got, st)
	}
}

func TestOutputCapMarkerLines(t *testing.T) {
	// BH-046: 1,500 ok lines, FATAL, 1,500 ok lines; the marker names the
	// exact characters and lines omitted.
	in := bh046Output()
	if len(in) != 79940 || strings.Index(in, "FATAL") != 39393 {
		t.Fatalf("fixture: %d chars, FATAL at %d", len(in), strings.Index(in, "FATAL"))
	}
	for _, chunks := range [][]string{{in}, splitEvery(in, 4096), splitEvery(in, 7)} {
		got, st := project(30000, chunks...)
		if !strings.Contains(got, "\n[49,940 characters omitted: lines 582-2,446]\n") {
			t.Errorf("marker missing: %v", st)
		}
		if st.Chars != 79940 || st.Lines != 3001 || st.OmittedChars != 49940 || st.OmittedLines != 1865 {
			t.Errorf("stats %+v", st)
		}
	}
}

func bh046Output() string {
	var b strings.Builder
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&b, "compiling unit %d ... ok\n", i)
	}
	b.WriteString("FATAL: symbol rotate_key undefined (unit 1500)\n")
	for i := 1501; i <= 3000; i++ {
		fmt.Fprintf(&b, "compiling unit %d ... ok\n", i)
	}
	return b.String()
}

func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func TestOutputCapBoundedMemory(t *testing.T) {
	// 64 MiB of mixed text in random chunks: the cap's buffers stay small.
	c := newOutputCap(30000, nil)
	w := c.writer(outStdout)
	rng := rand.New(rand.NewPCG(1, 2))
	line := []byte("héllo wörld \x1b[31mred\x1b[0m progress\r50%\rdone " + strings.Repeat("x", 70) + "\n")
	chunk := bytes.Repeat(line, 1000)
	var total int
	for total < 64<<20 {
		n := 1 + rng.IntN(len(chunk))
		w.Write(chunk[:n])
		total += n
	}
	w.Write([]byte(strings.Repeat("y", 300000))) // one long line, no newline
	c.finish()
	if cap(c.head) > 4*30000 || cap(c.tail) > 16*30000 || cap(c.buf) > 2*len(chunk)+outPendingMax ||
		cap(c.norm[0].line) > 2*outPendingMax+len(chunk) {
		t.Errorf("buffers grew: head %d tail %d buf %d line %d", cap(c.head), cap(c.tail), cap(c.buf), cap(c.norm[0].line))
	}
	got, st := c.projection()
	if !utf8.ValidString(got) || st.Shown != 30000 || !strings.HasSuffix(got, strings.Repeat("y", 15000)) {
		t.Errorf("shown %d, valid %v", st.Shown, utf8.ValidString(got))
	}
}

func TestOutputCapEventsAndClose(t *testing.T) {
	var evs []tool.Event
	c := newOutputCap(100, func(e tool.Event) { evs = append(evs, e) })
	buf := []byte("out\n")
	c.writer(outStdout).Write(buf)
	buf[0] = 'X' // the event owns a copy
	c.writer(outStderr).Write([]byte("err\n"))
	c.heartbeat()
	c.finish()
	c.writer(outStdout).Write([]byte("late\n")) // after finish: discarded
	if len(evs) != 3 || evs[0].Kind != tool.EventStdout || string(evs[0].Data) != "out\n" ||
		evs[1].Kind != tool.EventStderr || evs[2].Kind != tool.EventHeartbeat {
		t.Errorf("events %+v", evs)
	}
	if got, _ := c.projection(); got != "out\nerr" {
		t.Errorf("projection %q", got)
	}
}

// FuzzOutputCap: any input, in any chunking, gives the same valid UTF-8
// projection within the cap, without ESC or NUL.
func FuzzOutputCap(f *testing.F) {
	f.Add([]byte("a\x1b[31mb\rc\r\nd\xffe\x00f"), uint8(3), uint16(10))
	f.Add([]byte(strings.Repeat("é", 40)), uint8(1), uint16(9))
	f.Fuzz(func(t *testing.T, in []byte, step uint8, max uint16) {
		m := int(max%200) + 2
		whole, st := project(m, string(in))
		var chunks []string
		s := int(step%16) + 1
		for i := 0; i < len(in); i += s {
			chunks = append(chunks, string(in[i:min(i+s, len(in))]))
		}
		split, st2 := project(m, chunks...)
		if whole != split || st != st2 {
			t.Fatalf("chunking changed the projection: %q vs %q", whole, split)
		}
		if !utf8.ValidString(whole) || strings.ContainsAny(whole, "\x1b\x00") || st.Shown > int64(m) {
			t.Fatalf("bad projection %q (%+v)", whole, st)
		}
	})
}

func TestOutputCapArrivalOrderAcrossStreams(t *testing.T) {
	// An unfinished stdout line that arrived first is not overtaken by a
	// later stderr line (BH-045's shape).
	c := newOutputCap(30000, nil)
	c.writer(outStdout).Write([]byte("wwww"))
	c.writer(outStderr).Write([]byte("\nerror[E42]: type mismatch\n"))
	c.writer(outStdout).Write([]byte("after\n"))
	c.finish()
	if got, _ := c.projection(); got != "wwww\nerror[E42]: type mismatch\nafter" {
		t.Errorf("got %q", got)
	}
}
