package e2bsandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	fspb "github.com/aibuddy/aibuddy/internal/envdspec/filesystem"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// mirror is a private local folder holding copies of the sandbox files
// one call needs, laid out at their workspace-relative real paths, with a
// localsandbox on it: Read, Edit and Search apply localsandbox's text
// rules (encodings, line windows, exact replacements, candidates, grep,
// .gitignore) to the fetched bytes. It lives for one call.
type mirror struct {
	dir string
	sb  *localsandbox.Sandbox
}

func (s *Sandbox) newMirror() (*mirror, error) {
	dir, err := os.MkdirTemp("", "aibuddy-e2b-")
	if err != nil {
		return nil, fmt.Errorf("e2bsandbox: Execution: a local working folder: %w", err)
	}
	sb, err := localsandbox.New(dir, &localsandbox.Options{
		NoTempSweep:  true,
		MaxReadBytes: s.opts.MaxReadBytes,
		Confinement:  &confine.Settings{Confinement: "off"},
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("e2bsandbox: Execution: a local working folder: %w", err)
	}
	return &mirror{dir: dir, sb: sb}, nil
}

func (m *mirror) close() {
	m.sb.Close()
	os.RemoveAll(m.dir)
}

func (m *mirror) local(rel string) string { return filepath.Join(m.dir, filepath.FromSlash(rel)) }

// put writes a copy with the remote object's mode and modification time.
func (m *mirror) put(rel string, data []byte, e *fspb.EntryInfo) error {
	p := m.local(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	mode := fs.FileMode(e.GetMode()).Perm() | 0o600
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	if mt := e.GetModifiedTime(); mt != nil {
		return os.Chtimes(p, mt.AsTime(), mt.AsTime())
	}
	return nil
}

// withDisplay puts the caller's path back into a mirror error.
func withDisplay(err error, display string) error {
	var pe *sandbox.PathError
	if errors.As(err, &pe) {
		cp := *pe
		cp.Path = display
		return &cp
	}
	return err
}

// regular resolves p to an existing regular file allowed by deny.
func (s *Sandbox) regular(ctx context.Context, op sandbox.Op, p string, deny sandbox.Deny) (*target, error) {
	t, err := s.resolve(ctx, op, p, true)
	if err != nil {
		return nil, err
	}
	switch {
	case !t.exists():
		return nil, &sandbox.PathError{Op: op, Path: t.display, Err: notFound{}}
	case t.isDir():
		return nil, &sandbox.PathError{Op: op, Path: t.display, Err: sandbox.ErrIsDir}
	case !t.isFile():
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: kindName(t.entry), Err: sandbox.ErrSpecialFile}
	}
	if err := denied(op, t.display, t.real, deny); err != nil {
		return nil, err
	}
	return t, nil
}

// Read resolves req.Path inside the sandbox (ErrOutsideWorkspace,
// ErrNotFound, ErrIsDir, ErrSpecialFile, ErrDenied as localsandbox),
// fetches at most Options.MaxReadBytes of it (GET /files) and returns
// localsandbox's window of those bytes; a larger file is Truncated at the
// bound, with Size the whole file's.
func (s *Sandbox) Read(ctx context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
	t, err := s.regular(ctx, sandbox.OpRead, req.Path, req.Deny)
	if err != nil {
		return nil, err
	}
	data, err := s.download(ctx, sandbox.OpRead, t.abs, s.opts.MaxReadBytes)
	if err != nil {
		return nil, &sandbox.PathError{Op: sandbox.OpRead, Path: t.display, Reason: err.Error(), Err: errOf(err)}
	}
	m, err := s.newMirror()
	if err != nil {
		return nil, err
	}
	defer m.close()
	if err := m.put(t.real, data, t.entry); err != nil {
		return nil, fmt.Errorf("e2bsandbox: Execution: %w", err)
	}
	lreq := req
	lreq.Path, lreq.Deny = t.real, nil
	res, err := m.sb.Read(ctx, lreq)
	if err != nil {
		return nil, withDisplay(err, t.display)
	}
	res.Path = t.display
	if size := t.entry.GetSize(); size > int64(len(data)) {
		res.Size, res.Truncated, res.More, res.TotalLines, res.HashedBytes = size, true, false, -1, int64(len(data))
	}
	return res, nil
}

// errOf is the sentinel a transfer error wraps, or sandbox.ErrChanged.
func errOf(err error) error {
	if errors.Is(err, sandbox.ErrNotFound) {
		return notFound{}
	}
	return err
}

// Write resolves req.Path inside the sandbox (a final symlink followed,
// inside the workspace only), uploads the content to a temporary file
// beside it (POST /files), moves it onto the target (Filesystem.Move, one
// rename: readers see the old or the new bytes) and reads it back (GET
// /files) for the digest. An existing file's permission bits are kept.
func (s *Sandbox) Write(ctx context.Context, req sandbox.WriteRequest) (*sandbox.WriteResult, error) {
	const op = sandbox.OpWrite
	t, err := s.resolve(ctx, op, req.Path, true)
	if err != nil {
		return nil, err
	}
	if t.dangling {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: "through a symlink whose target is missing; writing through it could create a file anywhere, so it is refused", Err: sandbox.ErrOutsideWorkspace}
	}
	if t.exists() && t.isDir() {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Err: sandbox.ErrIsDir}
	}
	if t.exists() && !t.isFile() {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: kindName(t.entry), Err: sandbox.ErrSpecialFile}
	}
	if t.real == "." {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Err: sandbox.ErrIsDir}
	}
	if err := denied(op, t.display, t.real, req.Deny); err != nil {
		return nil, err
	}
	if err := s.checkParents(ctx, op, t, req.NoCreateParents); err != nil {
		return nil, err
	}
	if err := s.replace(ctx, op, t, req.Content); err != nil {
		return nil, err
	}
	n, sum, err := s.readBack(ctx, op, t)
	if err != nil {
		return nil, err
	}
	return &sandbox.WriteResult{Path: t.display, Bytes: n, SHA256: sum, Created: !t.exists()}, nil
}

// checkParents refuses a missing parent when asked to, and a parent that
// is not a directory.
func (s *Sandbox) checkParents(ctx context.Context, op sandbox.Op, t *target, noCreate bool) error {
	dir := path.Dir(t.abs)
	for {
		e, err := s.stat(ctx, dir)
		if errors.Is(err, sandbox.ErrNotFound) {
			if noCreate {
				return &sandbox.PathError{Op: op, Path: t.display, Reason: "its directory " + relTo(s.ws, dir) + " does not exist (parents are not created)", Err: notFound{}}
			}
			if dir == s.ws {
				return &sandbox.PathError{Op: op, Path: t.display, Reason: "the workspace itself is gone", Err: notFound{}}
			}
			dir = path.Dir(dir)
			continue
		}
		if err != nil {
			return &sandbox.PathError{Op: op, Path: t.display, Reason: err.Error(), Err: err}
		}
		if e.GetType() != fspb.FileType_FILE_TYPE_DIRECTORY {
			return &sandbox.PathError{Op: op, Path: t.display, Reason: relTo(s.ws, dir) + " is a " + kindName(e), Err: sandbox.ErrNotDir}
		}
		return nil
	}
}

// replace puts data at t atomically: a temporary file in the same
// directory, its mode set like the old file's, then one Move onto t.
func (s *Sandbox) replace(ctx context.Context, op sandbox.Op, t *target, data []byte) error {
	tmp := path.Join(path.Dir(t.abs), ".aibuddy-tmp-"+randHex(6))
	if err := s.upload(ctx, tmp, data); err != nil {
		s.remove(context.WithoutCancel(ctx), tmp)
		return &sandbox.PathError{Op: op, Path: t.display, Reason: err.Error() + "; nothing was written", Err: errOf(err)}
	}
	if t.exists() {
		if mode := fs.FileMode(t.entry.GetMode()).Perm(); mode != 0 {
			if _, err := s.run(ctx, "chmod", strconv.FormatUint(uint64(mode), 8), tmp); err != nil {
				s.remove(context.WithoutCancel(ctx), tmp)
				return &sandbox.PathError{Op: op, Path: t.display, Reason: "keeping the file's mode: " + err.Error() + "; nothing was written", Err: err}
			}
		}
	}
	if err := s.move(ctx, tmp, t.abs); err != nil {
		s.remove(context.WithoutCancel(ctx), tmp)
		return &sandbox.PathError{Op: op, Path: t.display, Reason: err.Error() + "; nothing was written", Err: errOf(err)}
	}
	return nil
}

func (s *Sandbox) readBack(ctx context.Context, op sandbox.Op, t *target) (int64, string, error) {
	b, err := s.download(ctx, op, t.abs, s.opts.MaxReadBytes+1)
	if err != nil {
		return 0, "", &sandbox.PathError{Op: op, Path: t.display, Reason: "reading it back: " + err.Error(), Err: sandbox.ErrChanged}
	}
	sum := sha256.Sum256(b)
	return int64(len(b)), hex.EncodeToString(sum[:]), nil
}

// Edit fetches the file (at most Options.MaxReadBytes), applies the
// replacements with localsandbox's rules (exact matches, all or nothing,
// the file's encoding and line endings kept, ExpectedSHA256 checked),
// and writes the result back as Write does, after checking with
// Filesystem.Stat that nobody changed the file meanwhile (ErrChanged
// otherwise; nothing written). The read-back digest must be the edit's.
func (s *Sandbox) Edit(ctx context.Context, req sandbox.EditRequest) (*sandbox.EditResult, error) {
	const op = sandbox.OpEdit
	t, err := s.regular(ctx, op, req.Path, req.Deny)
	if err != nil {
		return nil, err
	}
	if t.entry.GetSize() > s.opts.MaxReadBytes {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: fmt.Sprintf("%d bytes, more than sandbox.e2b.maxReadBytes (%d): edit it with a command", t.entry.GetSize(), s.opts.MaxReadBytes), Err: sandbox.ErrTooDeep}
	}
	data, err := s.download(ctx, op, t.abs, s.opts.MaxReadBytes)
	if err != nil {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: err.Error(), Err: errOf(err)}
	}
	m, err := s.newMirror()
	if err != nil {
		return nil, err
	}
	defer m.close()
	if err := m.put(t.real, data, t.entry); err != nil {
		return nil, fmt.Errorf("e2bsandbox: Execution: %w", err)
	}
	lreq := req
	lreq.Path, lreq.Deny = t.real, nil
	res, err := m.sb.Edit(ctx, lreq)
	if err != nil {
		return nil, withDisplay(err, t.display)
	}
	out, err := os.ReadFile(m.local(t.real))
	if err != nil {
		return nil, fmt.Errorf("e2bsandbox: Execution: %w", err)
	}
	now, err := s.stat(ctx, t.abs)
	if err != nil || now.GetSize() != t.entry.GetSize() || !now.GetModifiedTime().AsTime().Equal(t.entry.GetModifiedTime().AsTime()) || now.GetType() != t.entry.GetType() {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: "modified by someone else during the edit; nothing was written", Err: sandbox.ErrStale}
	}
	if err := s.replace(ctx, op, t, out); err != nil {
		return nil, err
	}
	n, sum, err := s.readBack(ctx, op, t)
	if err != nil {
		return nil, err
	}
	if sum != res.SHA256 {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: "the file read back is not the edit's result: another process wrote it", Err: sandbox.ErrChanged}
	}
	res.Path, res.Bytes = t.display, n
	return res, nil
}

func entryType(e *fspb.EntryInfo) sandbox.EntryType {
	switch e.GetType() {
	case fspb.FileType_FILE_TYPE_FILE:
		return sandbox.TypeFile
	case fspb.FileType_FILE_TYPE_DIRECTORY:
		return sandbox.TypeDir
	case fspb.FileType_FILE_TYPE_SYMLINK:
		return sandbox.TypeSymlink
	}
	return sandbox.TypeOther
}

// List lists req.Path's entries from one Filesystem.ListDir of the
// requested depth, with localsandbox's rules: dot-entries left out and
// counted in Skipped unless IncludeHidden (".git" listed then, never
// descended), symlinks reported and not followed, Deny applied to each
// entry's real path (a denied directory's contents left out too), the
// shallowest MaxEntries entries kept (default 1,000), sorted by path
// component by component.
func (s *Sandbox) List(ctx context.Context, req sandbox.ListRequest) (*sandbox.ListResult, error) {
	const op = sandbox.OpList
	t, err := s.resolve(ctx, op, req.Path, true)
	if err != nil {
		return nil, err
	}
	switch {
	case !t.exists():
		return nil, &sandbox.PathError{Op: op, Path: t.display, Err: notFound{}}
	case t.isFile():
		return nil, &sandbox.PathError{Op: op, Path: t.display, Err: sandbox.ErrNotDir}
	case !t.isDir():
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: kindName(t.entry), Err: sandbox.ErrSpecialFile}
	}
	if err := denied(op, t.display, t.real, req.Deny); err != nil {
		return nil, err
	}
	depth := max(req.Depth, 1)
	maxEntries := req.MaxEntries
	if maxEntries <= 0 {
		maxEntries = 1000
	}
	ents, err := s.listDir(ctx, t.abs, depth)
	if err != nil {
		if ctx.Err() != nil {
			return &sandbox.ListResult{Partial: true}, nil
		}
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: err.Error(), Err: errOf(err)}
	}
	type item struct {
		e     sandbox.Entry
		level int
	}
	var items []item
	res := &sandbox.ListResult{}
	pruned := map[string]bool{} // sub-paths (relative to the listed dir) not descended
	for _, e := range ents {
		sub := relTo(t.abs, path.Clean(e.GetPath()))
		if real, ok := s.inside(e.GetPath()); ok && t.real != "." {
			sub = relTo(t.real, real)
		} else if ok {
			sub = real
		}
		if sub == "." || strings.HasPrefix(sub, "../") || path.IsAbs(sub) {
			continue
		}
		parts := strings.Split(sub, "/")
		skip := false
		for i := 1; i < len(parts); i++ {
			if pruned[strings.Join(parts[:i], "/")] {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		name := parts[len(parts)-1]
		if strings.HasPrefix(name, ".") && !req.IncludeHidden {
			res.Skipped++
			pruned[sub] = true
			continue
		}
		if name == ".git" {
			pruned[sub] = true
		}
		real := sub
		if t.real != "." {
			real = t.real + "/" + sub
		}
		if err := denied(op, "", real, req.Deny); err != nil {
			pruned[sub] = true
			continue
		}
		typ := entryType(e)
		if isLink(e) {
			typ = sandbox.TypeSymlink
		}
		size := e.GetSize()
		if typ == sandbox.TypeDir {
			size = 0
		}
		display := sub
		if t.display != "." {
			display = t.display + "/" + sub
		}
		items = append(items, item{sandbox.Entry{Path: display, Type: typ, Size: size, ModTime: e.GetModifiedTime().AsTime()}, len(parts)})
	}
	slices.SortStableFunc(items, func(a, b item) int { return a.level - b.level })
	if len(items) > maxEntries {
		items, res.Truncated = items[:maxEntries], true
	}
	for _, it := range items {
		res.Entries = append(res.Entries, it.e)
	}
	slices.SortFunc(res.Entries, func(a, b sandbox.Entry) int { return comparePaths(a.Path, b.Path) })
	return res, nil
}

// comparePaths orders slash-separated paths component by component.
func comparePaths(a, b string) int {
	return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
}

// Search copies the searched tree into a private local folder and runs
// localsandbox's Search on it (globs, RE2 grep, .gitignore, hidden and
// binary rules, Deny on each real path): one Filesystem.ListDir of the
// tree, then GET /files of each regular file (grep; glob needs none), at
// most Options.MaxSearchFiles files and Options.MaxSearchBytes bytes, past
// which the result is Partial. ".git" is never copied; symlinks in the
// tree are not followed.
func (s *Sandbox) Search(ctx context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
	const op = sandbox.OpSearch
	t, err := s.resolve(ctx, op, req.Path, true)
	if err != nil {
		return nil, err
	}
	if !t.exists() {
		return nil, &sandbox.PathError{Op: op, Path: t.display, Err: notFound{}}
	}
	if err := denied(op, t.display, t.real, req.Deny); err != nil {
		return nil, err
	}
	m, err := s.newMirror()
	if err != nil {
		return nil, err
	}
	defer m.close()
	grep := req.Mode == sandbox.ModeGrep
	partial := false
	var files []*fspb.EntryInfo
	switch {
	case t.isFile():
		files = append(files, t.entry)
		t.entry.Path = t.abs
	case t.isDir():
		ents, err := s.listDir(ctx, t.abs, 1<<16)
		if err != nil {
			if ctx.Err() != nil {
				return &sandbox.SearchResult{Partial: true}, nil
			}
			return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: err.Error(), Err: errOf(err)}
		}
		for _, e := range ents {
			rel, ok := s.inside(e.GetPath())
			if !ok || slices.Contains(strings.Split(rel, "/"), ".git") || isLink(e) {
				continue
			}
			switch e.GetType() {
			case fspb.FileType_FILE_TYPE_DIRECTORY:
				if err := os.MkdirAll(m.local(rel), 0o700); err != nil {
					return nil, fmt.Errorf("e2bsandbox: Execution: %w", err)
				}
			case fspb.FileType_FILE_TYPE_FILE:
				files = append(files, e)
			}
		}
		// .gitignore files of the directories above the searched one.
		// .gitignore files of the directories above the searched one,
		// and the repository's .git/info/exclude.
		extra := []string{path.Join(s.ws, ".git/info/exclude")}
		for dir := t.abs; dir != s.ws; {
			dir = path.Dir(dir)
			extra = append(extra, path.Join(dir, ".gitignore"))
		}
		for _, p := range extra {
			if e, err := s.stat(ctx, p); err == nil && e.GetType() == fspb.FileType_FILE_TYPE_FILE && !isLink(e) {
				e.Path = p
				files = append(files, e)
			}
		}
	default:
		return nil, &sandbox.PathError{Op: op, Path: t.display, Reason: kindName(t.entry), Err: sandbox.ErrSpecialFile}
	}
	if len(files) > s.opts.MaxSearchFiles {
		files, partial = files[:s.opts.MaxSearchFiles], true
	}
	if err := s.fetchAll(ctx, m, files, grep, &partial); err != nil {
		return nil, err
	}
	lreq := req
	lreq.Path = t.real
	res, err := m.sb.Search(ctx, lreq)
	if err != nil {
		return nil, withDisplay(err, t.display)
	}
	res.Partial = res.Partial || partial
	if t.real != t.display { // reached through a link: show the requested path
		shown := func(p string) string {
			if p == t.real {
				return t.display
			}
			if rest, ok := strings.CutPrefix(p, t.real+"/"); ok {
				if t.display == "." {
					return rest
				}
				return t.display + "/" + rest
			}
			return p
		}
		for i := range res.Files {
			res.Files[i].Path = shown(res.Files[i].Path)
		}
		for i := range res.Matches {
			res.Matches[i].Path = shown(res.Matches[i].Path)
		}
	}
	return res, nil
}

// fetchAll copies files into m, eight at a time; glob mode copies only
// the .gitignore files' contents (the others are empty stand-ins with the
// right modification time).
func (s *Sandbox) fetchAll(ctx context.Context, m *mirror, files []*fspb.EntryInfo, grep bool, partial *bool) error {
	var mu sync.Mutex
	var budget = s.opts.MaxSearchBytes
	var firstErr error
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, e := range files {
		rel, _ := s.inside(e.GetPath())
		need := grep || path.Base(rel) == ".gitignore" || strings.HasSuffix(rel, ".git/info/exclude")
		if need {
			mu.Lock()
			if e.GetSize() > budget {
				*partial = true
				need = false
			} else {
				budget -= e.GetSize()
			}
			mu.Unlock()
			if !need && grep {
				continue
			}
		}
		if !need {
			if err := m.put(rel, nil, e); err != nil {
				return fmt.Errorf("e2bsandbox: Execution: %w", err)
			}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b, err := s.download(ctx, sandbox.OpSearch, e.GetPath(), e.GetSize()+1)
			if err == nil {
				err = m.put(rel, b, e)
			}
			if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
				mu.Lock()
				if ctx.Err() != nil {
					*partial = true
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("e2bsandbox: search: %w", firstErr)
	}
	return nil
}
