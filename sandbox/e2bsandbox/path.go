package e2bsandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	fspb "github.com/aibuddy/aibuddy/internal/envdspec/filesystem"
	"github.com/aibuddy/aibuddy/sandbox"
)

// notFound matches both sandbox.ErrNotFound and fs.ErrNotExist.
type notFound struct{}

func (notFound) Error() string { return sandbox.ErrNotFound.Error() }
func (notFound) Is(target error) bool {
	return target == sandbox.ErrNotFound || target == fs.ErrNotExist
}

// target is a request path resolved inside the sandbox.
type target struct {
	display  string          // as requested, cleaned (workspace-relative)
	abs      string          // absolute sandbox path (under Options.Workspace), every link followed (the final one when asked)
	real     string          // abs relative to the workspace, "." for the root
	entry    *fspb.EntryInfo // the final object, nil when it does not exist
	dangling bool            // the final component is a link whose target is missing (or a loop)
}

func (t *target) exists() bool { return t.entry != nil && !t.dangling }
func (t *target) isDir() bool  { return t.entry.GetType() == fspb.FileType_FILE_TYPE_DIRECTORY }
func (t *target) isFile() bool { return t.entry.GetType() == fspb.FileType_FILE_TYPE_FILE }

// isLink reports an envd EntryInfo of a symlink: envd's Stat and ListDir
// give a link the type and mode of its target and set symlink_target
// to the link fully resolved (the link's own path when that fails).
func isLink(e *fspb.EntryInfo) bool {
	return e.SymlinkTarget != nil || strings.HasPrefix(e.GetPermissions(), "L")
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// inside maps an absolute sandbox path to a workspace-relative one,
// against the workspace as configured and as envd resolves it (its real
// path); false when it is outside both.
func (s *Sandbox) inside(p string) (string, bool) {
	p = path.Clean(p)
	for _, root := range []string{s.ws, s.wsReal} {
		if root == "" {
			continue
		}
		if p == root {
			return ".", true
		}
		if strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/") {
			return p[len(strings.TrimSuffix(root, "/"))+1:], true
		}
	}
	return "", false
}

func (s *Sandbox) absOf(rel string) string {
	if rel == "." {
		return s.ws
	}
	return s.ws + "/" + rel
}

func relTo(root, p string) string {
	if p == root {
		return "."
	}
	return strings.TrimPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// clipDisplay keeps an error about a huge path readable.
func clipDisplay(p string) string {
	if len(p) <= 240 {
		return p
	}
	return p[:100] + fmt.Sprintf("…(%d bytes)…", len(p)-200) + p[len(p)-100:]
}

// resolve maps a request path (workspace-relative, or absolute inside the
// workspace) to the object it names inside the sandbox. As localsandbox,
// ".." is applied lexically first (climbing above the root is refused);
// then the path is walked one component at a time with Filesystem.Stat,
// and each symlink met is replaced by its target as envd resolves it,
// refusing a target outside the workspace (sandbox.ErrOutsideWorkspace,
// the reason naming the link) and paths of more than 256 components
// (sandbox.ErrTooDeep). A missing component ends the walk: the rest is
// lexical and entry is nil. follow says whether a final symlink is
// followed; a dangling final link is reported with dangling set.
//
// This answers for the moment of the walk: envd's calls take paths, not
// handles, so another process in the sandbox swapping a component between
// the walk and the transfer that follows is not excluded (see doc.go).
func (s *Sandbox) resolve(ctx context.Context, op sandbox.Op, p string, follow bool) (*target, error) {
	perr := func(reason string, err error) error {
		return &sandbox.PathError{Op: op, Path: clipDisplay(p), Reason: reason, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, perr("", err)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return nil, perr("the path holds a NUL byte", notFound{})
	}
	display := p
	if display == "" {
		display = "."
	}
	if path.IsAbs(p) {
		rel, ok := s.inside(p)
		if !ok {
			return nil, perr("absolute path outside "+s.ws, sandbox.ErrOutsideWorkspace)
		}
		display = rel
	} else {
		c := path.Clean(display)
		if c == ".." || strings.HasPrefix(c, "../") {
			return nil, perr(`via ".."`, sandbox.ErrOutsideWorkspace)
		}
		display = c
	}
	rest := splitPath(display)
	if len(rest) > defaultMaxPathComponents {
		return nil, perr(fmt.Sprintf("the path has %d components, over the bound of %d", len(rest), defaultMaxPathComponents), sandbox.ErrTooDeep)
	}
	cur := s.ws
	var entry *fspb.EntryInfo
	followed := false
	for i, c := range rest {
		if entry != nil && entry.GetType() != fspb.FileType_FILE_TYPE_DIRECTORY {
			return nil, perr(relTo(s.ws, cur)+" is not a directory", sandbox.ErrNotDir)
		}
		next := path.Join(cur, c)
		e, err := s.stat(ctx, next)
		if errors.Is(err, sandbox.ErrNotFound) {
			for _, r := range rest[i:] {
				cur = path.Join(cur, r)
			}
			return &target{display: display, abs: cur, real: relTo(s.ws, cur)}, nil
		}
		if err != nil {
			if ce := ctx.Err(); ce != nil {
				return nil, perr("", ce)
			}
			return nil, perr(err.Error(), err)
		}
		last := i == len(rest)-1
		if !isLink(e) || (last && !follow) {
			cur, entry, followed = next, e, false
			continue
		}
		tgt := path.Clean(e.GetSymlinkTarget())
		if tgt == next || e.GetType() == fspb.FileType_FILE_TYPE_UNSPECIFIED && e.SymlinkTarget != nil && tgt == path.Clean(e.GetPath()) {
			// envd could not resolve the link: its target is missing or
			// it loops.
			if last {
				return &target{display: display, abs: next, real: relTo(s.ws, next), entry: e, dangling: true}, nil
			}
			return nil, perr("symlink "+relTo(s.ws, next)+" leads nowhere (missing target or a loop)", notFound{})
		}
		rel, ok := s.inside(tgt)
		if !ok {
			return nil, perr("via symlink "+relTo(s.ws, next)+" -> "+tgt, sandbox.ErrOutsideWorkspace)
		}
		cur, entry, followed = s.absOf(rel), e, true
		if !last && len(splitPath(rel))+len(rest)-i-1 > defaultMaxPathComponents {
			return nil, perr(fmt.Sprintf("its links expand to more than %d components", defaultMaxPathComponents), sandbox.ErrTooDeep)
		}
	}
	if entry == nil || followed {
		// The root, or a followed link: envd's entry of a link carries
		// the link's own size and time, so stat what it points to.
		e, err := s.stat(ctx, cur)
		if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			return nil, perr(err.Error(), err)
		}
		entry = e
	}
	return &target{display: display, abs: cur, real: relTo(s.ws, cur), entry: entry}, nil
}

// ResolvePath implements sandbox.PathResolver: the workspace-relative real
// path p points to, every symlink followed, resolved inside the sandbox.
func (s *Sandbox) ResolvePath(ctx context.Context, p string) (string, error) {
	t, err := s.resolve(ctx, "resolve", p, true)
	if err != nil {
		return "", err
	}
	return t.real, nil
}

// denied applies a Deny rule to a real path.
func denied(op sandbox.Op, display, real string, deny sandbox.Deny) error {
	if deny == nil {
		return nil
	}
	if rule, no := deny(real); no {
		return &sandbox.PathError{Op: op, Path: display, Reason: "rule " + rule + " denies " + real, Err: &sandbox.DeniedError{Rule: rule, Real: real}}
	}
	return nil
}

// kindName names what an entry is, as localsandbox does, from envd's
// permissions string (Go's fs.FileMode.String of the object).
func kindName(e *fspb.EntryInfo) string {
	perm := e.GetPermissions()
	switch {
	case isLink(e) && e.GetType() == fspb.FileType_FILE_TYPE_UNSPECIFIED:
		return "symbolic link to a missing target or a special file"
	case e.GetType() == fspb.FileType_FILE_TYPE_DIRECTORY:
		return "directory"
	case e.GetType() == fspb.FileType_FILE_TYPE_FILE:
		return "file"
	case strings.HasPrefix(perm, "p"):
		return "named pipe (FIFO)"
	case strings.HasPrefix(perm, "S"):
		return "socket"
	case strings.HasPrefix(perm, "Dc"):
		return "character device"
	case strings.HasPrefix(perm, "D"):
		return "block device"
	}
	return "special file (" + perm + ")"
}
