package localsandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/aibuddy/aibuddy/sandbox"
)

// Search finds files (ModeGlob) or lines (ModeGrep) under req.Path, a
// directory or a single file.
//
// Glob: Pattern is a doublestar pattern matched against each file's path
// relative to req.Path ("**/*.go" at any depth, "*.go" at the top only;
// directories that cannot match are not entered). Grep: Pattern is an RE2
// regular expression, or plain text with Literal; a line matches once
// however often the pattern occurs in it. IgnoreCase applies to both.
// Include and Exclude are doublestar globs against the path relative to
// req.Path, or against the base name when they hold no "/"; Exclude also
// prunes directories.
//
// The walk never follows directory symlinks (no cycle can loop it, BH-017);
// a file symlink is searched only when it resolves to a regular file inside
// the workspace, so nothing outside is ever reported. ".git" is never
// entered. Unless NoIgnore, .gitignore files (the workspace's
// .git/info/exclude, those of req.Path's ancestors, and nested ones met on
// the way) prune ignored directories before the walk enters them; a
// req.Path that is itself ignored is searched, with only the rules below
// it. Dot-entries below req.Path are skipped unless IncludeHidden: skipped
// directories are listed in SkippedHidden and skipped files counted in
// SkippedHiddenFiles, so "0 matches" never reads as a complete search
// (BH-015); req.Path itself may be hidden (".github"). Grep skips files
// with a NUL byte in their first 8 KiB (SkippedBinary).
//
// Results are sorted newest file first (then by path, then line), cut at
// MaxResults files (glob) or matching lines (grep), default 100, with
// Truncated set and Total holding the full count. A grep line is cut to
// MaxLineChars characters (default 400) around the match; Match.Chars is the
// whole line's length and Match.TextStart where the window begins (BH-019).
// Lines longer than Options.MaxSearchLineBytes are matched window by window.
// When ctx is done the walk stops and Search returns what it found so far
// with Partial set, FilesSearched saying how far it got, and a nil error
// (BH-018).
//
// Errors: ErrBadPattern (unknown mode, bad glob or regexp, in a
// *sandbox.PathError), and for req.Path: ErrOutsideWorkspace, ErrNotFound.
func (s *Sandbox) Search(ctx context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
	const op = sandbox.OpSearch
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, req.Path, err)
	}
	sr := &searcher{
		s: s, ctx: ctx, req: req,
		maxResults: orDefault(req.MaxResults, defaultSearchResults),
		maxChars:   orDefault(req.MaxLineChars, defaultMatchChars),
		res:        &sandbox.SearchResult{},
	}
	bad := func(what string, err error) error {
		reason := what
		if err != nil {
			reason += ": " + err.Error()
		}
		return &sandbox.PathError{Op: op, Path: req.Path, Reason: reason, Err: sandbox.ErrBadPattern}
	}
	switch req.Mode {
	case sandbox.ModeGlob:
		p := strings.TrimPrefix(req.Pattern, "./")
		if req.IgnoreCase {
			p = strings.ToLower(p)
		}
		if p == "" || !doublestar.ValidatePattern(p) {
			return nil, bad(fmt.Sprintf("glob %q does not compile", req.Pattern), nil)
		}
		sr.glob = p
		if !strings.Contains(p, "{") {
			sr.globParts = strings.Split(p, "/")
		}
	case sandbox.ModeGrep:
		expr := req.Pattern
		if req.Literal {
			expr = regexp.QuoteMeta(expr)
		}
		if req.IgnoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, bad(fmt.Sprintf("regular expression %q does not compile", req.Pattern), err)
		}
		sr.re = re
		if req.ContextLines == 0 && !s.lineByLine && !strings.Contains(expr, `\A`) && !strings.Contains(expr, `\z`) {
			// Whole-buffer scans need ^ and $ at line boundaries; \A and \z
			// mean the line's ends only line by line, so they stay there.
			sr.reFast = regexp.MustCompile("(?m)" + expr)
		}
	default:
		return nil, bad(fmt.Sprintf("unknown search mode %q (want %q or %q)", req.Mode, sandbox.ModeGlob, sandbox.ModeGrep), nil)
	}
	for _, g := range append(append([]string(nil), req.Include...), req.Exclude...) {
		if !doublestar.ValidatePattern(g) {
			return nil, bad(fmt.Sprintf("include/exclude glob %q does not compile", g), nil)
		}
	}

	r, err := s.resolve(op, req.Path, followFinal)
	if err != nil {
		return nil, err
	}
	fi, err := s.root.Stat(r.rel)
	if err != nil {
		return nil, s.pathErr(op, r.display, err)
	}
	sr.rootDisplay = r.display
	if !fi.IsDir() {
		// A single named file: searched whatever its name or ignore rules.
		if !fi.Mode().IsRegular() {
			return nil, &sandbox.PathError{Op: op, Path: r.display, Reason: "not a regular file", Err: sandbox.ErrUnsupported}
		}
		sr.file(func() (*os.File, error) { return s.root.Open(r.rel) }, nil, r.display, path.Base(r.rel), fi.ModTime(), fi.Size())
	} else {
		if !req.NoIgnore {
			sr.loadAncestorIgnores(r.rel)
		}
		dir, err := s.root.OpenRoot(r.rel)
		if err != nil {
			return nil, s.pathErr(op, r.display, err)
		}
		if sr.re != nil {
			sr.pool = newGrepPool(sr, grepWorkers())
		}
		sr.walk(dir, r.rel, "", 0) // closes dir
		if sr.pool != nil {
			sr.pool.wait()
		}
	}
	return sr.finish(), nil
}

type searcher struct {
	s          *Sandbox
	ctx        context.Context
	req        sandbox.SearchRequest
	maxResults int
	maxChars   int

	glob      string
	globParts []string // nil: no directory pruning
	re        *regexp.Regexp

	rootDisplay string
	ignores     []gitignore.Pattern // in increasing priority

	reFast *regexp.Regexp // re in multi-line mode for whole-buffer scans; nil: line by line only

	res      *sandbox.SearchResult
	mu       sync.Mutex // guards files, retained and res's grep counters while workers run
	files    []*fileRes
	retained int // matches (grep) or files (glob) held in files
	stopped  atomic.Bool
	steps    int
	pool     *grepPool // nil: grep in the walking goroutine
}

type fileRes struct {
	path    string
	mod     time.Time
	count   int
	matches []sandbox.Match
}

func (sr *searcher) done() bool {
	if sr.stopped.Load() {
		return true
	}
	if sr.ctx.Err() != nil {
		sr.stopped.Store(true)
		return true
	}
	return false
}

// walk searches directory rel (canonical), which is sub ("" for the
// search root) relative to the search root. dir is a root handle on rel
// itself: entries are opened relative to it (one openat each), and it
// cannot reach above rel either. walk owns dir: it is closed once the walk
// and every grep job that opens a file through it are done.
func (sr *searcher) walk(dir *os.Root, rel, sub string, depth int) {
	sd := &sharedDir{root: dir}
	sd.refs.Store(1)
	defer sd.release()
	if depth > maxWalkDepth || sr.done() {
		return
	}
	f, err := dir.Open(".")
	if err != nil {
		return
	}
	ents, _ := f.ReadDir(-1)
	dirFd := -1
	if sr.pool != nil && rawOpen {
		sd.file = f // grep jobs open their files relative to it
		dirFd = int(f.Fd())
	} else {
		f.Close()
	}
	mark := len(sr.ignores)
	defer func() { sr.ignores = sr.ignores[:mark] }()
	if !sr.req.NoIgnore {
		sr.readIgnoreFile(dir, ".gitignore", splitRel(rel))
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		sr.steps++
		if sr.steps%ctxCheckEvery == 0 && sr.done() {
			return
		}
		name := e.Name()
		if name == ".git" {
			continue
		}
		childRel := path.Join(rel, name)
		childSub := joinDisplay(sub, name)
		t := e.Type()
		isDir := t.IsDir()
		var info fs.FileInfo
		open := func() (*os.File, error) { return dir.Open(name) }
		held := sd // the directory handle this file is opened through
		if t&fs.ModeSymlink != 0 {
			// Followed only to a regular file inside the workspace (through
			// the workspace root, which refuses an escape); never into a
			// directory.
			st, err := sr.s.root.Stat(childRel)
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			info = st
			open = func() (*os.File, error) { return sr.s.root.Open(childRel) }
			held = nil
		} else if !isDir && !t.IsRegular() {
			continue
		}
		if sr.ignored(childRel, isDir) {
			sr.res.Ignored++
			continue
		}
		if strings.HasPrefix(name, ".") && !sr.req.IncludeHidden {
			if isDir {
				sr.res.SkippedHidden = append(sr.res.SkippedHidden, joinDisplay(sr.rootDisplay, childSub))
			} else {
				sr.res.SkippedHiddenFiles++
			}
			continue
		}
		if matchAny(sr.req.Exclude, childSub) {
			continue
		}
		if isDir {
			if sr.globParts != nil && !sr.globCanDescend(childSub) {
				continue
			}
			sub, err := dir.OpenRoot(name)
			if err != nil {
				continue
			}
			sr.walk(sub, childRel, childSub, depth+1) // closes sub
			if sr.stopped.Load() {
				return
			}
			continue
		}
		if len(sr.req.Include) > 0 && !matchAny(sr.req.Include, childSub) {
			continue
		}
		if sr.re == nil {
			sr.res.FilesSearched++
			if !sr.globMatch(childSub) {
				continue // no stat for a file the glob does not want
			}
		}
		if held != nil && dirFd >= 0 {
			// The grep worker opens it by name relative to this directory
			// and takes size and modification time from that open file.
			held.refs.Add(1)
			sr.pool.submit(grepJob{dirFd: dirFd, name: name, display: joinDisplay(sr.rootDisplay, childSub), release: held.release})
			continue
		}
		if info == nil {
			if info, err = e.Info(); err != nil {
				continue
			}
		}
		sr.file(open, held, joinDisplay(sr.rootDisplay, childSub), childSub, info.ModTime(), info.Size())
	}
}

// globMatch reports whether sub (relative to the search root) matches the
// glob.
func (sr *searcher) globMatch(sub string) bool {
	if sr.req.IgnoreCase {
		sub = strings.ToLower(sub)
	}
	ok, _ := doublestar.Match(sr.glob, sub)
	return ok
}

// file takes one regular file: for glob, one the walk already matched (a
// single named file is matched here); for grep, one to search, handed to
// the worker pool when there is one. size is in bytes, -1 when unknown.
// held, when not nil, is the directory handle open goes through; a job
// handed to the pool keeps it open until the file has been read.
func (sr *searcher) file(open func() (*os.File, error), held *sharedDir, display, sub string, mod time.Time, size int64) {
	if sr.re == nil {
		if sr.pool == nil && display == sr.rootDisplay { // a single named file
			sr.res.FilesSearched++
			if !sr.globMatch(sub) {
				return
			}
		}
		sr.res.Total++
		sr.add(&fileRes{path: display, mod: mod, count: 1})
		return
	}
	j := grepJob{open: open, display: display, mod: mod, size: size}
	if sr.pool != nil {
		if held != nil {
			held.refs.Add(1)
			j.release = held.release
		}
		sr.pool.submit(j)
		return
	}
	w := newGrepWorker(sr)
	w.run(j)
	w.flush()
}

// add keeps a hit and, when too much is held, drops what the final cut to
// the newest MaxResults would drop anyway.
func (sr *searcher) add(fr *fileRes) {
	sr.files = append(sr.files, fr)
	if sr.re == nil {
		sr.retained++
	} else {
		sr.retained += len(fr.matches)
	}
	if sr.retained <= 4*sr.maxResults+64 {
		return
	}
	sortFiles(sr.files)
	kept := 0
	for i, f := range sr.files {
		if kept >= sr.maxResults {
			if sr.re == nil {
				sr.files = sr.files[:i]
				break
			}
			f.matches = nil
			continue
		}
		if sr.re == nil {
			kept++
		} else {
			kept += len(f.matches)
		}
	}
	sr.retained = kept
	if sr.re != nil && len(sr.files) > 4*sr.maxResults+64 {
		sr.files = sr.files[:sr.maxResults+1] // older files are not returned
	}
}

func (sr *searcher) finish() *sandbox.SearchResult {
	res := sr.res
	res.Partial = sr.stopped.Load()
	sortFiles(sr.files)
	for i, f := range sr.files {
		if i >= sr.maxResults {
			res.Truncated = true
			break
		}
		res.Files = append(res.Files, sandbox.FileHit{Path: f.path, ModTime: f.mod})
	}
	if sr.re != nil {
		for _, f := range sr.files {
			for _, m := range f.matches {
				if len(res.Matches) >= sr.maxResults {
					break
				}
				res.Matches = append(res.Matches, m)
			}
		}
		if res.Total > len(res.Matches) {
			res.Truncated = true
		}
	} else if res.Total > len(res.Files) {
		res.Truncated = true
	}
	return res
}

func sortFiles(fs []*fileRes) {
	slices.SortFunc(fs, func(a, b *fileRes) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
}

// globCanDescend reports whether files under directory sub could match the
// glob: each of sub's components must match the pattern's component at the
// same place, until a "**".
func (sr *searcher) globCanDescend(sub string) bool {
	if sr.req.IgnoreCase {
		sub = strings.ToLower(sub)
	}
	for i, c := range strings.Split(sub, "/") {
		if i >= len(sr.globParts)-1 {
			return strings.Contains(sr.globParts[len(sr.globParts)-1], "**")
		}
		p := sr.globParts[i]
		if strings.Contains(p, "**") {
			return true
		}
		if ok, _ := doublestar.Match(p, c); !ok {
			return false
		}
	}
	return true
}

// matchAny matches sub, or its base name for a pattern without "/",
// against doublestar globs.
func matchAny(globs []string, sub string) bool {
	for _, g := range globs {
		target := sub
		if !strings.Contains(g, "/") {
			target = path.Base(sub)
		}
		if ok, _ := doublestar.Match(g, target); ok {
			return true
		}
	}
	return false
}

// ---- .gitignore ----

func (sr *searcher) loadAncestorIgnores(rootRel string) {
	sr.readIgnoreFile(sr.s.root, ".git/info/exclude", nil)
	comps := splitRel(rootRel)
	for i := range comps {
		dir := path.Join(append([]string{"."}, comps[:i]...)...)
		sr.readIgnoreFile(sr.s.root, path.Join(dir, ".gitignore"), splitRel(dir))
	}
	if len(comps) > 0 && sr.ignored(rootRel, true) {
		// Named explicitly: search it, with only the rules inside it.
		sr.ignores = nil
	}
}

// readIgnoreFile adds the patterns of the ignore file at rel (relative to
// dir) with the given domain (workspace-relative components).
func (sr *searcher) readIgnoreFile(dir *os.Root, rel string, domain []string) {
	f, err := dir.Open(rel)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return
	}
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		sr.ignores = append(sr.ignores, gitignore.ParsePattern(line, domain))
	}
}

func (sr *searcher) ignored(rel string, isDir bool) bool {
	if len(sr.ignores) == 0 {
		return false
	}
	comps := splitRel(rel)
	for i := len(sr.ignores) - 1; i >= 0; i-- {
		if m := sr.ignores[i].Match(comps, isDir); m != gitignore.NoMatch {
			return m == gitignore.Exclude
		}
	}
	return false
}

// ---- grep ----

// grep searches one file and returns its matches (at most MaxResults
// kept, all counted), or nil when the file was not searched (unreadable or
// binary). A file of at most fastScanBytes with no CR byte is scanned as
// one buffer (scanWhole); anything else line by line with a bounded buffer.
func (w *grepWorker) grep(j grepJob) *fileRes {
	sr := w.sr
	f, size, mod, closeFile, err := j.openFile()
	if err != nil {
		return nil
	}
	defer closeFile()
	j.size, j.mod = size, mod
	head := w.head
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	head = head[:n]
	w.searched++
	if bytes.IndexByte(head, 0) >= 0 {
		w.binary++
		return nil
	}
	fr := &fileRes{path: j.display, mod: j.mod}
	var rest io.Reader = f
	if sr.reFast != nil && n == len(w.head) && j.size >= 0 && j.size <= fastScanBytes {
		// Read the whole file (it may have grown: at most fastScanBytes+1).
		whole := append(w.whole[:0], head...)
		for len(whole) <= fastScanBytes {
			if cap(whole)-len(whole) < 32<<10 {
				whole = slices.Grow(whole, max(64<<10, len(whole)))
			}
			m, rerr := f.Read(whole[len(whole):cap(whole)])
			whole = whole[:len(whole)+m]
			if rerr != nil {
				break
			}
		}
		w.whole = whole
		if len(whole) <= fastScanBytes && bytes.IndexByte(whole, '\r') < 0 {
			w.scanWhole(whole, fr)
			return fr
		}
		rest = io.MultiReader(bytes.NewReader(whole[len(head):]), f)
	} else if sr.reFast != nil && n < len(w.head) && bytes.IndexByte(head, '\r') < 0 {
		w.scanWhole(head, fr) // a small file: all of it is in head
		return fr
	}
	br := w.br
	br.Reset(io.MultiReader(bytes.NewReader(head), rest))
	defer br.Reset(nil)
	display := j.display
	window := sr.s.maxSearchLineBytes()
	nctx := sr.req.ContextLines
	keep := sr.maxChars * utf8.UTFMax

	var (
		buf       []byte // the line, or its current window
		prefix    []byte // the line's first keep bytes, for context lines
		lineBytes int
		dropped   int // characters of the line before buf
		matched   bool
		m         sandbox.Match
		before    []sandbox.Line
		afterLeft int
		lineNo    int
		chunks    int
	)
	for {
		chunk, rerr := br.ReadSlice('\n')
		chunks++
		if chunks%ctxCheckEvery == 0 && sr.done() {
			return fr
		}
		ended := rerr == nil
		if ended {
			chunk = chunk[:len(chunk)-1]
		}
		buf = append(buf, chunk...)
		lineBytes += len(chunk)
		if nctx > 0 && len(prefix) < keep {
			prefix = append(prefix, chunk[:min(len(chunk), keep-len(prefix))]...)
		}
		if rerr == bufio.ErrBufferFull {
			if len(buf) >= window {
				if !matched {
					if loc := sr.re.FindIndex(buf); loc != nil {
						matched = true
						m = sr.clip(buf, loc, dropped)
					}
				}
				cut := len(buf) - searchLineOverlap
				for cut > 0 && !utf8.RuneStart(buf[cut]) {
					cut--
				}
				dropped += countChars(buf[:cut])
				buf = append(buf[:0], buf[cut:]...)
			}
			continue
		}
		if rerr != nil && (rerr != io.EOF || lineBytes == 0) {
			break // end of file (or a read error: keep what was found)
		}
		if ended && len(buf) > 0 && buf[len(buf)-1] == '\r' {
			buf = buf[:len(buf)-1]
			if len(prefix) == lineBytes {
				prefix = prefix[:len(prefix)-1]
			}
		}
		lineNo++
		chars := dropped + countChars(buf)
		if !matched {
			if loc := sr.re.FindIndex(buf); loc != nil {
				matched = true
				m = sr.clip(buf, loc, dropped)
			}
		}
		var ctxLine sandbox.Line
		if nctx > 0 {
			ctxLine = sandbox.Line{Number: lineNo, Text: validText(clipChars(prefix, sr.maxChars)), Chars: chars}
			if afterLeft > 0 && len(fr.matches) > 0 {
				last := &fr.matches[len(fr.matches)-1]
				last.After = append(last.After, ctxLine)
				afterLeft--
			}
		}
		if matched {
			fr.count++
			if len(fr.matches) < sr.maxResults {
				m.Path, m.Line, m.Chars = display, lineNo, chars
				m.Before = append([]sandbox.Line(nil), before...)
				fr.matches = append(fr.matches, m)
				afterLeft = nctx
			} else {
				afterLeft = 0
			}
		}
		if nctx > 0 {
			before = append(before, ctxLine)
			if len(before) > nctx {
				before = before[1:]
			}
		}
		buf, prefix, lineBytes, dropped, matched = buf[:0], prefix[:0], 0, 0, false
		if !ended {
			break
		}
	}
	return fr
}

// clip cuts the window of at most maxChars characters around the match at
// loc (byte offsets in buf); dropped is the characters of the line before
// buf.
func (sr *searcher) clip(buf []byte, loc []int, dropped int) sandbox.Match {
	total := countChars(buf)
	ms := countChars(buf[:loc[0]])
	ml := countChars(buf[loc[0]:loc[1]])
	start := 0
	if total > sr.maxChars {
		start = ms - max(0, sr.maxChars-ml)/2
		start = max(0, min(start, total-sr.maxChars))
	}
	b := skipChars(buf, start)
	return sandbox.Match{Text: validText(clipChars(b, sr.maxChars)), TextStart: dropped + start}
}

// skipChars drops the first n characters of b.
func skipChars(b []byte, n int) []byte {
	count := 0
	for i := range b {
		if b[i]&0xC0 != 0x80 {
			if count == n {
				return b[i:]
			}
			count++
		}
	}
	return b[len(b):]
}

func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}
