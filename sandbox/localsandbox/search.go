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
	"runtime"
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
// the workspace that Exclude does not exclude (matched against the target's
// workspace-relative path), so nothing outside is ever reported. ".git" is never
// entered by the walk (a req.Path inside it is searched; the file tools
// refuse one). Unless NoIgnore, .gitignore files (the workspace's
// .git/info/exclude, those of req.Path's ancestors, and nested ones met on
// the way) prune ignored directories before the walk enters them; a
// req.Path that is itself ignored is searched, with only the rules below
// it. Dot-entries below req.Path are skipped unless IncludeHidden or a
// pattern names them: a segment of the glob or of an Include glob that
// starts with "." matches hidden names at its place (".github/**" at the
// top, "**/.eslintrc.json" at any depth; "*" never matches a leading dot);
// skipped
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
// req.Deny judges req.Path's real path (ErrDenied) and every entry's, a
// followed link's target included: a denied file is never listed or
// opened, a denied directory never entered. The walk does not descend
// below Options.MaxPathDepth components.
//
// Errors: ErrBadPattern (unknown mode, bad glob or regexp, in a
// *sandbox.PathError), and for req.Path: ErrOutsideWorkspace, ErrDenied,
// ErrSpecialFile, ErrTooDeep, ErrNotFound.
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
		if rest, ok := strings.CutPrefix(p, "**/"); ok && !strings.Contains(rest, "/") && !strings.Contains(rest, "**") {
			// "**/NAME" matches NAME against the base name at any depth.
			sr.globBase = newGlobSet([]string{rest})
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
		if !s.noPrefilter {
			sr.pf = newPrefilter(expr)
		}
		switch {
		case req.ContextLines > 0 || s.lineByLine:
		case sr.pf != nil:
			sr.whole = true // lines holding a needle are matched one by one
		case !strings.Contains(expr, `\A`) && !strings.Contains(expr, `\z`):
			// Whole-buffer scans need ^ and $ at line boundaries; \A and \z
			// mean the line's ends only line by line, so they stay there.
			sr.reFast = regexp.MustCompile("(?m)" + expr)
			sr.whole = true
		}
	default:
		return nil, bad(fmt.Sprintf("unknown search mode %q (want %q or %q)", req.Mode, sandbox.ModeGlob, sandbox.ModeGrep), nil)
	}
	for _, g := range append(append([]string(nil), req.Include...), req.Exclude...) {
		if !doublestar.ValidatePattern(g) {
			return nil, bad(fmt.Sprintf("include/exclude glob %q does not compile", g), nil)
		}
	}

	sr.include, sr.exclude = newGlobSet(req.Include), newGlobSet(req.Exclude)
	if sr.glob != "" {
		sr.dotSegs = dotSegments(sr.glob, false, req.IgnoreCase, sr.dotSegs)
	}
	for _, g := range req.Include {
		sr.dotSegs = dotSegments(g, !strings.Contains(g, "/"), false, sr.dotSegs)
	}

	t, err := s.walkPath(op, req.Path, walkOpts{open: openAny, deny: req.Deny})
	if err != nil {
		return nil, err
	}
	defer t.close()
	sr.rootDisplay = t.display
	sr.rootDepth = len(splitRel(t.real))
	if !t.st.mode.IsDir() {
		// A single named file: searched whatever its name or ignore
		// rules, through the descriptor the walk opened.
		f := t.takeFile()
		sr.file(nil, func() (*os.File, error) { return f, nil }, t.display, path.Base(t.real), t.st.mtime, t.st.size)
		f.Close()
	} else {
		var ign []gitignore.Pattern
		if !req.NoIgnore {
			ign = sr.loadAncestorIgnores(t.real)
		}
		dir, err := openWalkRoot(s, t)
		if err != nil {
			return nil, s.pathErr(op, t.display, err)
		}
		sr.queue.cond.L = &sr.queue.mu
		sr.queue.tasks = append(sr.queue.tasks, dirTask{dir: dir, rel: t.real, ign: ign})
		var walkers sync.WaitGroup
		for range walkWorkers() - 1 {
			walkers.Go(sr.walkLoop)
		}
		sr.walkLoop()
		walkers.Wait()
		// Walkers finish in any order: list hidden directories as a
		// one-goroutine walk would meet them.
		slices.SortFunc(sr.res.SkippedHidden, comparePaths)
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
	globBase  globSet  // for "**/NAME": NAME matched against base names; nil otherwise
	include   globSet
	exclude   globSet
	dotSegs   []dotSegment // pattern segments that name hidden entries
	re        *regexp.Regexp

	rootDisplay string
	rootDepth   int // components of the search root's real path

	reFast *regexp.Regexp // re in multi-line mode for whole-buffer scans without pf
	pf     *prefilter     // lines that may match re; nil: every line may
	whole  bool           // small files are scanned as one buffer (scanWhole)

	res      *sandbox.SearchResult
	mu       sync.Mutex // guards files, retained and res while walkers and grep workers run
	files    []*fileRes
	retained int // matches (grep) or files (glob) held in files
	stopped  atomic.Bool

	queue walkQueue // directories waiting for a walking goroutine
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

// walkWorkers is the number of goroutines that walk directories at once:
// one per CPU the Go runtime may use, at most 8. The walk is bound by
// system calls (opening and reading directories, stat'ing matched files),
// which run in parallel.
func walkWorkers() int { return min(max(runtime.GOMAXPROCS(0), 1), 8) }

// walkFlushEvery is the number of glob hits a walker holds before it hands
// them to the searcher (which bounds what it keeps).
const walkFlushEvery = 256

// walker is one walking goroutine's state: its buffer and the counts and
// hits it hands to the searcher in flush.
type walker struct {
	sr          *searcher
	buf         []byte // getdents64 buffer (linux), direntBufBytes
	steps       int    // entries looked at, for ctx polling
	searched    int    // glob: files tested against the pattern
	total       int    // glob: files matched
	ignored     int
	hiddenFiles int
	hidden      []string
	found       []*fileRes
	gw          *grepWorker // grep: searches the files this walker meets; nil until the first
}

// grepper returns the walker's grep worker.
func (w *walker) grepper() *grepWorker {
	if w.gw == nil {
		w.gw = newGrepWorker(w.sr)
	}
	return w.gw
}

// walkQueue holds the directories found and not yet walked, taken last
// in first out (depth first, so few directories are held open at once).
type walkQueue struct {
	mu    sync.Mutex
	cond  sync.Cond // L is &mu; signalled when a task is added or the last busy walker idles
	tasks []dirTask
	busy  int // walkers walking a directory
}

// dirTask is one directory to walk: dir itself (the search root), or name
// inside parent, which the task holds a reference on until it is opened.
type dirTask struct {
	dir      *dirHandle
	parent   *sharedDir
	name     string
	rel, sub string
	depth    int
	ign      []gitignore.Pattern
}

// push queues a subdirectory for any walking goroutine.
func (q *walkQueue) push(t dirTask) {
	q.mu.Lock()
	q.tasks = append(q.tasks, t)
	q.mu.Unlock()
	q.cond.Signal()
}

// walkLoop walks queued directories until none is queued and no walker is
// busy (so none can be added).
func (sr *searcher) walkLoop() {
	q := &sr.queue
	w := &walker{sr: sr}
	for {
		q.mu.Lock()
		for len(q.tasks) == 0 && q.busy > 0 {
			q.cond.Wait()
		}
		if len(q.tasks) == 0 {
			q.mu.Unlock()
			q.cond.Broadcast()
			break
		}
		t := q.tasks[len(q.tasks)-1]
		q.tasks[len(q.tasks)-1] = dirTask{}
		q.tasks = q.tasks[:len(q.tasks)-1]
		q.busy++
		q.mu.Unlock()

		w.run(t)

		q.mu.Lock()
		q.busy--
		last := q.busy == 0 && len(q.tasks) == 0
		q.mu.Unlock()
		if last {
			q.cond.Broadcast()
		}
	}
	w.flush()
}

// run opens and walks the task's directory.
func (w *walker) run(t dirTask) {
	dir := t.dir
	if dir == nil {
		if w.sr.stopped.Load() {
			t.parent.release() // walk polls ctx, once per directory
			return
		}
		d, err := t.parent.dir.openDir(t.name)
		t.parent.release()
		if err != nil {
			return
		}
		dir = d
	}
	w.walk(dir, t.rel, t.sub, t.depth, t.ign) // closes dir
}

// flush merges w's counts and hits into the searcher.
func (w *walker) flush() {
	if w.gw != nil {
		w.gw.flush()
	}
	sr := w.sr
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.res.FilesSearched += w.searched
	sr.res.Total += w.total
	sr.res.Ignored += w.ignored
	sr.res.SkippedHiddenFiles += w.hiddenFiles
	sr.res.SkippedHidden = append(sr.res.SkippedHidden, w.hidden...)
	for _, fr := range w.found {
		sr.add(fr)
	}
	w.searched, w.total, w.ignored, w.hiddenFiles = 0, 0, 0, 0
	w.hidden, w.found = w.hidden[:0], w.found[:0]
}

// walk searches directory rel (canonical), which is sub ("" for the
// search root) relative to the search root, with the ignore patterns ign
// (in increasing priority; never appended to in place, so sibling
// directories walked at once do not share what they add). dir is the open
// directory: its entries are opened relative to it, one component each,
// never through a symlink. walk owns dir: it is closed once the walk and
// every grep job that opens a file through it are done. Subdirectories are
// queued for any walking goroutine (walkLoop).
func (w *walker) walk(dir *dirHandle, rel, sub string, depth int, ign []gitignore.Pattern) {
	sr := w.sr
	sd := &sharedDir{dir: dir}
	sd.refs.Store(1)
	defer sd.release()
	if sr.rootDepth+depth >= sr.s.maxPathDepth() || sr.done() {
		return // entries below would be deeper than a path may be
	}
	ents, _ := dir.readDir(&w.buf)
	dirFd := -1
	if sr.re != nil && rawOpen {
		dirFd = dir.grepFd() // grep opens the files relative to it
	}
	if !sr.req.NoIgnore {
		for _, e := range ents {
			if e.name == ".gitignore" {
				ign = sr.dirIgnores(dir, e, rel, ign)
				break
			}
		}
	}
	slices.SortFunc(ents, func(a, b dirEnt) int { return strings.Compare(a.name, b.name) })
	// visit takes one entry; it reports whether the walk must stop.
	visit := func(e dirEnt) bool {
		w.steps++
		if w.steps%ctxCheckEvery == 0 && sr.done() {
			return true
		}
		name := e.name
		if name == ".git" {
			return false
		}
		childRel := joinDisplay(rel, name) // rel is canonical: no Clean needed
		childSub := joinDisplay(sub, name)
		isDir := e.typ.IsDir()
		var linked *target // a symlink's target, opened
		if e.typ&fs.ModeSymlink != 0 {
			// Followed only to a regular file inside the workspace, by
			// the path walk (which refuses an escape, applies Deny to the
			// target's real path and opens it without following any
			// further link); never into a directory.
			lt, err := sr.s.walkPath(sandbox.OpSearch, childRel, walkOpts{open: openFile, deny: sr.req.Deny})
			if err != nil {
				return false
			}
			// Exclude holds for the target too: a link never brings an
			// excluded file into the results.
			if len(sr.req.Exclude) > 0 && sr.exclude.match(lt.real) {
				lt.close()
				return false
			}
			linked = lt
			defer func() {
				if linked != nil {
					linked.close()
				}
			}()
		} else if !isDir && !e.typ.IsRegular() {
			return false
		}
		if ignored(ign, childRel, isDir) {
			w.ignored++
			return false
		}
		if strings.HasPrefix(name, ".") && !sr.req.IncludeHidden && !sr.namesHidden(childSub, name) {
			if isDir {
				w.hidden = append(w.hidden, joinDisplay(sr.rootDisplay, childSub))
			} else {
				w.hiddenFiles++
			}
			return false
		}
		if sr.exclude.match(childSub) {
			return false
		}
		if linked == nil && sr.req.Deny != nil {
			if _, denied := sr.req.Deny(childRel); denied {
				return false // never listed, opened or entered
			}
		}
		if isDir {
			if sr.globParts != nil && !sr.globCanDescend(childSub) {
				return false
			}
			// Opened and walked by whichever walking goroutine takes it;
			// this directory stays open until then.
			sd.refs.Add(1)
			sr.queue.push(dirTask{parent: sd, name: name, rel: childRel, sub: childSub, depth: depth + 1, ign: ign})
			return false
		}
		if len(sr.include) > 0 && !sr.include.match(childSub) {
			return false
		}
		display := joinDisplay(sr.rootDisplay, childSub)
		if sr.re == nil {
			w.searched++
			if !sr.globMatch(childSub) {
				return false // no stat for a file the glob does not want
			}
			var mod time.Time
			if linked != nil {
				mod = linked.st.mtime
			} else {
				m, _, ok := dir.lstat(e)
				if !ok {
					return false
				}
				mod = m
			}
			w.total++
			w.found = append(w.found, &fileRes{path: display, mod: mod, count: 1})
			if len(w.found) >= walkFlushEvery {
				w.flush()
			}
			return false
		}
		switch {
		case linked != nil:
			f := linked.takeFile()
			sr.file(w.grepper(), func() (*os.File, error) { return f, nil }, display, childSub, linked.st.mtime, linked.st.size)
			f.Close()
		case dirFd >= 0:
			// Opened by name relative to this directory; the modification
			// time comes from that open file.
			w.grepper().run(grepJob{dirFd: dirFd, name: name, display: display, size: -1})
		default:
			mod, size, ok := dir.lstat(e)
			if !ok {
				return false
			}
			sr.file(w.grepper(), func() (*os.File, error) { return dir.openFile(name) }, display, childSub, mod, size)
		}
		return false
	}
	// Directories first, queued last name first so that walkers take them
	// in name order (depth first, as one goroutine would); then files.
	for i := len(ents) - 1; i >= 0; i-- {
		if ents[i].typ.IsDir() && visit(ents[i]) {
			return
		}
	}
	for _, e := range ents {
		if !e.typ.IsDir() && visit(e) {
			return
		}
	}
}

// dotSegment is a segment of a glob pattern (the glob or an include glob)
// that starts with "." and so names hidden entries: it matches the base
// name of an entry depth components below the search root, or at any depth
// when a "**" comes before it (depth -1). fold: matched lower-cased (a glob
// under IgnoreCase).
type dotSegment struct {
	pat   string
	depth int
	fold  bool
}

// dotSegments appends the dot segments of glob to segs. base: the glob is
// matched against base names (an include glob without "/"), so its
// segment is one at any depth.
func dotSegments(glob string, base, fold bool, segs []dotSegment) []dotSegment {
	anyDepth := base
	for i, p := range strings.Split(glob, "/") {
		if strings.Contains(p, "**") {
			anyDepth = true
			continue
		}
		if strings.HasPrefix(p, ".") || strings.Contains(p, "{.") || strings.Contains(p, ",.") {
			d := i
			if anyDepth {
				d = -1
			}
			segs = append(segs, dotSegment{pat: p, depth: d, fold: fold})
		}
	}
	return segs
}

// namesHidden reports whether a pattern names the hidden entry name at sub
// (relative to the search root) explicitly: a dot segment at its depth
// matches it. Naming a hidden segment is asking for it (".github/**",
// "**/.eslintrc.json"); "*" alone never matches a leading dot.
func (sr *searcher) namesHidden(sub, name string) bool {
	if len(sr.dotSegs) == 0 {
		return false
	}
	depth := strings.Count(sub, "/")
	for _, d := range sr.dotSegs {
		if d.depth >= 0 && d.depth != depth {
			continue
		}
		n := name
		if d.fold {
			n = strings.ToLower(n)
		}
		if ok, _ := doublestar.Match(d.pat, n); ok {
			return true
		}
	}
	return false
}

// globMatch reports whether sub (relative to the search root) matches the
// glob.
func (sr *searcher) globMatch(sub string) bool {
	if sr.req.IgnoreCase {
		sub = strings.ToLower(sub)
	}
	if sr.globBase != nil {
		return sr.globBase.match(sub)
	}
	ok, _ := doublestar.Match(sr.glob, sub)
	return ok
}

// file takes one regular file: for glob, one the walk already matched (a
// single named file is matched here); for grep, one to search now with gw
// (nil: a worker of its own). size is in bytes, -1 when unknown.
func (sr *searcher) file(gw *grepWorker, open func() (*os.File, error), display, sub string, mod time.Time, size int64) {
	if sr.re == nil {
		if display == sr.rootDisplay { // a single named file
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
	if gw == nil {
		gw = newGrepWorker(sr)
		defer gw.flush()
	}
	gw.run(j)
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

// globSet is a list of doublestar globs, each matched against a path
// relative to the search root or, when it holds no "/", against the path's
// base name. The common shapes of a name pattern (a plain name, "*.pem",
// ".env.*") are compared directly: the walk tests every entry against the
// denied paths, and doublestar.Match re-reads its pattern on every call.
type globSet []globMatcher

type globMatcher struct {
	glob  string
	base  bool   // matched against the base name
	shape byte   // '=' the whole name, '*' a suffix ("*lit"), '^' a prefix ("lit*"), 0 doublestar
	lit   string // the literal part for '=', '*' and '^'
}

func newGlobSet(globs []string) globSet {
	gs := make(globSet, 0, len(globs))
	for _, g := range globs {
		m := globMatcher{glob: g, base: !strings.Contains(g, "/")}
		if m.base {
			const meta = `*?[]{}\`
			switch {
			case !strings.ContainsAny(g, meta):
				m.shape, m.lit = '=', g
			case len(g) > 1 && g[0] == '*' && !strings.ContainsAny(g[1:], meta):
				m.shape, m.lit = '*', g[1:]
			case len(g) > 1 && g[len(g)-1] == '*' && !strings.ContainsAny(g[:len(g)-1], meta):
				m.shape, m.lit = '^', g[:len(g)-1]
			}
		}
		gs = append(gs, m)
	}
	return gs
}

func (gs globSet) match(sub string) bool {
	if len(gs) == 0 {
		return false
	}
	base := path.Base(sub)
	for _, g := range gs {
		target := sub
		if g.base {
			target = base
		}
		var ok bool
		switch g.shape {
		case '=':
			ok = target == g.lit
		case '*':
			ok = strings.HasSuffix(target, g.lit)
		case '^':
			ok = strings.HasPrefix(target, g.lit)
		default:
			ok, _ = doublestar.Match(g.glob, target)
		}
		if ok {
			return true
		}
	}
	return false
}

// ---- .gitignore ----

// loadAncestorIgnores returns the patterns that apply at rootRel from
// above it: the workspace's .git/info/exclude and the .gitignore files of
// rootRel's ancestors.
func (sr *searcher) loadAncestorIgnores(rootRel string) []gitignore.Pattern {
	ign := sr.readIgnoreFile(".git/info/exclude", "", nil, nil)
	comps := splitRel(rootRel)
	for i := range comps {
		dir := path.Join(append([]string{"."}, comps[:i]...)...)
		ign = sr.readIgnoreFile(path.Join(dir, ".gitignore"), dir, splitRel(dir), ign)
	}
	if len(comps) > 0 && ignored(ign, rootRel, true) {
		// Named explicitly: search it, with only the rules inside it.
		return nil
	}
	return ign
}

// dirIgnores returns ign with the patterns of e, the .gitignore entry of
// dir (canonical path rel), added.
func (sr *searcher) dirIgnores(dir *dirHandle, e dirEnt, rel string, ign []gitignore.Pattern) []gitignore.Pattern {
	domain := splitRel(rel)
	if e.typ&fs.ModeSymlink != 0 {
		// Followed to a regular file inside the directory only.
		return sr.readIgnoreFile(joinDisplay(rel, e.name), rel, domain, ign)
	}
	if !e.typ.IsRegular() {
		return ign
	}
	f, err := dir.openFile(e.name)
	if err != nil {
		return ign
	}
	defer f.Close()
	return parseIgnore(f, domain, ign)
}

// readIgnoreFile returns ign with the patterns of the ignore file at rel
// (workspace-relative) added, with the given domain (workspace-relative
// components). The file is opened by the path walk, so it is a regular
// file inside the workspace, never a FIFO that would block the search; a
// link is followed only to a file in the directory within (when within is
// not "").
func (sr *searcher) readIgnoreFile(rel, within string, domain []string, ign []gitignore.Pattern) []gitignore.Pattern {
	t, err := sr.s.walkPath(sandbox.OpSearch, rel, walkOpts{open: openFile})
	if err != nil {
		return ign
	}
	defer t.close()
	if within != "" && path.Dir(t.real) != path.Clean(within) {
		return ign
	}
	return parseIgnore(t.file, domain, ign)
}

// parseIgnore returns ign with the patterns read from r (at most 1 MiB)
// added. ign is clipped first, so the result never shares an array that
// another directory's patterns are appended to.
func parseIgnore(r io.Reader, domain []string, ign []gitignore.Pattern) []gitignore.Pattern {
	ign = slices.Clip(ign)
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ign = append(ign, gitignore.ParsePattern(line, domain))
	}
	return ign
}

// ignored reports whether rel (workspace-relative) is ignored by ign, the
// patterns in increasing priority.
func ignored(ign []gitignore.Pattern, rel string, isDir bool) bool {
	if len(ign) == 0 {
		return false
	}
	comps := splitRel(rel)
	for i := len(ign) - 1; i >= 0; i-- {
		if m := ign[i].Match(comps, isDir); m != gitignore.NoMatch {
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
	f, modTime, closeFile, err := j.openFile()
	if err != nil {
		return nil
	}
	defer closeFile()
	fr := w.grepOpen(j, f)
	if fr == nil || fr.count == 0 {
		return fr
	}
	if fr.mod, err = modTime(); err != nil {
		return nil
	}
	return fr
}

// grepOpen searches the open file f of j (see grep); fr.mod is left unset.
func (w *grepWorker) grepOpen(j grepJob, f io.Reader) *fileRes {
	sr := w.sr
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
	fr := &fileRes{path: j.display}
	var rest io.Reader = f
	if sr.whole && n == len(w.head) && j.size <= fastScanBytes {
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
	} else if sr.whole && n < len(w.head) && bytes.IndexByte(head, '\r') < 0 {
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
				if !matched && (sr.pf == nil || sr.pf.contains(buf)) {
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
		if !matched && (sr.pf == nil || sr.pf.contains(buf)) {
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
