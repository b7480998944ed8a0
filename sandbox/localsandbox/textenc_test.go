package localsandbox

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/aibuddy/aibuddy/sandbox"
)

func TestSniffEncodingKinds(t *testing.T) {
	gbk := "# \xc5\xe4\xd6\xc3\xce\xc4\xbc\xfe\xa3\xba\xd5\xe2\xca\xc7\xce\xd2\xc3\xc7\xb5\xc4\xca\xfd\xbe\xdd\xbf\xe2\xc9\xe8\xd6\xc3\xa1\xa3\n"
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(0x80 + i%64)
	}
	control := bytes.Repeat([]byte("ab\x01\x02\x03"), 100)
	for _, tc := range []struct {
		name, head string
		want       string // encoding name, or "binary"
	}{
		{"ASCII", "hello\n", "utf-8"},
		{"UTF-8", "héllo ✓\n", "utf-8"},
		{"UTF-8 with a stray byte", "caf\xe9 — ünïcode ✓\n", encUTF8Invalid},
		{"GBK", gbk, "gb18030"},
		{"GBK, many times", strings.Repeat(gbk, 300), "gb18030"},
		{"windows-1252", "caf\xe9 cr\xe8me\n", "windows-1252"},
		{"ISO-8859-1 with a byte 1252 lacks", "caf\xe9 \x81\n", "iso-8859-1"},
		{"UTF-16LE BOM", "\xff\xfeh\x00i\x00", "utf-16le"},
		{"UTF-16BE BOM", "\xfe\xff\x00h\x00i", "utf-16be"},
		{"UTF-16LE without BOM", "h\x00e\x00l\x00l\x00o\x00\n\x00", "utf-16le"},
		{"UTF-16BE without BOM", "\x00h\x00e\x00l\x00l\x00o\x00\n", "utf-16be"},
		{"windows-1251 (not recognized)", "\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0! \xdd\xf2\xee \xf2\xe5\xf1\xf2.\n", encUnknown},
		{"NUL bytes", "ELF\x00\x01\x02\x00\x00abc", "binary"},
		{"control bytes", string(control), "binary"},
		{"non-ASCII noise without whitespace", string(noise), "binary"},
	} {
		te, binary := sniffEncoding([]byte(tc.head), false)
		got := te.name
		if binary {
			got = "binary"
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A multi-byte character cut at the end of the sniffed bytes is not an
	// invalid byte when the file goes on.
	if te, _ := sniffEncoding([]byte("ok ✓"[:5]), true); te.name != encUTF8 {
		t.Errorf("cut character: %q", te.name)
	}
}

// The \xNN escaping is exact across any chunking of the input.
func TestEscapeInvalidAcrossChunks(t *testing.T) {
	in := "a✓b\xe9c\xe2\x9c" + "d\xff✓\xc3\xa9\x80"
	want := `a✓b\xE9c\xE2\x9Cd\xFF✓é\x80`
	var n int64
	got, err := io.ReadAll(textEncoding{name: encUTF8}.reader(iotest.OneByteReader(strings.NewReader(in)), &n))
	if err != nil || string(got) != want || n != 5 {
		t.Errorf("got %q (%d escaped, %v), want %q", got, n, err, want)
	}
	if out, ok := unescapeHigh(want); !ok || out != in {
		t.Errorf("unescapeHigh = %q %v, want %q", out, ok, in)
	}
	if out, ok := unescapeHigh(`\x41 \x7F \xg0`); ok || out != `\x41 \x7F \xg0` {
		t.Errorf("ASCII escapes must stay literal: %q %v", out, ok)
	}
}

// BH-097 (c): the UTF-16 bytes shown as U+FFFD are counted, whatever the
// chunking: an odd final byte, an unpaired high or low surrogate; a proper
// pair (an emoji) is not.
func TestUTF16UndecodableCounted(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		big      bool
		want     string
		n        int64
	}{
		{"BOM and an odd byte (FF FE 41)", "\xff\xfeA", false, "\uFFFD", 1},
		{"a pair and a lone high", "\xff\xfeh\x00\x3d\xd8\x00\xde\x00\xd8!\x00", false, "h\U0001F600\uFFFD!", 2},
		{"a lone low, big-endian", "\xfe\xff\x00h\xdc\x00\x00i", true, "h\uFFFDi", 2},
		{"a high at the end", "\xff\xfeh\x00\x00\xd8", false, "h\uFFFD", 2},
		{"clean", "\xff\xfeh\x00i\x00", false, "hi", 0},
	} {
		name := "utf-16le"
		if tc.big {
			name = "utf-16be"
		}
		for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
			var n int64
			got, err := io.ReadAll(namedEncoding(name).reader(r, &n))
			if err != nil || string(got) != tc.want || n != tc.n {
				t.Errorf("%s: %q with %d undecodable bytes (%v), want %q with %d", tc.name, got, n, err, tc.want, tc.n)
			}
		}
	}
}

// A GBK file larger than the read buffers decodes the same everywhere, and
// an edit deep inside it changes only the replaced bytes.
func TestLargeGBKFileReadAndEdit(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	line := "\xd5\xe2\xca\xc7\xce\xd2\xc3\xc7\xb5\xc4\xca\xfd\xbe\xdd\xbf\xe2\xc9\xe8\xd6\xc3\xa1\xa3 " // 这是我们的数据库设置。
	var b strings.Builder
	for i := range 20000 {
		b.WriteString(line)
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString("\n")
	}
	orig := b.String()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(t.Context(), sandbox.ReadRequest{Path: "big.txt", Offset: 15000, Limit: 2})
	if err != nil || r.Encoding != "gb18030" || r.TotalLines != 20000 || len(r.Lines) != 2 ||
		r.Lines[0].Text != "这是我们的数据库设置。 15000" || r.Lines[0].Chars != 17 {
		t.Fatalf("read: %v %q %d %+v", err, r.Encoding, r.TotalLines, r.Lines)
	}
	old := "这是我们的数据库设置。 15000\n这是我们的数据库设置。 15001\n"
	res, err := s.Edit(t.Context(), sandbox.EditRequest{Path: "big.txt", Edits: []sandbox.Replacement{{Old: old, New: "第一\n第二\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "big.txt"))
	lines := strings.SplitAfter(orig, "\n")
	want := strings.Join(lines[:14999], "") + "\xb5\xda\xd2\xbb\n\xb5\xda\xb6\xfe\n" + strings.Join(lines[15001:], "")
	if string(got) != want {
		t.Fatalf("bytes after the edit differ from the expected (%d vs %d bytes)", len(got), len(want))
	}
	for _, l := range res.Region {
		if strings.ContainsRune(l.Text, '\uFFFD') || l.Chars != len([]rune(l.Text)) {
			t.Errorf("region line %d %q (%d characters)", l.Number, l.Text, l.Chars)
		}
	}
}
