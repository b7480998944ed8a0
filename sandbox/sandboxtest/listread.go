package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/sandbox"
)

func runList(t *testing.T, newSandbox suite) {
	setup := func(t *testing.T) *env {
		e := newEnv(t, newSandbox)
		e.write("b.txt", "bb")
		e.write("a-b.txt", "x")
		e.write("a/z.txt", "zzz")
		e.write("a/sub/deep.txt", "d")
		e.write(".env", "K=v\n")
		e.write(".git/config", "[core]\n")
		e.write("a/.hidden", "h")
		return e
	}
	paths := func(l *sandbox.ListResult) []string {
		var out []string
		for _, en := range l.Entries {
			out = append(out, en.Path)
		}
		return out
	}

	t.Run("direct children, sorted, hidden counted", func(t *testing.T) {
		e := setup(t)
		l, err := e.sb.List(e.ctx, sandbox.ListRequest{})
		noError(t, err)
		if got, want := paths(l), []string{"a", "a-b.txt", "b.txt"}; !equalStrings(got, want) {
			t.Errorf("ls = %q, want %q", got, want)
		}
		if l.Skipped != 2 || l.Truncated || l.Partial {
			t.Errorf("Skipped=%d Truncated=%v Partial=%v, want 2 false false", l.Skipped, l.Truncated, l.Partial)
		}
		for _, en := range l.Entries {
			switch en.Path {
			case "a":
				if en.Type != sandbox.TypeDir || en.Size != 0 {
					t.Errorf("a = %+v", en)
				}
			case "b.txt":
				if en.Type != sandbox.TypeFile || en.Size != 2 || en.ModTime.IsZero() {
					t.Errorf("b.txt = %+v", en)
				}
			}
		}
	})

	t.Run("depth, directories before their contents", func(t *testing.T) {
		e := setup(t)
		l, err := e.sb.List(e.ctx, sandbox.ListRequest{Path: ".", Depth: 3})
		noError(t, err)
		want := []string{"a", "a/sub", "a/sub/deep.txt", "a/z.txt", "a-b.txt", "b.txt"}
		if got := paths(l); !equalStrings(got, want) {
			t.Errorf("ls depth 3 = %q, want %q", got, want)
		}
		if l.Skipped != 3 {
			t.Errorf("Skipped = %d, want 3 (.env, .git, a/.hidden)", l.Skipped)
		}
		l, err = e.sb.List(e.ctx, sandbox.ListRequest{Path: "a", Depth: 2})
		noError(t, err)
		if got, want := paths(l), []string{"a/sub", "a/sub/deep.txt", "a/z.txt"}; !equalStrings(got, want) {
			t.Errorf("ls a depth 2 = %q, want %q", got, want)
		}
	})

	t.Run("include hidden; .git listed, never descended", func(t *testing.T) {
		e := setup(t)
		l, err := e.sb.List(e.ctx, sandbox.ListRequest{Depth: 5, IncludeHidden: true})
		noError(t, err)
		want := []string{".env", ".git", "a", "a/.hidden", "a/sub", "a/sub/deep.txt", "a/z.txt", "a-b.txt", "b.txt"}
		if got := paths(l); !equalStrings(got, want) {
			t.Errorf("ls -a = %q, want %q", got, want)
		}
		if l.Skipped != 0 {
			t.Errorf("Skipped = %d, want 0", l.Skipped)
		}
	})

	t.Run("MaxEntries truncates breadth first", func(t *testing.T) {
		e := setup(t)
		l, err := e.sb.List(e.ctx, sandbox.ListRequest{Depth: 5, MaxEntries: 3})
		noError(t, err)
		if got, want := paths(l), []string{"a", "a-b.txt", "b.txt"}; !equalStrings(got, want) || !l.Truncated {
			t.Errorf("ls max 3 = %q truncated=%v, want %q truncated", got, l.Truncated, want)
		}
		l, err = e.sb.List(e.ctx, sandbox.ListRequest{Depth: 5, MaxEntries: 6})
		noError(t, err)
		if len(l.Entries) != 6 || l.Truncated {
			t.Errorf("exactly 6 entries: got %d truncated=%v", len(l.Entries), l.Truncated)
		}
	})

	t.Run("default bound is 1,000 entries", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		for i := range 1005 {
			e.write(fmt.Sprintf("f%04d", i), "")
		}
		l, err := e.sb.List(e.ctx, sandbox.ListRequest{})
		noError(t, err)
		if len(l.Entries) != 1000 || !l.Truncated {
			t.Errorf("got %d entries truncated=%v, want 1000 truncated", len(l.Entries), l.Truncated)
		}
	})

	t.Run("errors", func(t *testing.T) {
		e := setup(t)
		_, err := e.sb.List(e.ctx, sandbox.ListRequest{Path: "nope"})
		wantErr(t, err, sandbox.ErrNotFound)
		wantErr(t, err, fs.ErrNotExist)
		_, err = e.sb.List(e.ctx, sandbox.ListRequest{Path: "b.txt"})
		wantErr(t, err, sandbox.ErrNotDir)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l, err := e.sb.List(ctx, sandbox.ListRequest{Depth: 5})
		if err == nil && (l == nil || !l.Partial) {
			t.Errorf("cancelled ctx: got %+v, nil error; want an error or a Partial result", l)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled ctx: error %v does not wrap context.Canceled", err)
		}
	})
}

func runRead(t *testing.T, newSandbox suite) {
	t.Run("BH-002 tabs stay raw", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("calc.go", "func f(x int) int {\n\tif x > 0 {\n\t\treturn x\n\t}\n\treturn 0\n}\n")
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "calc.go"})
		noError(t, err)
		want := []string{"func f(x int) int {", "\tif x > 0 {", "\t\treturn x", "\t}", "\treturn 0", "}"}
		if got := texts(r.Lines); !equalStrings(got, want) {
			t.Errorf("lines = %q, want %q", got, want)
		}
		if r.Kind != sandbox.KindText || r.Encoding != "utf-8" || r.TotalLines != 6 || r.More || r.BOM {
			t.Errorf("Kind=%q Encoding=%q TotalLines=%d More=%v BOM=%v", r.Kind, r.Encoding, r.TotalLines, r.More, r.BOM)
		}
		for i, l := range r.Lines {
			if l.Number != i+1 || l.Chars != utf8.RuneCountInString(want[i]) {
				t.Errorf("line %d = %+v", i+1, l)
			}
		}
		if r.SHA256 != sha(e.read("calc.go")) || r.Size != int64(len(e.read("calc.go"))) {
			t.Errorf("SHA256/Size = %s/%d", r.SHA256, r.Size)
		}
	})

	t.Run("BH-001 CRLF lines come without CR", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("notes.txt", "red\r\ngreen\r\nblue\r\n")
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "notes.txt"})
		noError(t, err)
		if got := texts(r.Lines); !equalStrings(got, []string{"red", "green", "blue"}) || r.Lines[0].Chars != 3 {
			t.Errorf("lines = %q (%+v)", got, r.Lines)
		}
	})

	t.Run("BH-007 BOM is not shown", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("s.ps1", "\xEF\xBB\xBFWrite-Host 'hi'\r\n")
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "s.ps1"})
		noError(t, err)
		if !r.BOM || len(r.Lines) != 1 || r.Lines[0].Text != "Write-Host 'hi'" || r.Lines[0].Chars != 15 {
			t.Errorf("BOM=%v lines=%+v, want BOM and %q", r.BOM, r.Lines, "Write-Host 'hi'")
		}
		if r.SHA256 != sha(e.read("s.ps1")) {
			t.Error("SHA256 must cover the BOM too (whole file)")
		}
	})

	t.Run("window: offset, limit, more, next offset", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		var b strings.Builder
		for i := 1; i <= 10; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		e.write("ten.txt", b.String())
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "ten.txt", Offset: 3, Limit: 4})
		noError(t, err)
		if got := texts(r.Lines); !equalStrings(got, []string{"line 3", "line 4", "line 5", "line 6"}) {
			t.Errorf("window = %q", got)
		}
		if r.Lines[0].Number != 3 || !r.More || r.NextOffset != 7 || r.TotalLines != 10 {
			t.Errorf("Number=%d More=%v NextOffset=%d TotalLines=%d", r.Lines[0].Number, r.More, r.NextOffset, r.TotalLines)
		}
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "ten.txt", Offset: 7})
		noError(t, err)
		if len(r.Lines) != 4 || r.More || r.NextOffset != 0 {
			t.Errorf("tail window: %d lines More=%v NextOffset=%d", len(r.Lines), r.More, r.NextOffset)
		}
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "ten.txt", Offset: 50})
		noError(t, err)
		if len(r.Lines) != 0 || r.More || r.TotalLines != 10 {
			t.Errorf("past the end: %d lines More=%v TotalLines=%d", len(r.Lines), r.More, r.TotalLines)
		}
		// MaxBytes: "line 1".."line 3" are 6 bytes each; 14 bytes hold two.
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "ten.txt", MaxBytes: 14})
		noError(t, err)
		if got := texts(r.Lines); !equalStrings(got, []string{"line 1", "line 2"}) || !r.More || r.NextOffset != 3 {
			t.Errorf("MaxBytes 14: %q More=%v NextOffset=%d", got, r.More, r.NextOffset)
		}
	})

	t.Run("last line without newline, empty file", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("a.txt", "one\ntwo")
		e.write("empty.txt", "")
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "a.txt"})
		noError(t, err)
		if got := texts(r.Lines); !equalStrings(got, []string{"one", "two"}) || r.TotalLines != 2 {
			t.Errorf("lines = %q TotalLines=%d", got, r.TotalLines)
		}
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "empty.txt"})
		noError(t, err)
		if r.Kind != sandbox.KindText || len(r.Lines) != 0 || r.TotalLines != 0 || r.SHA256 != sha("") {
			t.Errorf("empty: %+v", r)
		}
	})

	t.Run("BH-014 one enormous line", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("bundle.min.js", strings.Repeat("a;", 1_000_000))
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "bundle.min.js"})
		noError(t, err)
		if len(r.Lines) != 1 {
			t.Fatalf("got %d lines, want 1", len(r.Lines))
		}
		l := r.Lines[0]
		if l.Chars != 2_000_000 || l.Text != strings.Repeat("a;", 1000) {
			t.Errorf("line 1: Chars=%d len(Text)=%d, want 2,000,000 and the first 2,000 characters", l.Chars, len(l.Text))
		}
		if r.TotalLines != 1 || r.More || r.SHA256 != sha(strings.Repeat("a;", 1_000_000)) {
			t.Errorf("TotalLines=%d More=%v", r.TotalLines, r.More)
		}
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "bundle.min.js", MaxLineChars: 10})
		noError(t, err)
		if r.Lines[0].Text != "a;a;a;a;a;" || r.Lines[0].Chars != 2_000_000 {
			t.Errorf("MaxLineChars 10: %+v", r.Lines[0])
		}
	})

	t.Run("MaxLineChars counts characters, not bytes", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("u.txt", "héllo wörld\n")
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "u.txt", MaxLineChars: 4})
		noError(t, err)
		if r.Lines[0].Text != "héll" || r.Lines[0].Chars != 11 {
			t.Errorf("got %+v, want héll / 11", r.Lines[0])
		}
	})

	t.Run("BH-011 binary file", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		data := []byte{0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00}
		for i := range 65536 {
			data = append(data, byte(i))
		}
		e.write("bin/tool", string(data))
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "bin/tool"})
		noError(t, err)
		if r.Kind != sandbox.KindBinary || len(r.Lines) != 0 || r.Data != nil {
			t.Errorf("Kind=%q lines=%d data=%d, want binary with no content", r.Kind, len(r.Lines), len(r.Data))
		}
		if !strings.Contains(r.Description, "binary file (ELF header), 65,544 bytes") {
			t.Errorf("Description = %q", r.Description)
		}
		if r.Size != 65544 || r.SHA256 != sha(string(data)) {
			t.Errorf("Size=%d SHA256=%s", r.Size, r.SHA256)
		}
	})

	t.Run("invalid UTF-8 without whitespace is binary, a little is windows-1252", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		noise := make([]byte, 4096)
		for i := range noise {
			noise[i] = byte(0x80 + i%64) // continuation bytes: invalid UTF-8, no NUL
		}
		e.write("noise.bin", string(noise))
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "noise.bin"})
		noError(t, err)
		if r.Kind != sandbox.KindBinary {
			t.Errorf("noise: Kind=%q, want binary", r.Kind)
		}
		e.write("menu.txt", "caf\xe9 cr\xe8me\n")
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "menu.txt"})
		noError(t, err)
		if r.Kind != sandbox.KindText || r.Encoding != "windows-1252" || len(r.Lines) != 1 || r.Lines[0].Text != "café crème" {
			t.Errorf("latin-1: Kind=%q Encoding=%q lines=%+v", r.Kind, r.Encoding, r.Lines)
		}
	})

	t.Run("GBK text is text, decoded and named", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("g.txt", "# \xd5\xe2\xca\xc7\xce\xd2\xc3\xc7\xb5\xc4\xca\xfd\xbe\xdd\xbf\xe2\xc9\xe8\xd6\xc3\xa1\xa3\n")
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "g.txt"})
		noError(t, err)
		if r.Kind != sandbox.KindText || r.Encoding != "gb18030" || !equalStrings(texts(r.Lines), []string{"# 这是我们的数据库设置。"}) {
			t.Errorf("Kind=%q Encoding=%q lines=%q", r.Kind, r.Encoding, texts(r.Lines))
		}
	})

	t.Run("UTF-16LE with BOM is decoded and named", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("w.txt", "\xFF\xFEh\x00i\x00\r\x00\n\x00\xe9\x00\n\x00")
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "w.txt"})
		noError(t, err)
		if r.Kind != sandbox.KindText || r.Encoding != "utf-16le" || !equalStrings(texts(r.Lines), []string{"hi", "é"}) {
			t.Errorf("Kind=%q Encoding=%q lines=%q", r.Kind, r.Encoding, texts(r.Lines))
		}
	})

	t.Run("image within the limit is returned as data", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		img := image.NewRGBA(image.Rect(0, 0, 4, 3))
		img.Set(1, 1, color.RGBA{255, 0, 0, 255})
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		e.write("dot.png", buf.String())
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "dot.png"})
		noError(t, err)
		if r.Kind != sandbox.KindImage || r.MIMEType != "image/png" || !bytes.Equal(r.Data, buf.Bytes()) {
			t.Errorf("Kind=%q MIME=%q data=%d bytes", r.Kind, r.MIMEType, len(r.Data))
		}
		if !strings.Contains(r.Description, "4x3") || r.SHA256 != sha(buf.String()) {
			t.Errorf("Description=%q", r.Description)
		}
	})

	t.Run("an image signature without a decodable header is not an image", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("fake.png", "\x89PNG\r\n\x1a\nfake")
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "fake.png"})
		noError(t, err)
		if r.Kind != sandbox.KindBinary || len(r.Data) != 0 || !strings.Contains(r.Description, "does not decode") {
			t.Errorf("Kind=%q data=%d bytes Description=%q", r.Kind, len(r.Data), r.Description)
		}
	})

	t.Run("BH-013 image over the limit: size and dimensions, no data", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		// 1400x1400 RGB stored uncompressed: about 5.9 MB, over the
		// default 5 MiB.
		img := image.NewNRGBA(image.Rect(0, 0, 1400, 1400))
		for i := range img.Pix {
			img.Pix[i] = byte(i * 7)
		}
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.NoCompression}
		if err := enc.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		if buf.Len() <= 5<<20 {
			t.Fatalf("fixture is %d bytes, not over 5 MiB", buf.Len())
		}
		if err := e.fx.writeFile(filepath.Join(e.ws, "shot.png"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "shot.png"})
		noError(t, err)
		if r.Kind != sandbox.KindImage || r.Data != nil || len(r.Lines) != 0 {
			t.Errorf("Kind=%q data=%d, want image without data", r.Kind, len(r.Data))
		}
		if !strings.Contains(r.Description, "1400x1400") || !strings.Contains(r.Description, commas(buf.Len())) {
			t.Errorf("Description = %q, want dimensions and size", r.Description)
		}
		if r.Size != int64(buf.Len()) || r.SHA256 != sha(buf.String()) {
			t.Errorf("Size=%d SHA256 mismatch", r.Size)
		}
		// MaxImageBytes is per request.
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "shot.png", MaxImageBytes: 8 << 20})
		noError(t, err)
		if len(r.Data) != buf.Len() {
			t.Errorf("MaxImageBytes 8 MiB: data = %d bytes, want %d", len(r.Data), buf.Len())
		}
	})

	t.Run("errors", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("d/f.txt", "x")
		_, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "d"})
		wantErr(t, err, sandbox.ErrIsDir)
		_, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "d/missing.txt"})
		wantErr(t, err, sandbox.ErrNotFound)
		wantErr(t, err, fs.ErrNotExist)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = e.sb.Read(ctx, sandbox.ReadRequest{Path: "d/f.txt"})
		wantErr(t, err, context.Canceled)
	})
}

// commas formats n with thousands separators (golang.org/x/text/message, English).
func commas(n int) string { return thousands.Sprintf("%d", n) }

var thousands = message.NewPrinter(language.English)
