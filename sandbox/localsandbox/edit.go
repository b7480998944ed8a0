package localsandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/sandbox"
)

// Edit applies req.Edits in order to req.Path, all or nothing.
//
// Matching is exact substring matching on the file's bytes with one
// adaptation: line endings. Old and New are compared with "\r\n" and "\n"
// treated alike, so an LF old string matches in a CRLF file (BH-001) and
// uniqueness is counted after that adaptation; each line ending New
// introduces takes the ending of the line it replaces (of the last replaced
// line when New has more lines, of the line holding the match when Old has
// none), so no line outside the match changes and the file is never
// normalized as a whole. Nothing else is adapted: no whitespace, quote or
// Unicode normalization (BH-002, BH-003). New is literal; "$1" or "$&" land
// as written (BH-005). A UTF-8 byte order mark stays in place and text at
// line 1 column 1 matches after it (BH-007).
//
// Old must occur exactly once unless ReplaceAll. Failures are
// *sandbox.EditError: ErrEmptyOld (Old is ""), ErrNoOp (Old equals New after
// line-ending adaptation), ErrNoMatch (with Candidates naming the closest
// lines and why they differ) or ErrAmbiguous (with Matches and the lines).
// ExpectedSHA256 that differs from the file's digest fails with ErrStale
// inside a *sandbox.PathError. On any failure nothing is written: bytes, size
// and modification time stay, and no temporary file remains (BH-006). The
// write itself is atomic, as in Write. What is read and replaced is the one
// object the path walk opened (req.Deny applied to its real path first; a
// FIFO, socket or device refused unopened): the rename lands only if the
// name still holds that file, unchanged (same file, size and modification
// time, checked under the rename lock, which is held only for that check
// and the rename); otherwise ErrStale (modified) or ErrChanged (replaced by
// another kind of object), and nothing is written.
//
// The result's Bytes and SHA256 are read back from disk, and Region holds
// the changed lines as now on disk with up to 3 lines of context (at most 40
// lines, each cut to 2,000 characters).
func (s *Sandbox) Edit(ctx context.Context, req sandbox.EditRequest) (*sandbox.EditResult, error) {
	const op = sandbox.OpEdit
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, req.Path, err)
	}
	// Parameter faults first: they need no file access.
	for i, e := range req.Edits {
		if e.Old == "" {
			return nil, &sandbox.EditError{Index: i, Err: sandbox.ErrEmptyOld,
				Candidates: []string{"old_string must not be empty; use write_file to create or replace a whole file"}}
		}
		if crlfToLF(e.Old) == crlfToLF(e.New) {
			return nil, &sandbox.EditError{Index: i, Err: sandbox.ErrNoOp,
				Candidates: []string{"old_string and new_string are identical; nothing to change"}}
		}
	}
	// The file is opened once, and what is read and replaced is that
	// one object: a name swapped for a link or a FIFO is refused, and the
	// rename at the end lands only if the name still holds it, unchanged.
	t, err := s.walkPath(op, req.Path, walkOpts{open: openFile, strict: true, deny: req.Deny})
	if err != nil {
		var pe *sandbox.PathError
		if errors.As(err, &pe) && errors.Is(err, sandbox.ErrNotFound) && pe.Reason == "" {
			pe.Reason = "use write_file to create a file"
		}
		return nil, err
	}
	defer t.close()
	r := resolved{rel: t.real, display: t.display}
	const editing, nothing = "while it was being edited", "nothing was written; read it again, then edit"
	before := t.st
	if before.size > s.maxEditBytes() {
		return nil, &sandbox.PathError{Op: op, Path: r.display,
			Reason: fmt.Sprintf("file is %s bytes, over the %s-byte edit limit", commas(before.size), commas(s.maxEditBytes())),
			Err:    sandbox.ErrUnsupported}
	}
	orig, err := io.ReadAll(io.LimitReader(t.file, s.maxEditBytes()+1))
	if err != nil {
		return nil, s.raced(op, r.display, err, editing, nothing)
	}
	if int64(len(orig)) > s.maxEditBytes() {
		return nil, &sandbox.PathError{Op: op, Path: r.display,
			Reason: fmt.Sprintf("file grew past the %s-byte edit limit while it was read", commas(s.maxEditBytes())),
			Err:    sandbox.ErrUnsupported}
	}
	sum := sha256.Sum256(orig)
	if want := strings.TrimSpace(req.ExpectedSHA256); want != "" && !strings.EqualFold(want, hex.EncodeToString(sum[:])) {
		return nil, &sandbox.PathError{Op: op, Path: r.display,
			Reason: "expected sha256 " + want + ", the file now has " + hex.EncodeToString(sum[:]) + "; read it again",
			Err:    sandbox.ErrStale}
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, r.display, err)
	}

	// Text in another encoding (as Read decodes it) is matched and replaced
	// as UTF-8 and encoded back, when that round trip keeps every byte;
	// otherwise the bytes are matched as they are, and a byte that is not
	// valid UTF-8 may be written as \xNN, the form Read shows it in.
	te, _ := sniffEncoding(orig[:min(len(orig), sniffBytes)], len(orig) > sniffBytes)
	prev := orig
	decoded := false
	if te.decodable() {
		prev, decoded = te.decode(orig)
		if !decoded {
			prev = orig
		}
	}
	bom := !decoded && bytes.HasPrefix(orig, utf8BOM)
	body := prev
	if bom {
		body = orig[len(utf8BOM):]
	}
	total := 0
	for i, e := range req.Edits {
		next, n, eerr := replaceAdapted(body, e)
		if eerr != nil && !decoded && eerr.Err == sandbox.ErrNoMatch {
			if old, ok := unescapeHigh(e.Old); ok {
				nw, _ := unescapeHigh(e.New)
				next, n, eerr = replaceAdapted(body, sandbox.Replacement{Old: old, New: nw, ReplaceAll: e.ReplaceAll})
			}
		}
		if eerr != nil {
			if eerr.Err == sandbox.ErrNoMatch && !decoded && !utf8.Valid(body) {
				eerr.Candidates = append(eerr.Candidates, notUTF8Note(te))
			}
			eerr.Index = i
			return nil, eerr
		}
		body = next
		total += n
	}
	out := body
	switch {
	case decoded:
		enc, err := te.encode(body)
		if err != nil {
			return nil, &sandbox.EditError{Err: sandbox.ErrEncoding,
				Candidates: []string{err.Error() + "; write new_string with characters it has, or convert the file to UTF-8 first (e.g. iconv -f " + te.name + " -t UTF-8)"}}
		}
		out = enc
	case bom:
		out = append(append([]byte(nil), utf8BOM...), body...)
	}

	// Under the rename lock: the name must still hold the object read,
	// unchanged since (same file, size and modification time).
	stale := func() error {
		now, err := lstatAt(t.dir, t.name)
		if err != nil {
			return s.raced(op, r.display, err, editing, nothing)
		}
		if !now.mode.IsRegular() {
			return &sandbox.PathError{Op: op, Path: r.display, Reason: "replaced by a " + kindName(now.mode) + " " + editing + "; " + nothing, Err: sandbox.ErrChanged}
		}
		if !sameFile(now, before) || now.size != before.size || !now.mtime.Equal(before.mtime) {
			return &sandbox.PathError{Op: op, Path: r.display, Reason: "modified by someone else during the edit; nothing was written", Err: sandbox.ErrStale}
		}
		return nil
	}
	tmp, err := s.writeAtomic(ctx, op, t, out, before.mode.Perm(), true, stale)
	if err != nil {
		return nil, err
	}
	defer tmp.Close()

	res := &sandbox.EditResult{Path: r.display, Replacements: total}
	start, end := changedLines(prev, body)
	if bom {
		start, end = changedLines(orig, out)
	}
	res.StartLine = max(1, start-regionContext)
	res.EndLine = min(end+regionContext, res.StartLine+maxRegionLines-1)
	if err := s.readBackRegion(tmp, r, te, res); err != nil {
		return nil, err
	}
	return res, nil
}

// replaceAdapted applies one replacement to body with line-ending
// adaptation. It returns the new body and the count of replacements.
func replaceAdapted(body []byte, e sandbox.Replacement) ([]byte, int, *sandbox.EditError) {
	v := newLFView(body)
	old := []byte(crlfToLF(e.Old))
	nw := crlfToLF(e.New)

	var at []int // match starts in v.norm
	for i := 0; i <= len(v.norm)-len(old); {
		j := bytes.Index(v.norm[i:], old)
		if j < 0 {
			break
		}
		at = append(at, i+j)
		i += j + len(old)
	}
	switch {
	case len(at) == 0:
		return nil, 0, &sandbox.EditError{Err: sandbox.ErrNoMatch, Candidates: candidates(v.norm, string(old))}
	case len(at) > 1 && !e.ReplaceAll:
		lines := make([]int, 0, min(len(at), maxMatchLines))
		line, pos := 1, 0
		for _, a := range at[:min(len(at), maxMatchLines)] {
			line += bytes.Count(v.norm[pos:a], []byte{'\n'})
			pos = a
			lines = append(lines, line)
		}
		return nil, 0, &sandbox.EditError{Err: sandbox.ErrAmbiguous, Matches: len(at), MatchLines: lines,
			Candidates: []string{fmt.Sprintf("%d matches, starting at lines %s; add surrounding lines to old_string to make it unique, or set replace_all", len(at), joinLines(lines, len(at)))}}
	}

	defEnding := v.dominantEnding()
	var out bytes.Buffer
	out.Grow(len(body) + len(at)*(len(nw)-len(old)+8))
	prev := 0
	for _, a := range at {
		bs, oe := v.idx[a], v.idx[a+len(old)]
		out.Write(body[prev:bs])
		// The endings of the lines the match spans, in order.
		var endings []string
		span := body[bs:oe]
		for k, c := range span {
			if c == '\n' {
				if k > 0 && span[k-1] == '\r' {
					endings = append(endings, "\r\n")
				} else {
					endings = append(endings, "\n")
				}
			}
		}
		fallback := v.endingAfter(oe, defEnding)
		if len(endings) > 0 {
			fallback = endings[len(endings)-1]
		}
		k := 0
		for i := 0; i < len(nw); i++ {
			if nw[i] != '\n' {
				out.WriteByte(nw[i])
				continue
			}
			if k < len(endings) {
				out.WriteString(endings[k])
			} else {
				out.WriteString(fallback)
			}
			k++
		}
		prev = oe
	}
	out.Write(body[prev:])
	return out.Bytes(), len(at), nil
}

// lfView is body with every "\r\n" seen as "\n", and a map back.
type lfView struct {
	body []byte
	norm []byte
	idx  []int // idx[i]: offset in body of norm[i]; idx[len(norm)] = len(body)
}

func newLFView(body []byte) *lfView {
	v := &lfView{body: body, norm: make([]byte, 0, len(body)), idx: make([]int, 0, len(body)+1)}
	for i := 0; i < len(body); i++ {
		if body[i] == '\r' && i+1 < len(body) && body[i+1] == '\n' {
			v.norm = append(v.norm, '\n')
			v.idx = append(v.idx, i)
			i++
			continue
		}
		v.norm = append(v.norm, body[i])
		v.idx = append(v.idx, i)
	}
	v.idx = append(v.idx, len(body))
	return v
}

// dominantEnding is the file's more frequent line ending ("\n" on a tie or
// when there is none).
func (v *lfView) dominantEnding() string {
	lf := bytes.Count(v.body, []byte{'\n'})
	crlf := bytes.Count(v.body, []byte("\r\n"))
	if crlf > lf-crlf {
		return "\r\n"
	}
	return "\n"
}

// endingAfter is the ending of the line holding body offset off, or def
// when that line has none.
func (v *lfView) endingAfter(off int, def string) string {
	j := bytes.IndexByte(v.body[off:], '\n')
	if j < 0 {
		return def
	}
	if off+j > 0 && v.body[off+j-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// joinLines lists match lines: "2, 7, 7, 40", then "…" when total says
// there are more than listed.
func joinLines(lines []int, total int) string {
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = strconv.Itoa(l)
	}
	if total > len(lines) {
		parts = append(parts, "…")
	}
	return strings.Join(parts, ", ")
}

func crlfToLF(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// changedLines returns the 1-based lines of after that differ from before
// (by common prefix and suffix).
func changedLines(before, after []byte) (start, end int) {
	p := 0
	for p < len(before) && p < len(after) && before[p] == after[p] {
		p++
	}
	q := 0
	for q < len(before)-p && q < len(after)-p && before[len(before)-1-q] == after[len(after)-1-q] {
		q++
	}
	e := len(after) - q // changed bytes are after[p:e]
	start = 1 + bytes.Count(after[:p], []byte{'\n'})
	end = start
	if e > p {
		end = 1 + bytes.Count(after[:e-1], []byte{'\n'})
	}
	return start, end
}

// readBackRegion streams f, the file renamed into place, from its start
// once for Bytes, SHA256 and the Region lines res.StartLine..res.EndLine,
// decoded as te (as Read shows them), and clamps EndLine to the file.
func (s *Sandbox) readBackRegion(f *os.File, r resolved, te textEncoding, res *sandbox.EditResult) error {
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(io.NewSectionReader(f, 0, 1<<62), h)}
	ls := newLineScanner(te.reader(cr, nil), regionLineChars*utf8.UTFMax)
	n := 0
	for {
		kept, chars, _, err := ls.next(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			return s.pathErr(sandbox.OpEdit, r.display, err)
		}
		n++
		if n >= res.StartLine && n <= res.EndLine {
			text := clipChars(kept, regionLineChars)
			res.Region = append(res.Region, sandbox.Line{Number: n, Text: string(text), Chars: chars})
		}
		if n > res.EndLine {
			break
		}
	}
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return s.pathErr(sandbox.OpEdit, r.display, err)
	}
	if len(res.Region) > 0 {
		res.StartLine = res.Region[0].Number
		res.EndLine = res.Region[len(res.Region)-1].Number
	} else {
		res.StartLine, res.EndLine = 0, 0
	}
	res.Bytes = cr.n
	res.SHA256 = hex.EncodeToString(h.Sum(nil))
	return nil
}

// notUTF8Note explains why a non-ASCII old_string finds no match in a
// file that is not valid UTF-8 and was not decoded.
func notUTF8Note(te textEncoding) string {
	what := "the file is not valid UTF-8"
	if te.decodable() {
		what = "the file is mostly " + te.display() + " but has bytes that do not decode, so it is matched as bytes"
	}
	return what + `: text that is not ASCII matches only as read_file shows it, with each byte that is not UTF-8 as \xNN`
}

// bomSkipper drops a leading UTF-8 BOM.
type bomSkipper struct {
	r    io.Reader
	done bool
	pend []byte
}

func (b *bomSkipper) Read(p []byte) (int, error) {
	if !b.done {
		b.done = true
		head := make([]byte, 3)
		n, err := io.ReadFull(b.r, head)
		head = head[:n]
		if !bytes.Equal(head, utf8BOM) {
			b.pend = head
		}
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return 0, err
		}
	}
	if len(b.pend) > 0 {
		n := copy(p, b.pend)
		b.pend = b.pend[n:]
		return n, nil
	}
	return b.r.Read(p)
}
