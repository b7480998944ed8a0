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

	"github.com/aibuddy/aibuddy/sandbox"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Read returns a bounded window of req.Path.
//
// Text: lines Offset.. (1-based) up to Limit lines (default 2,000), each
// cut to MaxLineChars characters (default 2,000; Line.Chars keeps the whole
// line's length) and all of them to MaxBytes bytes of text (default 256 KiB).
// The file is streamed with a bounded line buffer, never loaded whole.
// Line endings ("\n", "\r\n") are dropped, tabs are kept raw, and a UTF-8
// byte order mark is removed from line 1 and reported as BOM. Text in
// another encoding (UTF-16, GB18030/GBK, Big5, Shift_JIS, EUC-JP, EUC-KR,
// windows-1252; chosen from the first 8 KiB, see textenc.go) is converted
// to UTF-8 and named in Encoding; in UTF-8 text, and in text whose encoding
// is not recognized (Encoding "unknown ..."), each byte that is not valid
// UTF-8 is shown as \xNN, so Lines are always valid UTF-8 and Chars counts
// what is shown. More and NextOffset say how to continue;
// TotalLines counts the file's lines (-1 when counting stopped after
// Options.MaxCountBytes bytes).
//
// Binary (in the first 8 KiB a NUL byte outside UTF-16, many control bytes,
// or non-ASCII bytes in no recognized encoding with almost no whitespace):
// Kind binary, no content, a Description such as "binary file (ELF
// header), 65,544 bytes". Images (PNG, JPEG, GIF, WebP): Kind image with
// Data when Size <= MaxImageBytes (default 5 MiB), otherwise only a
// Description with format, dimensions and size.
//
// At most Options.MaxReadBytes (default 64 MiB) of the file are read:
// SHA256 covers the bytes read (HashedBytes; the whole file unless it is
// larger), and past the bound Truncated is set, TotalLines is -1 and a line
// the bound cut is not returned. The file is the one object the path walk
// opened (req.Deny applied to its real path first).
//
// Errors: *sandbox.PathError wrapping ErrOutsideWorkspace, ErrDenied,
// ErrSpecialFile (a FIFO, socket or device, refused unopened), ErrTooDeep,
// ErrNotFound or ErrIsDir; ctx's error when ctx is done.
func (s *Sandbox) Read(ctx context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
	const op = sandbox.OpRead
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, req.Path, err)
	}
	t, err := s.walkPath(op, req.Path, walkOpts{open: openFile, deny: req.Deny})
	if err != nil {
		return nil, err
	}
	defer t.close()
	r := resolved{rel: t.real, display: t.display}
	const reading, nothing = "while it was being read", "nothing was read; look at it again (ls), then retry"
	f, fi := t.file, t.st

	h := sha256.New()
	bound := &boundReader{r: f, left: s.maxReadBytes()}
	cr := &countingReader{r: io.TeeReader(bound, h)}
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(cr, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, s.raced(op, r.display, err, reading, nothing)
	}
	head = head[:n]
	res := &sandbox.ReadResult{Path: r.display, Size: fi.size, ModTime: fi.mtime, TotalLines: -1}
	rest := io.MultiReader(bytes.NewReader(head), cr)
	finish := func() (*sandbox.ReadResult, error) {
		if err := drain(ctx, cr); err != nil {
			return nil, ctxOrPathErr(s, op, r.display, err)
		}
		res.SHA256 = hex.EncodeToString(h.Sum(nil))
		res.HashedBytes = cr.n
		if bound.hit {
			res.Truncated = true
			res.TotalLines = -1
		}
		return res, nil
	}

	if format, mime := imageFormat(head); format != "" {
		res.Kind = sandbox.KindImage
		res.MIMEType = mime
		dims := ""
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(head)); err == nil {
			dims = fmt.Sprintf(", %dx%d", cfg.Width, cfg.Height)
		}
		limit := min(orDefault(req.MaxImageBytes, defaultImageBytes), s.maxReadBytes())
		if fi.size <= limit {
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
						format, err, commas(fi.size))
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
			format, dims, commas(fi.size), commas(limit))
		return finish()
	}

	te, binary := sniffEncoding(head, int64(len(head)) < fi.size)
	if binary {
		res.Kind = sandbox.KindBinary
		res.MIMEType = http.DetectContentType(head)
		res.Description = binaryDescription(head, fi.size, res.MIMEType)
		return finish()
	}
	res.Kind = sandbox.KindText
	res.Encoding = te.name
	switch {
	case te.decodable():
		res.MIMEType = "text/plain; charset=" + te.name
	case te.unknown:
		res.MIMEType = "text/plain"
	default:
		res.MIMEType = "text/plain; charset=utf-8"
		res.BOM = bytes.HasPrefix(head, utf8BOM)
	}
	var escaped int64 // bytes that are not valid UTF-8, shown as \xNN (UTF-16: shown as U+FFFD)
	src := te.reader(rest, &escaped)

	offset := max(req.Offset, 1)
	limit := orDefault(req.Limit, defaultReadLines)
	maxChars := orDefault(req.MaxLineChars, defaultLineChars)
	maxBytes := orDefault(req.MaxBytes, defaultReadBytes)
	ls := newLineScanner(src, maxChars*utf8.UTFMax)
	stop := func() error { return ctx.Err() }
	var used int64
	lineNo := 0
	counting := true
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
		if ls.eof && bound.hit {
			// The read bound cut this line: it is not returned, and
			// the file is not counted to its end.
			counting = false
			break
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
		res.Lines = append(res.Lines, sandbox.Line{Number: lineNo, Text: string(text), Chars: chars})
	}
	if counting && !bound.hit {
		res.TotalLines = lineNo
	}
	if escaped > 0 && res.Encoding == encUTF8 {
		res.Encoding = encUTF8Invalid
	}
	if te.decodable() {
		res.Undecodable = escaped
	}
	return finish()
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

// boundReader reads at most left bytes of r, then reports io.EOF; hit is
// set when r had more (one byte is read past the bound to know).
type boundReader struct {
	r    io.Reader
	left int64
	hit  bool
}

func (b *boundReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if !b.hit {
			var one [1]byte
			for {
				n, err := b.r.Read(one[:])
				if n > 0 {
					b.hit = true
					break
				}
				if err != nil {
					break
				}
			}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

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
