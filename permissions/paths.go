package permissions

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// PathPattern is one path rule: a gitignore-style glob (doublestar
// syntax: "*" within one path segment, "**" across segments, "?", "[...]",
// "{a,b}") over the paths below Base. A pattern with no "/" other than a
// trailing one matches at any depth below Base (".env", "*.pem"); one with
// a "/" is anchored at Base ("secrets/**", "src/*.go"). A path also matches
// when one of its ancestors does, as in gitignore: "secrets" covers
// "secrets/a/b.txt".
type PathPattern struct {
	// Base is the absolute, cleaned folder the pattern is relative to
	// ("/" for an absolute pattern or one that holds anywhere).
	Base string
	// Glob is the pattern relative to Base, without a leading "/".
	Glob string
	// Text is the pattern as written, for messages.
	Text string
	// any is set when Glob is "**/X" with X a single component without
	// "**": the pattern then holds for a path one of whose components
	// matches X, which Match tests per component (a walk calls Match for
	// every entry it meets).
	any *componentGlob
}

// Match reports whether the absolute, cleaned path abs is matched.
func (p PathPattern) Match(abs string) bool {
	rel, ok := below(p.Base, abs)
	if !ok {
		return false
	}
	if rel == "" {
		return p.Glob == "**"
	}
	if p.any != nil {
		for c := rel; ; {
			i := strings.IndexByte(c, '/')
			if i < 0 {
				return p.any.match(c)
			}
			if p.any.match(c[:i]) {
				return true
			}
			c = c[i+1:]
		}
	}
	// The path itself or any ancestor below Base.
	for {
		if ok, _ := doublestar.Match(p.Glob, rel); ok {
			return true
		}
		i := strings.LastIndexByte(rel, '/')
		if i < 0 {
			return false
		}
		rel = rel[:i]
	}
}

// below returns abs relative to base (slash-separated, "" for base itself)
// and whether abs is base or inside it.
func below(base, abs string) (string, bool) {
	if base == "/" {
		return strings.TrimPrefix(abs, "/"), strings.HasPrefix(abs, "/")
	}
	if abs == base {
		return "", true
	}
	rest, ok := strings.CutPrefix(abs, base+"/")
	return rest, ok
}

// pathContext is what relative forms in a rule are relative to.
type pathContext struct {
	workspace   string // absolute: bare and "./" patterns
	settingsDir string // absolute: "/path" patterns (Claude Code: relative to the settings file)
	home        string // absolute: "~/" patterns
}

// newPattern makes the pattern of a Read/Edit rule specifier in Claude
// Code's forms: "//abs/path" (from the filesystem root), "~/path" (from
// the home folder), "/path" (from the settings file's folder), "./path"
// or "path" (from the workspace, gitignore rules: no inner "/" means any
// depth).
func newPattern(spec string, pc pathContext) (PathPattern, error) {
	p := strings.TrimSpace(filepath.ToSlash(spec))
	if p == "" {
		return PathPattern{}, fmt.Errorf("empty path pattern")
	}
	text := p
	var base string
	anchored := false
	switch {
	case strings.HasPrefix(p, "//"):
		base, p, anchored = "/", strings.TrimLeft(p, "/"), true
	case p == "~" || strings.HasPrefix(p, "~/"):
		base, p, anchored = pc.home, strings.TrimPrefix(strings.TrimPrefix(p, "~"), "/"), true
	case strings.HasPrefix(p, "/"):
		base, p, anchored = pc.settingsDir, strings.TrimLeft(p, "/"), true
	default:
		base = pc.workspace
		p = strings.TrimPrefix(p, "./")
	}
	return finishPattern(base, p, anchored, text)
}

// newLegacyPattern makes the pattern of one approval.deniedPaths entry,
// keeping its meaning from before the permissions block: a name without
// "/" (".env", "*.pem") matches that component anywhere, also outside
// the workspace; "/abs" is absolute; "~/" is the home folder; any other
// pattern with a "/" is anchored at the workspace.
func newLegacyPattern(spec string, pc pathContext) (PathPattern, error) {
	p := strings.TrimSpace(filepath.ToSlash(spec))
	if p == "" {
		return PathPattern{}, fmt.Errorf("empty path pattern")
	}
	text := p
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		return finishPattern(pc.home, strings.TrimPrefix(strings.TrimPrefix(p, "~"), "/"), true, text)
	case strings.HasPrefix(p, "/"):
		return finishPattern("/", strings.TrimLeft(p, "/"), true, text)
	case !strings.Contains(strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/"), "/"):
		return finishPattern("/", strings.TrimPrefix(p, "./"), false, text)
	}
	return finishPattern(pc.workspace, strings.TrimPrefix(p, "./"), true, text)
}

func finishPattern(base, p string, anchored bool, text string) (PathPattern, error) {
	p = strings.TrimSuffix(p, "/")
	if !anchored && !strings.Contains(p, "/") && p != "**" {
		p = "**/" + p
	}
	if p == "" {
		p = "**"
	}
	if base == "" {
		return PathPattern{}, fmt.Errorf("pattern %q needs a folder to be relative to, and none is known", text)
	}
	if !doublestar.ValidatePattern(p) {
		return PathPattern{}, fmt.Errorf("pattern %q is not a valid glob", text)
	}
	pp := PathPattern{Base: path.Clean(filepath.ToSlash(base)), Glob: p, Text: text}
	if x, ok := strings.CutPrefix(p, "**/"); ok && !strings.Contains(x, "/") && !strings.Contains(x, "**") {
		pp.any = newComponentGlob(x)
	}
	return pp, nil
}

// componentGlob is a doublestar pattern for one path component, with the
// usual shapes of a denied name compared directly: '=' a plain name, '*'
// "*LIT", '^' "LIT*" (LIT without metacharacters), 0 anything else
// (doublestar.Match).
type componentGlob struct {
	pat   string
	shape byte
	lit   string
}

func newComponentGlob(pat string) *componentGlob {
	meta := func(s string) bool { return strings.ContainsAny(s, `*?[]{}\`) }
	switch {
	case !meta(pat):
		return &componentGlob{pat: pat, shape: '=', lit: pat}
	case len(pat) > 1 && pat[0] == '*' && !meta(pat[1:]):
		return &componentGlob{pat: pat, shape: '*', lit: pat[1:]}
	case len(pat) > 1 && pat[len(pat)-1] == '*' && !meta(pat[:len(pat)-1]):
		return &componentGlob{pat: pat, shape: '^', lit: pat[:len(pat)-1]}
	}
	return &componentGlob{pat: pat}
}

// match is doublestar.Match(g.pat, c) for one component c.
func (g *componentGlob) match(c string) bool {
	switch g.shape {
	case '=':
		return c == g.lit
	case '*':
		return strings.HasSuffix(c, g.lit)
	case '^':
		return strings.HasPrefix(c, g.lit)
	}
	ok, _ := doublestar.Match(g.pat, c)
	return ok
}

// PathRules is a compiled list of path patterns with the workspace that
// relative paths are resolved against: the one matcher of denied paths
// that the approval gate and the file tools share (issue 11: "Denied-path
// matching is written twice, differently").
type PathRules struct {
	workspace string
	rules     []pathRule
}

type pathRule struct {
	pat  PathPattern
	name string // the rule that holds it, e.g. `permissions.deny[0] "Read(.env)"`
	read bool   // covers reading, listing and searching
	edit bool   // covers writing and editing
}

// Empty reports whether no pattern is held (r may be nil).
func (r *PathRules) Empty() bool { return r == nil || len(r.rules) == 0 }

// Match reports the first rule that p names: p is relative to the
// workspace or absolute, slash- or OS-separated; write selects the rules
// that cover writing (Edit) instead of reading (Read). The rule names the
// settings entry, e.g. `approval.deniedPaths[0] ".env"`.
func (r *PathRules) Match(p string, write bool) (rule string, ok bool) {
	if r.Empty() || strings.TrimSpace(p) == "" {
		return "", false
	}
	abs := absPath(r.workspace, p)
	for _, pr := range r.rules {
		if (write && !pr.edit) || (!write && !pr.read) {
			continue
		}
		if pr.pat.Match(abs) {
			return pr.name, true
		}
	}
	return "", false
}

// absPath resolves p (relative to ws, or absolute) to a clean absolute
// slash path.
func absPath(ws, p string) string {
	p = filepath.ToSlash(strings.TrimSpace(p))
	if !path.IsAbs(p) {
		p = path.Join(ws, p)
	}
	return path.Clean(p)
}

func cleanAbs(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	return path.Clean(filepath.ToSlash(p))
}

// inside reports whether abs is dir or below it.
func inside(dir, abs string) bool {
	if dir == "" {
		return false
	}
	_, ok := below(dir, abs)
	return ok
}
