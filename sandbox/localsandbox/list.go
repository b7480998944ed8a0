package localsandbox

import (
	"context"
	"io/fs"
	"slices"
	"strings"

	"github.com/aibuddy/aibuddy/sandbox"
)

// List returns the entries under the directory req.Path, breadth first so
// that a cut keeps the top of the tree: Depth levels (0 or 1: direct
// children), at most MaxEntries entries (default 1,000; Truncated says more
// exist). Dot-entries are left out and counted in Skipped unless
// IncludeHidden; ".git" is listed then but never descended. Symlinks are
// reported as TypeSymlink and never followed, so a link cycle cannot loop
// (BH-017); Size is the link's own size. Entries come sorted by path,
// component by component, directories before their contents.
//
// The directory itself may be reached through a symlink that stays inside
// the workspace (entry paths then use the requested path); one that leads
// outside fails with a *sandbox.PathError wrapping ErrOutsideWorkspace.
// req.Deny judges the directory's real path (ErrDenied) and each entry's,
// leaving denied entries out; subdirectories are opened without following
// any link, and not below Options.MaxPathDepth.
// When ctx is done mid-walk, List returns what it found with Partial set
// and a nil error. Other errors: ErrNotFound, ErrNotDir, ErrSpecialFile,
// ErrTooDeep.
func (s *Sandbox) List(ctx context.Context, req sandbox.ListRequest) (*sandbox.ListResult, error) {
	const op = sandbox.OpList
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, req.Path, err)
	}
	t, err := s.walkPath(op, req.Path, walkOpts{open: openDir, deny: req.Deny})
	if err != nil {
		return nil, err
	}
	top := t.takeFile()
	t.close()
	depth := max(req.Depth, 1)
	maxEntries := orDefault(req.MaxEntries, defaultListEntries)

	// Each directory is read through a descriptor opened without
	// following any link (the first by the path walk, the others by
	// openDirBeneath on their real paths), and every entry's real path is
	// that directory's joined with its name, so Deny judges exactly what
	// is listed.
	type dir struct {
		real, display string
		level         int
	}
	res := &sandbox.ListResult{}
	queue := []dir{{t.real, t.display, 1}}
	seen := 0
	maxLevel := s.maxPathDepth() - len(splitRel(t.real))
walk:
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if ctx.Err() != nil {
			res.Partial = true
			break
		}
		f := top
		top = nil
		if f == nil {
			var err error
			if f, err = s.openDirBeneath(d.real); err != nil {
				continue // vanished, replaced by a link or unreadable below the top: skip
			}
		}
		ents, err := f.ReadDir(-1)
		if err != nil && d.level == 1 {
			f.Close()
			return nil, s.pathErr(op, t.display, err)
		}
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range ents {
			seen++
			if seen%ctxCheckEvery == 0 && ctx.Err() != nil {
				res.Partial = true
				f.Close()
				break walk
			}
			name := e.Name()
			if strings.HasPrefix(name, ".") && !req.IncludeHidden {
				res.Skipped++
				continue
			}
			real := joinDisplay(d.real, name)
			if req.Deny != nil {
				if _, denied := req.Deny(real); denied {
					continue
				}
			}
			if len(res.Entries) >= maxEntries {
				res.Truncated = true
				f.Close()
				break walk
			}
			ent := sandbox.Entry{Path: joinDisplay(d.display, name)}
			if info, err := entryInfo(f, e); err == nil {
				ent.ModTime = info.mtime
				ent.Size = info.size
			}
			switch t := e.Type(); {
			case t&fs.ModeSymlink != 0:
				ent.Type = sandbox.TypeSymlink
			case t.IsDir():
				ent.Type = sandbox.TypeDir
				ent.Size = 0
				if d.level < depth && name != ".git" && d.level < maxLevel {
					queue = append(queue, dir{real, ent.Path, d.level + 1})
				}
			case t.IsRegular():
				ent.Type = sandbox.TypeFile
			default:
				ent.Type = sandbox.TypeOther
			}
			res.Entries = append(res.Entries, ent)
		}
		f.Close()
	}
	if top != nil {
		top.Close()
	}
	slices.SortFunc(res.Entries, func(a, b sandbox.Entry) int { return comparePaths(a.Path, b.Path) })
	return res, nil
}

// joinDisplay joins a display directory and a name ("." is the root).
func joinDisplay(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

// comparePaths orders slash-separated paths component by component, so a
// directory comes right before its contents.
func comparePaths(a, b string) int {
	for {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		ac, bc := a, b
		if ai >= 0 {
			ac = a[:ai]
		}
		if bi >= 0 {
			bc = b[:bi]
		}
		if c := strings.Compare(ac, bc); c != 0 {
			return c
		}
		switch {
		case ai < 0 && bi < 0:
			return 0
		case ai < 0:
			return -1
		case bi < 0:
			return 1
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}
