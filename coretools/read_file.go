package coretools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif"  // register GIF for image.DecodeConfig
	_ "image/jpeg" // register JPEG
	_ "image/png"  // register PNG
	"net/http"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// readInput is the input of read_file.
type readInput struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

const readSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to read, relative to the workspace root."},
    "offset": {"type": "integer", "minimum": 1, "description": "First line to show, 1-based. Default 1. To continue a cut read, use the offset the previous result names."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Lines to show. Default and maximum %d."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

// maxTruncationNotes is how many cut lines read_file names one by one; the
// rest are counted in one note.
const maxTruncationNotes = 5

func (f *fsTools) readFileTool() *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name:        "read_file",
		Description: f.description("read_file"),
		InputSchema: []byte(fmt.Sprintf(readSchema, f.opts.ReadMaxLines, f.opts.ReadMaxLines)),
		Annotations: fsReadOnly("Read file"),
		Handler:     fsShownPaths(f.readFile),
		Access:      tool.PathAccess(tool.AccessRead, "path"),
	})
}

func (f *fsTools) readFile(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[readInput](call)
	if err != nil {
		return nil, err
	}
	in.Path = fsPathArg(in.Path) // a name as ls, glob and grep print it (pathquote.go)
	if err := f.checkDenied("read_file", in.Path); err != nil {
		return nil, err
	}
	limit := f.opts.ReadMaxLines
	if in.Limit > 0 && in.Limit < limit {
		limit = in.Limit
	}
	offset := max(in.Offset, 1)
	res, err := f.sb.Read(ctx, sandbox.ReadRequest{
		Path:          in.Path,
		Offset:        offset,
		Limit:         limit,
		MaxLineChars:  f.opts.ReadMaxLineChars,
		MaxBytes:      f.opts.ReadMaxBytes,
		MaxImageBytes: f.opts.ReadMaxImageBytes,
		Deny:          f.deny(false),
	})
	if err != nil {
		return nil, fsError(err, "read_file", in.Path)
	}
	if !res.Truncated {
		// A digest of part of the file says nothing about the rest: it
		// never becomes edit_file's expected digest.
		f.remember(res.SHA256, in.Path, res.Path)
	}
	switch res.Kind {
	case sandbox.KindImage:
		return formatImage(in.Path, res, f.opts.ReadMaxImageBytes)
	case sandbox.KindBinary:
		return formatBinary(in.Path, res), nil
	}
	text, ev, terr := formatRead(in.Path, res, offset, limit, &f.opts)
	if terr != nil {
		return nil, terr
	}
	return tool.TextWith(text, ev), nil
}

// formatRead renders a text window in the model form (case BH-002): each
// line is lineNumberPrefix(n) followed by the line exactly as read, raw tabs
// kept, no line ending. Around the lines it adds notes:
//
//   - first and last, when the window stops before the end: the
//     [tool.Cut] notice every cut result carries (case BH-047), e.g.
//     "[cut by read_file at the 30,000-character result bound: the file has
//     2,000 lines; lines 1-342 shown; lines 343-2,000 omitted; continue
//     with read_file {"path":"notes.md","offset":343}]", naming the bound
//     that stopped it; the offset is the first line not shown;
//   - before: the file has a UTF-8 BOM (never shown as U+FEFF in line 1,
//     case BH-007), or a text encoding other than UTF-8;
//   - after, when a window that starts past line 1 reaches the end:
//     "showing lines A-B of N (end of file)";
//   - after, per cut line (case BH-014): "line 1 truncated: 2,000 of
//     2,000,000 characters shown; use grep or execute on a byte range for
//     the rest", the first maxTruncationNotes by number, the rest counted.
//
// Bounds are re-applied here whatever the sandbox returned: at most
// opts.ReadMaxLineChars characters per line, opts.ReadMaxBytes bytes of
// line text, and opts.MaxOutputChars characters of result text in all
// (notes, line-number prefixes and newlines included), so the result bound
// (limits.resultMaxChars, which MaxOutputChars follows) never cuts a read
// in its middle. The window stops before the first line that would pass
// any of them, and the continuation offset names exactly that line; a
// first line that alone passes the character bound is cut to fit, with its
// truncation note. An offset past the end is a Parameters error.
func formatRead(p string, res *sandbox.ReadResult, offset, limit int, opts *FSOptions) (string, tool.Evidence, *tool.Error) {
	ev := tool.Evidence{
		"path":        p,
		"sha256":      res.SHA256,
		"bytes":       res.Size,
		"total_lines": res.TotalLines,
	}
	bounded := ""
	if res.Truncated {
		ev["sha256_bytes"] = res.HashedBytes
		ev["read_truncated"] = true
		bounded = readBoundNote(res)
	}
	if len(res.Lines) == 0 {
		if res.Truncated && offset > 1 {
			return "", nil, tool.Errorf(tool.Parameters, "offset %d lies past what read_file reads of %s: %s", offset, p, bounded).
				WithHint(fmt.Sprintf("use execute for lines past that point, e.g. `sed -n '%d,%dp' %s`", offset, offset+99, fsShellQuote(p)))
		}
		if offset > 1 && res.Size > 0 {
			e := tool.Errorf(tool.Parameters, "offset %d is past the end of %s (%s)", offset, p, linesOf(res.TotalLines))
			if res.TotalLines > 0 {
				e.Hint = fmt.Sprintf("call read_file with offset between 1 and %d", res.TotalLines)
			} else {
				e.Hint = "call read_file without offset"
			}
			return "", nil, e
		}
		ev["lines_shown"] = 0
		return fmt.Sprintf("%s is empty (%s)", p, fsPlural(int(res.Size), "byte", "bytes")), ev, nil
	}

	var head []string
	bom := res.BOM
	switch enc := strings.ToLower(res.Encoding); {
	case enc == "" || enc == "utf-8" || enc == "utf8":
	case strings.HasPrefix(enc, "utf-8") && strings.Contains(enc, `\xnn`):
		head = append(head, `note: the file is UTF-8 except for bytes that are not valid UTF-8; each is shown as \xNN (upper-case hex), and edit_file's old_string may use the same \xNN form to match it`)
	case strings.HasPrefix(enc, "utf-8"):
		head = append(head, "note: the file is not entirely valid UTF-8: "+res.Encoding)
	case strings.HasPrefix(enc, "unknown"):
		head = append(head, `note: the file is not UTF-8 and its text encoding was not recognized (not UTF-16, GB18030/GBK, Big5, Shift_JIS, EUC-JP, EUC-KR or windows-1252); ASCII is shown as is and every other byte as \xNN (upper-case hex), and edit_file's old_string may use the same \xNN form to match it`)
	default:
		head = append(head, fmt.Sprintf("note: the file's text encoding is %s, not UTF-8 (detected from its content); lines are shown converted to UTF-8, and edit_file matches and writes in %s, so the bytes it does not change stay as they are", res.Encoding, res.Encoding))
	}
	if n := res.Undecodable; n > 0 {
		were := "bytes were"
		if n == 1 {
			were = "byte was"
		}
		head = append(head, fmt.Sprintf("note: %s %s not valid %s (an unpaired surrogate, or an odd final byte) and shown as U+FFFD; the file itself is unchanged", fsCount(n), were, res.Encoding))
		ev["undecodable_bytes"] = n
	}

	// The lines the line and byte bounds allow, each clipped.
	type shownLine struct {
		number       int
		text         string
		shown, chars int // characters shown and in the whole line
	}
	var lines []shownLine
	var used int64
	stop := ""     // the bound that stopped the window before res ended: "bytes", "characters"
	stoppedAt := 0 // the line the byte bound stopped before, 0 if none
	invalid := false
	for _, l := range res.Lines {
		text := l.Text
		if l.Number == 1 && strings.HasPrefix(text, "\uFEFF") {
			text = strings.TrimPrefix(text, "\uFEFF")
			bom = true
		}
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
			invalid = true
		}
		chars := max(l.Chars, fsRunes(text))
		text, _ = fsClip(text, opts.ReadMaxLineChars)
		if len(lines) > 0 && used+int64(len(text)) > opts.ReadMaxBytes {
			stop, stoppedAt = "bytes", l.Number
			break
		}
		used += int64(len(text))
		lines = append(lines, shownLine{l.Number, text, fsRunes(text), chars})
	}
	if bom {
		head = append([]string{"note: the file starts with a UTF-8 byte order mark (EF BB BF); it is not shown in line 1, and edit_file keeps it"}, head...)
	}
	if invalid {
		head = append(head, "note: some bytes are not valid UTF-8 and are shown as U+FFFD (\uFFFD)")
	}

	// render builds the result for lines[:n]; the character bound then
	// takes lines off the end until it fits.
	render := func(n int, stop string) (string, int) {
		first, last := lines[0].number, lines[n-1].number
		next := 0
		switch {
		case n < len(lines):
			next = lines[n].number
		case stoppedAt > 0:
			next = stoppedAt
		case res.More:
			next = max(res.NextOffset, last+1)
		}
		var tail []string
		notice := ""
		if next > 0 {
			c := tool.Cut{By: "read_file", File: true, TotalLines: int64(res.TotalLines),
				ShownFirst: int64(first), ShownLast: int64(last),
				OmittedFirst: int64(next), OmittedLast: max(int64(res.TotalLines), 0)}
			switch {
			case stop == "characters":
				c.Bound = "the " + fsCount(int64(opts.MaxOutputChars)) + "-character result bound"
			case stop == "bytes" || last-first+1 < limit:
				c.Bound = "the " + fsCount(opts.ReadMaxBytes) + "-byte bound per call"
			case limit < opts.ReadMaxLines:
				c.Bound = "the " + fsCount(int64(limit)) + "-line limit of this call"
			default:
				c.Bound = "the " + fsCount(int64(opts.ReadMaxLines)) + "-line bound per call"
			}
			args := readInput{Path: p, Offset: next}
			if limit < opts.ReadMaxLines {
				args.Limit = limit
			}
			c.Next = "continue with read_file " + fsJSON(args)
			notice = c.Notice()
		} else if first > 1 && res.Truncated {
			tail = append(tail, fmt.Sprintf("showing lines %d-%d", first, last))
		} else if first > 1 {
			tail = append(tail, fmt.Sprintf("showing lines %d-%d%s (end of file)", first, last, ofTotal(res.TotalLines)))
		}
		cuts := 0
		for _, l := range lines[:n] {
			if l.shown >= l.chars {
				continue
			}
			cuts++
			if cuts <= maxTruncationNotes {
				tail = append(tail, fmt.Sprintf("line %d truncated: %s of %s characters shown; use grep or execute on a byte range for the rest",
					l.number, fsCount(int64(l.shown)), fsCount(int64(l.chars))))
			}
		}
		if rest := cuts - maxTruncationNotes; rest > 0 {
			tail = append(tail, fmt.Sprintf("%s also truncated to %s characters", fsPlural(rest, "more line", "more lines"), fsCount(int64(opts.ReadMaxLineChars))))
		}
		if bounded != "" && next == 0 {
			tail = append(tail, bounded+"; lines after "+strconv.Itoa(last)+" are not shown")
		}
		if notice != "" {
			tail = append(tail, notice)
		}
		var out strings.Builder
		if notice != "" {
			out.WriteString(notice)
			out.WriteByte('\n')
		}
		for _, h := range head {
			out.WriteString(h)
			out.WriteByte('\n')
		}
		for _, l := range lines[:n] {
			out.WriteString(lineNumberPrefix(l.number))
			out.WriteString(l.text)
			out.WriteByte('\n')
		}
		if len(tail) > 0 {
			out.WriteByte('\n')
			out.WriteString(strings.Join(tail, "\n"))
		}
		return strings.TrimRight(out.String(), "\n"), next
	}

	// The character bound: count the lines that fit without the tail, then
	// take lines off until the whole result (tail included) fits.
	maxChars := opts.MaxOutputChars
	n, total := 0, 0
	for _, s := range head {
		total += fsRunes(s) + 1
	}
	for _, l := range lines {
		c := fsRunes(lineNumberPrefix(l.number)) + l.shown + 1
		if n > 0 && total+c > maxChars {
			break
		}
		total += c
		n++
	}
	if n < len(lines) {
		stop = "characters"
	}
	text, next := render(n, stop)
	for n > 1 && fsRunes(text) > maxChars {
		n--
		stop = "characters"
		text, next = render(n, stop)
	}
	if over := fsRunes(text) - maxChars; n == 1 && over > 0 {
		// One line alone passes the bound: cut it to fit. Its truncation
		// note lengthens the tail, so cut once more if needed.
		for range 3 {
			l := &lines[0]
			l.text, _ = fsClip(l.text, max(l.shown-over, 0))
			l.shown = fsRunes(l.text)
			text, next = render(1, stop)
			if over = fsRunes(text) - maxChars; over <= 0 || l.shown == 0 {
				break
			}
		}
	}

	shown := lines[:n]
	first, last := shown[0].number, shown[n-1].number
	truncatedLines := 0
	for _, l := range shown {
		if l.shown < l.chars {
			truncatedLines++
		}
	}
	ev["first_line"] = first
	ev["last_line"] = last
	ev["lines_shown"] = last - first + 1
	ev["truncated_lines"] = truncatedLines
	ev["more"] = next > 0
	if next > 0 {
		ev["next_offset"] = next
	}
	ev["bom"] = bom
	return text, ev, nil
}

// fsJSON renders v as compact JSON without HTML escaping, for a call the
// model can copy.
func fsJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

func linesOf(total int) string {
	if total < 0 {
		return "line count unknown"
	}
	return fsPlural(total, "line", "lines")
}

func ofTotal(total int) string {
	if total > 0 {
		return " of " + fsCount(int64(total))
	}
	return ""
}

// formatBinary is read_file's answer for a binary file (case BH-011): a
// short notice "P: binary file (ELF header), 65,544 bytes, not shown; use
// execute with xxd or strings for a bounded view, e.g. ..." built from the
// sandbox's Description and the size. It is not an error: the call did what
// it could, and the notice says how to look inside.
func formatBinary(p string, res *sandbox.ReadResult) *tool.Result {
	desc := strings.TrimSpace(res.Description)
	if desc == "" {
		desc = "binary file"
	}
	if !strings.Contains(desc, "binary") {
		desc = "binary file (" + desc + ")"
	}
	if !strings.Contains(desc, fsCount(res.Size)) {
		desc += ", " + fsPlural(int(res.Size), "byte", "bytes")
	}
	if !strings.Contains(desc, "not shown") {
		desc += ", not shown"
	}
	if !strings.Contains(desc, "execute") {
		desc += "; use execute with xxd or strings for a bounded view"
	}
	text := fmt.Sprintf("%s: %s, e.g. `xxd -l 512 %s` or `strings -n 8 %s | head -100`",
		p, strings.TrimRight(desc, ". "), fsShellQuote(p), fsShellQuote(p))
	ev := tool.Evidence{"path": p, "kind": "binary", "bytes": res.Size, "sha256": res.SHA256}
	if res.Truncated {
		ev["sha256_bytes"] = res.HashedBytes
		ev["read_truncated"] = true
		text += "\n" + readBoundNote(res)
	}
	return tool.TextWith(text, ev)
}

// formatImage is read_file's answer for an image (case BH-013): an image
// block when its bytes are within maxBytes, otherwise a Projection-stage
// error with its dimensions and size, so an image the provider would reject
// never enters the transcript.
func formatImage(p string, res *sandbox.ReadResult, maxBytes int64) (*tool.Result, error) {
	size := res.Size
	if size == 0 {
		size = int64(len(res.Data))
	}
	dims := ""
	if len(res.Data) > 0 {
		if cfg, format, err := image.DecodeConfig(bytes.NewReader(res.Data)); err == nil {
			dims = fmt.Sprintf("%d×%d %s", cfg.Width, cfg.Height, strings.ToUpper(format))
		}
	}
	if len(res.Data) == 0 || int64(len(res.Data)) > maxBytes {
		what := res.Description
		if dims != "" && !strings.Contains(what, "×") {
			what = strings.TrimPrefix(what+", "+dims, ", ")
		}
		if !strings.Contains(what, fsCount(size)) {
			what = strings.TrimPrefix(what+", "+fsPlural(int(size), "byte", "bytes"), ", ")
		}
		msg := fmt.Sprintf("image %s is too large to show: %s", p, what)
		if !strings.Contains(what, "limit") {
			msg += fmt.Sprintf(" (the limit is %s bytes per image)", fsCount(maxBytes))
		}
		return nil, &tool.Error{Stage: tool.Projection, Msg: msg,
			Hint: fmt.Sprintf("make a smaller copy with execute, e.g. `convert %s -resize 1568x1568 -quality 85 %s`, and read that", fsShellQuote(p), fsShellQuote(smallName(p)))}
	}
	mime := res.MIMEType
	if mime == "" {
		mime = http.DetectContentType(res.Data)
	}
	desc := fmt.Sprintf("%s: %s image", p, mime)
	if dims != "" {
		desc += ", " + dims
	}
	desc += ", " + fsPlural(len(res.Data), "byte", "bytes")
	return &tool.Result{
		Content: []tool.Content{
			{Type: tool.TextContent, Text: desc},
			{Type: tool.ImageContent, Data: res.Data, MIMEType: mime},
		},
		Evidence: tool.Evidence{"path": p, "kind": "image", "bytes": len(res.Data), "mime_type": mime, "sha256": res.SHA256},
	}, nil
}

// shellQuote quotes p for a POSIX shell when it needs it.
func fsShellQuote(p string) string {
	if p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return p
	}
	if needsQuote(p) {
		// A name with control, invisible or non-UTF-8 bytes: built by
		// printf from octal escapes, so the command line shows none of them
		// raw and means the same file in any POSIX sh.
		var b strings.Builder
		b.WriteString(`"$(printf '`)
		for i := 0; i < len(p); i++ {
			switch c := p[i]; {
			case c == '%':
				b.WriteString("%%")
			case c == '\\':
				b.WriteString(`\\`)
			case c == '\'':
				b.WriteString(`\047`)
			case c < 0x20 || c >= 0x7f || c == '"':
				fmt.Fprintf(&b, `\%03o`, c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteString(`')"`)
		return b.String()
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// smallName names the downscaled copy of an image: "a/shot.png" ->
// "a/shot.small.jpg".
func smallName(p string) string {
	return strings.TrimSuffix(p, path.Ext(p)) + ".small.jpg"
}

// readBoundNote says that the sandbox stopped reading a file at its read
// bound, and what the digest covers: "read_file reads at most the first
// 67,108,864 bytes of this 10,737,418,240-byte file (the sandbox's
// maxReadBytes setting); its sha256 covers those bytes only".
func readBoundNote(res *sandbox.ReadResult) string {
	return fmt.Sprintf("read_file reads at most the first %s of this %s-byte file (setting sandbox.maxReadBytes); its sha256 covers those bytes only",
		fsPlural(int(res.HashedBytes), "byte", "bytes"), fsCount(res.Size))
}
