package localsandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aibuddy/aibuddy/sandbox"
)

// maxSymlinkHops bounds symlink expansion while resolving one path (the
// kernel's own limit is 40 on Linux).
const maxSymlinkHops = 40

// maxResolveSwaps bounds how often resolve looks again at a link that was
// replaced or removed between its lstat and its readlink.
const maxResolveSwaps = 8

// errPathEscapesText is the text of os.Root's unexported escape error; it is
// matched only as a backstop (resolve denies escapes before os.Root sees them).
const errPathEscapesText = "path escapes from parent"

// linkPolicy says what resolve does with a symlink in the final component.
type linkPolicy int

const (
	// followFinal follows a final symlink; a dangling one whose target is
	// inside resolves to its (missing) target.
	followFinal linkPolicy = iota
	// followFinalStrict follows a final symlink and treats a dangling one as
	// outside (write paths: BH-057).
	followFinalStrict
)

// resolved is a request path mapped into the root.
type resolved struct {
	rel     string // canonical, slash-separated, relative to the root; "." is the root
	display string // the request path, cleaned and slash-separated
}

// ResolvePath implements [sandbox.PathResolver]: where p really points,
// relative to the workspace root, with every symlink followed.
func (s *Sandbox) ResolvePath(ctx context.Context, p string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	r, err := s.resolve(sandbox.OpRead, p, followFinal)
	if err != nil {
		return "", err
	}
	return r.rel, nil
}

// resolve maps a request path onto the workspace: lexically first ("..",
// absolute paths), then component by component through the root handle,
// expanding symlinks itself so that every escape is reported with its
// reason before any effect. The returned path holds no symlinks at the time
// of the check; all later access still goes through os.Root, which refuses
// an escape created by a swap in between.
func (s *Sandbox) resolve(op sandbox.Op, p string, policy linkPolicy) (resolved, error) {
	display, rel, err := s.lexical(op, p)
	if err != nil {
		return resolved{}, err
	}
	out := resolved{display: display}
	deny := func(reason string) (resolved, error) {
		return resolved{}, &sandbox.PathError{Op: op, Path: display, Reason: reason, Err: sandbox.ErrOutsideWorkspace}
	}

	var cur []string // resolved components so far
	queue := splitRel(rel)
	hops, swaps := 0, 0
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return deny("via symlink leak: a link target climbs above the workspace root")
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cand := path.Join(append(append([]string(nil), cur...), name)...)
		fi, err := s.root.Lstat(cand)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// The rest does not exist yet: finish lexically (only
				// components from a link target can hold "..").
				cur = append(cur, name)
				for _, q := range queue {
					switch q {
					case "", ".":
					case "..":
						if len(cur) == 0 {
							return deny("via symlink leak: a link target climbs above the workspace root")
						}
						cur = cur[:len(cur)-1]
					default:
						cur = append(cur, q)
					}
				}
				queue = nil
				break
			}
			return resolved{}, s.pathErr(op, display, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			hops++
			if hops > maxSymlinkHops {
				return resolved{}, &sandbox.PathError{Op: op, Path: display, Reason: "too many levels of symbolic links", Err: syscall.ELOOP}
			}
			target, err := s.root.Readlink(cand)
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, fs.ErrNotExist) {
				// The link was replaced (readlink of a non-link is
				// EINVAL) or removed since Lstat: look at the component
				// again, a few times at most.
				swaps++
				if swaps > maxResolveSwaps {
					return resolved{}, &sandbox.PathError{Op: op, Path: display,
						Reason: fmt.Sprintf("the link %s kept being replaced while the path was resolved; nothing was done", cand), Err: sandbox.ErrChanged}
				}
				hops--
				queue = append([]string{name}, queue...)
				continue
			}
			if err != nil {
				return resolved{}, s.pathErr(op, display, err)
			}
			final := len(queue) == 0
			var next []string
			if filepath.IsAbs(target) {
				inside, ok := s.inside(target)
				if !ok {
					return deny(fmt.Sprintf("via symlink leak: %s -> %s", cand, target))
				}
				cur = nil
				next = splitRel(inside)
			} else {
				next = splitRel(filepath.ToSlash(target))
				// Check that the link target stays inside before following.
				depth := len(cur)
				for _, c := range next {
					switch c {
					case "", ".":
					case "..":
						depth--
					default:
						depth++
					}
					if depth < 0 {
						return deny(fmt.Sprintf("via symlink leak: %s -> %s", cand, target))
					}
				}
			}
			if final && policy == followFinalStrict {
				// A dangling final link counts as outside (BH-057).
				tgt := path.Join(append(append([]string(nil), cur...), next...)...)
				if _, err := s.root.Stat(tgt); err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						return deny(fmt.Sprintf("via dangling symlink %s -> %s (treated as outside)", cand, target))
					}
					if isEscape(err) {
						return deny(fmt.Sprintf("via symlink leak: %s -> %s", cand, target))
					}
				}
			}
			queue = append(next, queue...)
			continue
		}
		cur = append(cur, name)
		if len(queue) > 0 && !fi.IsDir() {
			return resolved{}, &sandbox.PathError{Op: op, Path: display, Reason: cand + " is not a directory", Err: sandbox.ErrNotDir}
		}
	}
	out.rel = "."
	if len(cur) > 0 {
		out.rel = path.Join(cur...)
	}
	return out, nil
}

// lexical cleans p and maps an absolute path inside the workspace to a
// relative one. It returns the display form and the relative form.
func (s *Sandbox) lexical(op sandbox.Op, p string) (display, rel string, err error) {
	if strings.IndexByte(p, 0) >= 0 {
		return p, "", &sandbox.PathError{Op: op, Path: p, Reason: "path contains a NUL byte", Err: sandbox.ErrNotFound}
	}
	if p == "" {
		p = "."
	}
	native := filepath.FromSlash(p)
	if filepath.IsAbs(native) {
		inside, ok := s.inside(native)
		if !ok {
			return filepath.ToSlash(p), "", &sandbox.PathError{Op: op, Path: filepath.ToSlash(p),
				Reason: "absolute path outside " + s.dir, Err: sandbox.ErrOutsideWorkspace}
		}
		return inside, inside, nil
	}
	c := path.Clean(filepath.ToSlash(native))
	if c == ".." || strings.HasPrefix(c, "../") {
		return c, "", &sandbox.PathError{Op: op, Path: filepath.ToSlash(p), Reason: "via \"..\"", Err: sandbox.ErrOutsideWorkspace}
	}
	return c, c, nil
}

// inside maps an absolute path to a slash-separated path relative to the
// workspace, reporting false when it is not inside. Both the resolved root
// and the folder as given to New count.
func (s *Sandbox) inside(abs string) (string, bool) {
	abs = filepath.Clean(abs)
	for _, base := range []string{s.dir, s.given} {
		if base == "" {
			continue
		}
		r, err := filepath.Rel(base, abs)
		if err != nil {
			continue
		}
		r = filepath.ToSlash(r)
		if r == ".." || strings.HasPrefix(r, "../") || filepath.IsAbs(r) {
			continue
		}
		return r, true
	}
	return "", false
}

func splitRel(p string) []string {
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

// isEscape reports whether err is os.Root refusing a path that escapes.
func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errPathEscapesText {
			return true
		}
	}
	return false
}

// notFound matches both sandbox.ErrNotFound and fs.ErrNotExist.
type notFound struct{}

func (notFound) Error() string   { return sandbox.ErrNotFound.Error() }
func (notFound) Unwrap() []error { return []error{sandbox.ErrNotFound, fs.ErrNotExist} }

// pathErr turns an OS error about a path into a *sandbox.PathError carrying
// the matching sentinel.
func (s *Sandbox) pathErr(op sandbox.Op, display string, err error) error {
	var pe *sandbox.PathError
	if errors.As(err, &pe) {
		return err
	}
	switch {
	case isEscape(err):
		return &sandbox.PathError{Op: op, Path: display, Reason: "via symlink leak", Err: sandbox.ErrOutsideWorkspace}
	case errors.Is(err, fs.ErrNotExist):
		return &sandbox.PathError{Op: op, Path: display, Err: notFound{}}
	case errors.Is(err, syscall.ENOTDIR):
		return &sandbox.PathError{Op: op, Path: display, Err: sandbox.ErrNotDir}
	case errors.Is(err, syscall.EISDIR):
		return &sandbox.PathError{Op: op, Path: display, Err: sandbox.ErrIsDir}
	}
	var ope *os.PathError
	if errors.As(err, &ope) {
		err = ope.Err
	}
	return &sandbox.PathError{Op: op, Path: display, Err: err}
}

// raced is pathErr for a step that runs after the path was checked: a path
// that is gone, or became a directory where a file was (a rename over it
// fails with EEXIST, ENOTEMPTY or EISDIR), was changed by another process
// in between, and the error says so with sandbox.ErrChanged, the step
// ("while it was being read") and the outcome ("nothing was written").
// Other errors are pathErr's.
func (s *Sandbox) raced(op sandbox.Op, display string, err error, step, outcome string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &sandbox.PathError{Op: op, Path: display, Reason: "removed " + step + "; " + outcome, Err: sandbox.ErrChanged}
	case errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EISDIR):
		return &sandbox.PathError{Op: op, Path: display, Reason: "replaced by a directory " + step + "; " + outcome, Err: sandbox.ErrChanged}
	case errors.Is(err, syscall.ENOTDIR):
		return &sandbox.PathError{Op: op, Path: display, Reason: "a directory in the path was replaced by a file " + step + "; " + outcome, Err: sandbox.ErrChanged}
	case errors.Is(err, syscall.ELOOP):
		// The path held no link when it was resolved; links were swapped
		// in since, faster than os.Root could follow them.
		return &sandbox.PathError{Op: op, Path: display, Reason: "replaced by a symbolic link " + step + "; " + outcome, Err: sandbox.ErrChanged}
	}
	return s.pathErr(op, display, err)
}

// ctxErr wraps a done context's error for op on display.
func ctxErr(op sandbox.Op, display string, err error) error {
	return fmt.Errorf("%s %s: %w", op, display, err)
}
