package localsandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"image"
	_ "image/gif" // image.DecodeConfig formats
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"unicode/utf8"

	_ "golang.org/x/image/webp" // image.DecodeConfig for WebP
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/aibuddy/aibuddy/sandbox"
)

// Encodings reported in ReadResult.Encoding.
const (
	encUTF8        = "utf-8"
	encUTF8Invalid = "utf-8 (invalid bytes shown as U+FFFD)"
	encUTF16LE     = "utf-16le"
	encUTF16BE     = "utf-16be"
	encLatin1      = "latin-1/windows-1252 (not valid UTF-8)"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Read returns a bounded window of req.Path.
//
// Text: lines Offset.. (1-based) up to Limit lines (default 2,000), each
// cut to MaxLineChars characters (default 2,000; Line.Chars keeps the whole
// line's length) and all of them to MaxBytes bytes of text (default 256 KiB).
// The file is streamed with a bounded line buffer, never loaded whole.
// Line endings ("\n", "\r\n") are dropped, tabs are kept raw, and a UTF-8
// byte order mark is removed from line 1 and reported as BOM. UTF-16 (by its
// BOM) and non-UTF-8 text (decoded as windows-1252) are converted to UTF-8
// and named in Encoding. More and NextOffset say how to continue;
// TotalLines counts the file's lines (-1 when counting stopped after
// Options.MaxCountBytes bytes).
//
// Binary (a NUL byte, or mostly invalid UTF-8 or control bytes, in the first
// 8 KiB): Kind binary, no content, a Description such as "binary file (ELF
// header), 65,544 bytes". Images (PNG, JPEG, GIF, WebP): Kind image with
// Data when Size <= MaxImageBytes (default 5 MiB), otherwise only a
// Description with format, dimensions and size.
//
// SHA256 always covers the whole file as streamed. Errors: *sandbox.PathError
// wrapping ErrOutsideWorkspace, ErrNotFound, ErrIsDir or ErrUnsupported (not
// a regular file); ctx's error when ctx is done.
func (s *Sandbox) Read(ctx context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
	const op = sandbox.OpRead
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, req.Path, err)
	}
	r, err := s.resolve(op, req.Path, followFinal)
	if err != nil {
		return nil, err
	}
	fi, err := s.root.Stat(r.rel)
	if err != nil {
		return nil, s.pathErr(op, r.display, err)
	}
	if fi.IsDir() {
		return nil, &sandbox.PathError{Op: op, Path: r.display, Err: sandbox.ErrIsDir}
	}
	if !fi.Mode().IsRegular() {
		return nil, &sandbox.PathError{Op: op, Path: r.display, Reason: "not a regular file (" + fi.Mode().Type().String() + ")", Err: sandbox.ErrUnsupported}
	}
	f, err := s.root.Open(r.rel)
	if err != nil {
		return nil, s.pathErr(op, r.display, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, s.pathErr(op, r.display, err)
	}

	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(f, h)}
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(cr, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, s.pathErr(op, r.display, err)
	}
	head = head[:n]
	res := &sandbox.ReadResult{Path: r.display, Size: fi.Size(), ModTime: fi.ModTime(), TotalLines: -1}
	rest := io.MultiReader(bytes.NewReader(head), cr)
	finish := func() (*sandbox.ReadResult, error) {
		if err := drain(ctx, cr); err != nil {
			return nil, ctxOrPathErr(s, op, r.display, err)
		}
		res.SHA256 = hex.EncodeToString(h.Sum(nil))
		return res, nil
	}

	if format, mime := imageFormat(head); format != "" {
		res.Kind = sandbox.KindImage
		res.MIMEType = mime
		dims := ""
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(head)); err == nil {
			dims = fmt.Sprintf(", %dx%d", cfg.Width, cfg.Height)
		}
		limit := orDefault(req.MaxImageBytes, defaultImageBytes)
		if fi.Size() <= limit {
			data, err := io.ReadAll(io.LimitReader(rest, limit+1))
			if err != nil {
				return nil, ctxOrPathErr(s, op, r.display, err)
			}
			if dims == "" {
				cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
				if err != nil {
					// A signature without a decodable header: a model API
					// would refuse it as an image, so it is not one.
					res.Kind = sandbox.KindBinary
					res.MIMEType = mime
					res.Description = fmt.Sprintf("file starts like a %s image but its header does not decode (%v), %s bytes; corrupt or truncated, not returned",
						format, err, commas(fi.Size()))
					return finish()
				}
				dims = fmt.Sprintf(", %dx%d", cfg.Width, cfg.Height)
			}
			if int64(len(data)) <= limit {
				res.Data = data
				res.Description = fmt.Sprintf("%s image%s, %s bytes", format, dims, commas(int64(len(data))))
				return finish()
			}
		}
		res.Description = fmt.Sprintf("%s image%s, %s bytes, over the %s-byte image limit; not returned (downscale or re-encode it, e.g. with execute)",
			format, dims, commas(fi.Size()), commas(limit))
		return finish()
	}

	enc, binary := sniffText(head, int64(len(head)) < fi.Size())
	if binary {
		res.Kind = sandbox.KindBinary
		res.MIMEType = http.DetectContentType(head)
		res.Description = binaryDescription(head, fi.Size(), res.MIMEType)
		return finish()
	}
	res.Kind = sandbox.KindText
	res.Encoding = enc
	res.MIMEType = "text/plain; charset=" + enc
	var src io.Reader = rest
	switch enc {
	case encUTF8:
		if bytes.HasPrefix(head, utf8BOM) {
			res.BOM = true
			io.CopyN(io.Discard, src, 3)
		}
	case encUTF16LE:
		src = transform.NewReader(src, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder())
		res.MIMEType = "text/plain; charset=utf-16le"
	case encUTF16BE:
		src = transform.NewReader(src, unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder())
		res.MIMEType = "text/plain; charset=utf-16be"
	case encLatin1:
		src = charmap.Windows1252.NewDecoder().Reader(src)
		res.MIMEType = "text/plain; charset=windows-1252"
	}

	offset := max(req.Offset, 1)
	limit := orDefault(req.Limit, defaultReadLines)
	maxChars := orDefault(req.MaxLineChars, defaultLineChars)
	maxBytes := orDefault(req.MaxBytes, defaultReadBytes)
	ls := newLineScanner(src, maxChars*utf8.UTFMax)
	stop := func() error { return ctx.Err() }
	var used int64
	lineNo := 0
	counting := true
	invalid := false
	for {
		if lineNo%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, ctxErr(op, r.display, err)
			}
		}
		closed := res.More || len(res.Lines) >= limit
		if res.More && cr.n > s.maxCountBytes() {
			// Past the window and the counting budget: the hash still
			// needs the rest (drained by finish), the line count does not.
			counting = false
			break
		}
		kept, chars, _, err := ls.next(stop)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, ctxOrPathErr(s, op, r.display, err)
		}
		lineNo++
		if lineNo < offset {
			continue
		}
		if closed {
			if !res.More {
				res.More = true
				res.NextOffset = lineNo
			}
			continue
		}
		text := clipChars(kept, maxChars)
		if used+int64(len(text)) > maxBytes {
			if len(res.Lines) > 0 {
				res.More = true
				res.NextOffset = lineNo
				continue
			}
			text = clipBytes(text, int(maxBytes))
		}
		used += int64(len(text))
		t := string(text)
		if !utf8.ValidString(t) {
			invalid = true
			t = string(bytes.ToValidUTF8(text, []byte("\uFFFD")))
		}
		res.Lines = append(res.Lines, sandbox.Line{Number: lineNo, Text: t, Chars: chars})
	}
	if counting {
		res.TotalLines = lineNo
	}
	if invalid && res.Encoding == encUTF8 {
		res.Encoding = encUTF8Invalid
	}
	return finish()
}

// sniffText classifies the first bytes of a file. truncated says the file
// continues past head (so an incomplete rune at the end is not an error).
func sniffText(head []byte, truncated bool) (enc string, binary bool) {
	switch {
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}) && !bytes.HasPrefix(head, []byte{0xFF, 0xFE, 0, 0}):
		return encUTF16LE, false
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		return encUTF16BE, false
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return "", true
	}
	invalid, control, total := 0, 0, 0
	for i := 0; i < len(head); {
		if truncated && !utf8.FullRune(head[i:]) {
			break
		}
		c, size := utf8.DecodeRune(head[i:])
		total++
		switch {
		case c == utf8.RuneError && size == 1:
			invalid++
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != '\b' && c != 0x1B:
			control++
		}
		i += size
	}
	if total == 0 {
		return encUTF8, false
	}
	if invalid*10 > total*3 || control*10 > total {
		return "", true
	}
	if invalid > 0 {
		return encLatin1, false
	}
	return encUTF8, false
}

// imageFormat recognizes the image formats returned as data.
func imageFormat(head []byte) (format, mime string) {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "PNG", "image/png"
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return "JPEG", "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "GIF", "image/gif"
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WEBP")):
		return "WebP", "image/webp"
	}
	return "", ""
}

// binaryHeaders names well-known binary formats by their magic bytes.
var binaryHeaders = []struct {
	magic string
	name  string
}{
	{"\x7fELF", "ELF"},
	{"MZ", "PE/DOS executable"},
	{"\xfe\xed\xfa\xce", "Mach-O"},
	{"\xfe\xed\xfa\xcf", "Mach-O"},
	{"\xce\xfa\xed\xfe", "Mach-O"},
	{"\xcf\xfa\xed\xfe", "Mach-O"},
	{"\xca\xfe\xba\xbe", "Java class / Mach-O universal"},
	{"\x00asm", "WebAssembly"},
	{"%PDF-", "PDF"},
	{"PK\x03\x04", "ZIP"},
	{"\x1f\x8b", "gzip"},
	{"BZh", "bzip2"},
	{"\xfd7zXZ\x00", "xz"},
	{"\x28\xb5\x2f\xfd", "zstd"},
	{"7z\xbc\xaf\x27\x1c", "7-Zip"},
	{"SQLite format 3\x00", "SQLite"},
}

func binaryDescription(head []byte, size int64, mime string) string {
	what := "binary file"
	for _, b := range binaryHeaders {
		if bytes.HasPrefix(head, []byte(b.magic)) {
			what += " (" + b.name + " header)"
			break
		}
	}
	if what == "binary file" && mime != "application/octet-stream" && mime != "" {
		what += " (" + mime + ")"
	}
	return fmt.Sprintf("%s, %s bytes, not shown; use execute with xxd or strings for a bounded view", what, commas(size))
}

// commas formats n with thousands separators (golang.org/x/text/message, English): 65544 -> "65,544".
func commas(n int64) string { return thousands.Sprintf("%d", n) }

var thousands = message.NewPrinter(language.English)

// countingReader counts bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// drain reads r to its end (feeding any hash teed from it), checking ctx
// between chunks.
func drain(ctx context.Context, r io.Reader) error {
	buf := make([]byte, readBufBytes)
	for i := 0; ; i++ {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		_, err := r.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func ctxOrPathErr(s *Sandbox, op sandbox.Op, display string, err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return ctxErr(op, display, err)
	}
	return s.pathErr(op, display, err)
}
