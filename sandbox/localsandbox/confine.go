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

// maxResolveSwaps bounds how often the walk looks again at a component
// that was replaced (a link swapped in, a file removed) between two of its
// steps, before it gives up with sandbox.ErrChanged.
const maxResolveSwaps = 8

// errPathEscapesText is the text of os.Root's unexported escape error; it is
// matched only as a backstop (the walk denies escapes itself).
const errPathEscapesText = "path escapes from parent"

// parents says what the walk does with a missing directory before the
// final component.
type parents int

const (
	parentsMustExist parents = iota // ErrNotFound
	parentsCreate                   // create it, one component at a time (Write, BH-058)
	parentsLexical                  // finish the path lexically (ResolvePath)
)

// want says what the walk opens at the end.
type want int

const (
	openNone want = iota // nothing: the final component may be missing (Write)
	openFile             // a regular file (Read, Edit)
	openDir              // a directory (List)
	openAny              // a regular file or a directory (Search)
)

// walkOpts configures one walkPath.
type walkOpts struct {
	parents parents
	open    want
	// strict: a final symlink must lead to an existing object inside;
	// a dangling one counts as outside (write paths, BH-057).
	strict bool
	deny   sandbox.Deny
}

// resolved names a path for messages: its real, canonical form and the
// form the request used.
type resolved struct {
	rel     string // canonical, slash-separated, relative to the root; "." is the root
	display string // the request path, cleaned and slash-separated
}

// target is where a request path leads, found by walkPath. dir and name
// are the directory holding the final object and its name there (name is
// "." for a directory reached as the end of the path itself); real is the
// object's workspace-relative path, every link followed. The caller owns
// the target and closes it.
type target struct {
	display string
	real    string
	dir     dirH
	name    string
	exists  bool
	st      statInfo // of the final object: its lstat, or the fstat of file
	file    *os.File // the final object, opened, when walkOpts.open asked
	held    []dirH   // directories the walk opened (closed by close)
}

// close releases the target's file and directories.
func (t *target) close() {
	if t == nil {
		return
	}
	if t.file != nil {
		t.file.Close()
		t.file = nil
	}
	for _, d := range t.held {
		closeDir(d)
	}
	t.held = nil
}

// takeFile hands the opened file over to the caller, who closes it.
func (t *target) takeFile() *os.File {
	f := t.file
	t.file = nil
	return f
}

// ResolvePath implements [sandbox.PathResolver]: where p really points,
// relative to the workspace root, with every symlink followed; a part that
// does not exist yet resolves lexically.
func (s *Sandbox) ResolvePath(ctx context.Context, p string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	t, err := s.walkPath(sandbox.OpRead, p, walkOpts{parents: parentsLexical})
	if err != nil {
		return "", err
	}
	defer t.close()
	return t.real, nil
}

// walkPath maps a request path onto the workspace and finds the object it
// leads to: lexically first ("..", absolute paths, the depth and length
// bounds), then one component at a time relative to the directory opened
// for the one before, starting at the root's descriptor. No link is ever
// followed by the kernel: each one is read (readlinkat) and its target
// resolved the same way, after checking that it stays inside, so an escape
// is refused with its reason before any effect, and the object finally
// opened (openat with O_NOFOLLOW|O_NONBLOCK, after an lstat that refuses a
// FIFO, socket or device unopened) is exactly the one at real. opts.deny
// is applied to real before the object is opened, and, when parents are
// created, to the path the new file will have before the first directory
// is made. Every step is one system call on one name, so the walk is
// linear in the depth of the path (the depth itself is bounded by
// Options.MaxPathDepth and MaxPathBytes: sandbox.ErrTooDeep).
//
// Errors are *sandbox.PathError: ErrOutsideWorkspace (with the link that
// leaks), ErrDenied, ErrSpecialFile, ErrTooDeep, ErrNotFound, ErrNotDir,
// ErrIsDir, ErrChanged (a component kept being replaced), ELOOP.
func (s *Sandbox) walkPath(op sandbox.Op, p string, o walkOpts) (*target, error) {
	display, rel, err := s.lexical(op, p)
	if err != nil {
		return nil, err
	}
	queue := splitRel(rel)
	if err := s.checkBounds(op, display, len(queue), len(rel), "the path has"); err != nil {
		return nil, err
	}
	w := &pathWalk{s: s, op: op, display: display, stack: []dirH{s.rootFd}}
	t, err := w.run(queue, o)
	if err != nil {
		w.release()
		return nil, err
	}
	return t, nil
}

// pathWalk is the state of one walkPath: the directories open along the
// real path so far (stack[0] is the root, not owned) and their names.
type pathWalk struct {
	s       *Sandbox
	op      sandbox.Op
	display string
	stack   []dirH
	names   []string
	bytes   int // of the real path so far
}

func (w *pathWalk) top() dirH { return w.stack[len(w.stack)-1] }

func (w *pathWalk) push(d dirH, name string) error {
	w.stack = append(w.stack, d)
	w.names = append(w.names, name)
	w.bytes += len(name) + 1
	return w.s.checkBounds(w.op, w.display, len(w.names), w.bytes, "its links lead to a path with")
}

func (w *pathWalk) pop() {
	closeDir(w.stack[len(w.stack)-1])
	w.stack = w.stack[:len(w.stack)-1]
	w.bytes -= len(w.names[len(w.names)-1]) + 1
	w.names = w.names[:len(w.names)-1]
}

// toRoot closes every directory but the root.
func (w *pathWalk) toRoot() {
	for len(w.stack) > 1 {
		w.pop()
	}
}

func (w *pathWalk) release() { w.toRoot() }

// real is the real path of the current directory joined with more.
func (w *pathWalk) real(more ...string) string {
	all := append(append([]string(nil), w.names...), more...)
	if len(all) == 0 {
		return "."
	}
	return strings.Join(all, "/")
}

func (w *pathWalk) deny(reason string) error {
	return &sandbox.PathError{Op: w.op, Path: w.display, Reason: reason, Err: sandbox.ErrOutsideWorkspace}
}

// checkDeny applies rule to real.
func (w *pathWalk) checkDeny(d sandbox.Deny, real string) error {
	if d == nil {
		return nil
	}
	rule, denied := d(real)
	if !denied {
		return nil
	}
	reason := fmt.Sprintf("denied by the rule %q", rule)
	if real != w.display {
		reason = fmt.Sprintf("it resolves to %s, which is denied by the rule %q", real, rule)
	}
	return &sandbox.PathError{Op: w.op, Path: w.display, Reason: reason, Err: &sandbox.DeniedError{Rule: rule, Real: real}}
}

// expand returns the components to resolve instead of the link cand whose
// target is target, after checking that they stay inside; an absolute
// target inside restarts at the root.
func (w *pathWalk) expand(cand, target string) ([]string, error) {
	if filepath.IsAbs(target) {
		inside, ok := w.s.inside(target)
		if !ok {
			return nil, w.deny(fmt.Sprintf("via symlink leak: %s -> %s", cand, target))
		}
		w.toRoot()
		return splitRel(inside), nil
	}
	next := splitRel(filepath.ToSlash(target))
	depth := len(w.names)
	for _, c := range next {
		switch c {
		case "", ".":
		case "..":
			depth--
		default:
			depth++
		}
		if depth < 0 {
			return nil, w.deny(fmt.Sprintf("via symlink leak: %s -> %s", cand, target))
		}
	}
	return next, nil
}

// lexicalRest is the real path the walk would reach through queue (no
// more links, as nothing below exists yet), or false when it climbs above
// the root.
func (w *pathWalk) lexicalRest(queue []string) (string, bool) {
	cur := append([]string(nil), w.names...)
	for _, q := range queue {
		switch q {
		case "", ".":
		case "..":
			if len(cur) == 0 {
				return "", false
			}
			cur = cur[:len(cur)-1]
		default:
			cur = append(cur, q)
		}
	}
	if len(cur) == 0 {
		return ".", true
	}
	return strings.Join(cur, "/"), true
}

func (w *pathWalk) run(queue []string, o walkOpts) (*target, error) {
	hops, swaps := 0, 0
	viaFinalLink := false // the final component was a link (strict: its target must exist)
	checkedCreate := false
	created := 0 // directories made (parentsCreate)
	swapped := func(what string) error {
		swaps++
		if swaps > maxResolveSwaps {
			return &sandbox.PathError{Op: w.op, Path: w.display,
				Reason: fmt.Sprintf("%s kept being replaced while the path was resolved; nothing was done", what), Err: sandbox.ErrChanged}
		}
		return nil
	}
	link := func(name string, rest []string) ([]string, error) {
		cand := w.real(name)
		target, err := readlinkAt(w.top(), name)
		if err != nil {
			return nil, err
		}
		hops++
		if hops > maxSymlinkHops {
			return nil, &sandbox.PathError{Op: w.op, Path: w.display, Reason: "too many levels of symbolic links", Err: syscall.ELOOP}
		}
		next, err := w.expand(cand, target)
		if err != nil {
			return nil, err
		}
		return append(next, rest...), nil
	}
	for {
		if len(queue) == 0 {
			// The path ends at the directory on top: the root itself, or
			// a link target ending in "..".
			return w.finishDir(o)
		}
		name := queue[0]
		queue = queue[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(w.names) == 0 {
				return nil, w.deny("via symlink leak: a link target climbs above the workspace root")
			}
			w.pop()
			continue
		}
		if !allDots(queue) {
			// A directory on the way.
			d, err := openDirAt(w.top(), name)
			switch {
			case err == nil:
				if err := w.push(d, name); err != nil {
					return nil, err
				}
				continue
			case errors.Is(err, fs.ErrNotExist):
				switch o.parents {
				case parentsLexical:
					real, ok := w.lexicalRest(append([]string{name}, queue...))
					if !ok {
						return nil, w.deny("via symlink leak: a link target climbs above the workspace root")
					}
					return &target{display: w.display, real: real, dir: w.top(), held: w.stack[1:]}, nil
				case parentsCreate:
					if viaFinalLink && o.strict {
						return nil, w.deny(fmt.Sprintf("via dangling symlink (its target %s does not exist; treated as outside)", w.real(name)))
					}
					if !checkedCreate {
						// Nothing is created for a path that is denied
						// or too deep.
						real, ok := w.lexicalRest(append([]string{name}, queue...))
						if !ok {
							return nil, w.deny("via symlink leak: a link target climbs above the workspace root")
						}
						if err := w.s.checkBounds(w.op, w.display, len(splitRel(real)), len(real), "its links lead to a path with"); err != nil {
							return nil, err
						}
						if err := w.checkDeny(o.deny, real); err != nil {
							return nil, err
						}
						checkedCreate = true
					}
					if err := mkdirAt(w.top(), name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
						return nil, w.s.pathErr(w.op, w.display, err)
					}
					if created++; created > w.s.maxPathDepth()+maxResolveSwaps {
						return nil, &sandbox.PathError{Op: w.op, Path: w.display,
							Reason: "its parent directories kept being removed while they were created; nothing was written", Err: sandbox.ErrChanged}
					}
					queue = append([]string{name}, queue...)
					continue
				}
				return nil, &sandbox.PathError{Op: w.op, Path: w.display, Reason: "parent directory " + w.real(name) + " does not exist", Err: notFound{}}
			case isLinkErr(err):
				next, lerr := link(name, queue)
				switch {
				case lerr == nil:
					queue = next
					continue
				case isNotLink(lerr):
					if st, err := lstatAt(w.top(), name); err == nil && st.mode.IsDir() {
						// A directory again (swapped back since the open):
						// look at it once more.
						if err := swapped(w.real(name)); err != nil {
							return nil, err
						}
						queue = append([]string{name}, queue...)
						continue
					}
					return nil, &sandbox.PathError{Op: w.op, Path: w.display, Reason: w.real(name) + " is not a directory", Err: sandbox.ErrNotDir}
				case errors.Is(lerr, fs.ErrNotExist):
					if err := swapped(w.real(name)); err != nil {
						return nil, err
					}
					queue = append([]string{name}, queue...)
					continue
				}
				return nil, w.s.pathErr(w.op, w.display, lerr)
			}
			return nil, w.s.pathErr(w.op, w.display, err)
		}

		// The final component (maybe followed by "." components).
		st, err := lstatAt(w.top(), name)
		if errors.Is(err, fs.ErrNotExist) {
			real := w.real(name)
			if viaFinalLink && o.strict {
				return nil, w.deny(fmt.Sprintf("via dangling symlink (its target %s does not exist; treated as outside)", real))
			}
			switch {
			case o.parents == parentsLexical:
				return &target{display: w.display, real: real, dir: w.top(), name: name, held: w.stack[1:]}, nil
			case o.open == openNone:
				if err := w.checkDeny(o.deny, real); err != nil {
					return nil, err
				}
				return &target{display: w.display, real: real, dir: w.top(), name: name, held: w.stack[1:]}, nil
			}
			return nil, &sandbox.PathError{Op: w.op, Path: w.display, Err: notFound{}}
		}
		if err != nil {
			return nil, w.s.pathErr(w.op, w.display, err)
		}
		if st.mode&fs.ModeSymlink != 0 {
			next, lerr := link(name, queue)
			switch {
			case lerr == nil:
				viaFinalLink = true
				queue = next
				continue
			case isNotLink(lerr), errors.Is(lerr, fs.ErrNotExist):
				// Replaced or removed since its lstat: look again.
				if err := swapped(w.real(name)); err != nil {
					return nil, err
				}
				queue = append([]string{name}, queue...)
				continue
			}
			return nil, w.s.pathErr(w.op, w.display, lerr)
		}
		real := w.real(name)
		if o.parents == parentsLexical {
			return &target{display: w.display, real: real, dir: w.top(), name: name, exists: true, st: st, held: w.stack[1:]}, nil
		}
		if err := w.checkKind(st, o.open); err != nil {
			return nil, err
		}
		if err := w.checkDeny(o.deny, real); err != nil {
			return nil, err
		}
		t := &target{display: w.display, real: real, dir: w.top(), name: name, exists: true, st: st}
		if o.open != openNone {
			f, fst, err := openFileAt(w.top(), name)
			if err == nil && fst.mode.Type() != st.mode.Type() {
				f.Close()
				err = syscall.ELOOP // another kind of object was swapped in
			}
			if err != nil {
				if isSwapErr(err) {
					if err := swapped(real); err != nil {
						return nil, err
					}
					queue = append([]string{name}, queue...)
					continue
				}
				if isWouldBlock(err) {
					// A blocking open would wait for another process's
					// lease on the file (fcntl F_SETLEASE) to be given up.
					return nil, &sandbox.PathError{Op: w.op, Path: w.display, Err: err,
						Reason: "another process holds a lease on the file and has been asked to release it; nothing was done; retry in a moment"}
				}
				return nil, w.s.pathErr(w.op, w.display, err)
			}
			t.file, t.st = f, fst
		}
		t.held = w.stack[1:]
		return t, nil
	}
}

// finishDir ends a path at the directory on top of the stack.
func (w *pathWalk) finishDir(o walkOpts) (*target, error) {
	real := w.real()
	t := &target{display: w.display, real: real, dir: w.top(), name: ".", exists: true}
	st, err := lstatAt(w.top(), ".")
	if err != nil {
		return nil, w.s.pathErr(w.op, w.display, err)
	}
	t.st = st
	if o.parents == parentsLexical {
		t.held = w.stack[1:]
		return t, nil
	}
	if err := w.checkKind(st, o.open); err != nil {
		return nil, err
	}
	if err := w.checkDeny(o.deny, real); err != nil {
		return nil, err
	}
	if o.open != openNone {
		f, fst, err := openFileAt(w.top(), ".")
		if err != nil {
			return nil, w.s.pathErr(w.op, w.display, err)
		}
		t.file, t.st = f, fst
	}
	t.held = w.stack[1:]
	return t, nil
}

// checkKind refuses an object of the wrong kind for what is wanted: a
// FIFO, socket or device always (sandbox.ErrSpecialFile, unopened).
func (w *pathWalk) checkKind(st statInfo, o want) error {
	switch m := st.mode; {
	case m.IsDir():
		if o == openFile || o == openNone {
			return &sandbox.PathError{Op: w.op, Path: w.display, Err: sandbox.ErrIsDir}
		}
	case m.IsRegular():
		if o == openDir {
			return &sandbox.PathError{Op: w.op, Path: w.display, Err: sandbox.ErrNotDir}
		}
	default:
		return &sandbox.PathError{Op: w.op, Path: w.display,
			Reason: "it is a " + kindName(m) + ", which is never opened",
			Err:    sandbox.ErrSpecialFile}
	}
	return nil
}

// kindName names a file type: "named pipe (FIFO)", "socket", ...
func kindName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// allDots reports whether q holds only "." and "" components.
func allDots(q []string) bool {
	for _, c := range q {
		if c != "" && c != "." {
			return false
		}
	}
	return true
}

// checkBounds refuses a path of more than Options.MaxPathDepth components
// or MaxPathBytes bytes.
func (s *Sandbox) checkBounds(op sandbox.Op, display string, comps, bytes int, what string) error {
	if d := s.maxPathDepth(); comps > d {
		return &sandbox.PathError{Op: op, Path: clipDisplay(display), Err: sandbox.ErrTooDeep,
			Reason: fmt.Sprintf("%s %s components, over the bound of %s (setting sandbox.maxPathDepth)", what, commas(int64(comps)), commas(int64(d)))}
	}
	if b := s.maxPathBytes(); bytes > b {
		return &sandbox.PathError{Op: op, Path: clipDisplay(display), Err: sandbox.ErrTooDeep,
			Reason: fmt.Sprintf("%s %s bytes, over the bound of %s (setting sandbox.maxPathBytes)", what, commas(int64(bytes)), commas(int64(b)))}
	}
	return nil
}

// clipDisplay keeps an error about a huge path readable: its first and
// last 100 bytes.
func clipDisplay(p string) string {
	if len(p) <= 240 {
		return p
	}
	head, tail := p[:100], p[len(p)-100:]
	return head + fmt.Sprintf("…(%s bytes)…", commas(int64(len(p)-200))) + tail
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

// openDirBeneath opens the directory at real, a workspace-relative path
// that held no link when a walk found it, for reading its entries,
// without following any link on the way: on linux one openat2(2) with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS from the
// root's descriptor (the kernel refuses any link and any escape); where
// openat2 is missing or refused, one component at a time with O_NOFOLLOW.
// A link swapped in anywhere on the way fails it (the caller skips the
// directory).
func (s *Sandbox) openDirBeneath(real string) (*os.File, error) {
	if f, ok, err := s.openBeneathFast(real); ok {
		return f, err
	}
	d := s.rootFd
	var held []dirH
	defer func() {
		for _, h := range held {
			closeDir(h)
		}
	}()
	comps := splitRel(real)
	for i, c := range comps {
		if i == len(comps)-1 {
			break
		}
		next, err := openDirAt(d, c)
		if err != nil {
			return nil, err
		}
		held = append(held, next)
		d = next
	}
	name := "."
	if len(comps) > 0 {
		name = comps[len(comps)-1]
	}
	f, st, err := openFileAt(d, name)
	if err != nil {
		return nil, err
	}
	if !st.mode.IsDir() {
		f.Close()
		return nil, syscall.ENOTDIR
	}
	return f, nil
}
