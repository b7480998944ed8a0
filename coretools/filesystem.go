package coretools

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/permissions"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// FSOptions bounds the filesystem tools. A nil *FSOptions means the
// defaults; a zero or negative field means that field's default.
type FSOptions struct {
	// LsMaxEntries is the most entries one ls call returns (and the largest
	// max_entries a call may ask for). Default 1,000 entries.
	LsMaxEntries int
	// LsMaxDepth is the deepest ls may descend (depth 1 = direct children).
	// Default 5 levels.
	LsMaxDepth int
	// ReadMaxLines is the most lines one read_file call returns (and the
	// largest limit a call may ask for). Default 2,000 lines.
	ReadMaxLines int
	// ReadMaxLineChars is the characters (runes) kept of one line; the
	// rest is cut with a marker (case BH-014). Default 2,000 characters.
	ReadMaxLineChars int
	// ReadMaxBytes is the bytes of line text one read_file call returns in
	// all; the window stops before the line that would pass it. Default
	// 256 KiB (262,144 bytes). With the default MaxOutputChars the
	// character bound comes first for all but very short lines.
	ReadMaxBytes int64
	// ReadMaxImageBytes is the largest image, in raw bytes, that read_file
	// returns as an image block; a larger one is a text error with its size
	// and dimensions (case BH-013). Default 3,932,160 bytes (3.75 MiB):
	// Anthropic's per-image limit is 5 MiB of base64, and base64 is 4/3 of
	// the raw size, so 3.75 MiB raw is the largest image that fits.
	ReadMaxImageBytes int64
	// SearchMaxResults is the most files (glob) or matches (grep) one call
	// returns (and the largest max_results a call may ask for). Default 100.
	SearchMaxResults int
	// SearchMaxLineChars is the characters (runes) of a matching line kept
	// in a window around the match (case BH-019). Default 400 characters.
	SearchMaxLineChars int
	// SearchTimeout bounds one ls, glob or grep walk: at this deadline the
	// walk stops and the tool returns what it found, marked partial (case
	// BH-018). Default 10 s.
	SearchTimeout time.Duration
	// MaxOutputChars bounds the text of one ls, glob, grep or read_file
	// result in characters (runes), notes and line-number prefixes
	// included: listings stop with a marker, and a read_file window stops
	// before the first line that would pass it (with the offset that
	// continues), so the result bound (limits.resultMaxChars, which the CLI
	// sets it to) never cuts a file tool's result in its middle. Default
	// 30,000 characters (the seed's output cap).
	MaxOutputChars int
	// DeniedPaths are path patterns the file tools never touch (path.Match
	// syntax against the whole workspace-relative path and against each
	// component: ".env", ".env.*", "*.pem", "secrets/*"). read_file,
	// write_file, edit_file, ls, glob and grep naming one fail at the
	// Authorization stage; glob and grep over a folder skip matching files
	// and directories, so a denied file's name and content never reach the
	// model (case BH-059). The rules judge the name asked for and, through
	// sandbox.Deny in every request, the real path of what the sandbox
	// actually opened or a walk met (a link, a linked folder, a name
	// swapped between the two: issue 11). The shell is not bound by these
	// rules (see approval.Policy for execute). Default none. Matched by
	// permissions.LegacyPaths (the matcher the approval gate uses too).
	DeniedPaths []string
	// Permissions is the settings' permissions block: its deny rules for
	// Read (ls, read_file, glob, grep) and Edit (write_file, edit_file) are
	// checked like DeniedPaths, on the object actually opened.
	// SettingsDir is the settings file's folder ("/path" rules).
	Permissions *permissions.Settings
	SettingsDir string
	// Denied, when set, are the compiled denied paths
	// (permissions.Engine.DeniedPaths) and replace DeniedPaths and
	// Permissions.
	Denied *permissions.PathRules
}

// Defaults of FSOptions.
const (
	defaultLsMaxEntries       = 1000
	defaultLsMaxDepth         = 5
	defaultReadMaxLines       = 2000
	defaultReadMaxLineChars   = 2000
	defaultReadMaxBytes       = 256 << 10
	defaultReadMaxImageBytes  = 5 << 20 * 3 / 4
	defaultSearchMaxResults   = 100
	defaultSearchMaxLineChars = 400
	defaultSearchTimeout      = 10 * time.Second
	defaultMaxOutputChars     = 30000
)

// withDefaults returns a copy of o with every unset field at its default.
func (o *FSOptions) withDefaults() FSOptions {
	var r FSOptions
	if o != nil {
		r = *o
	}
	setInt := func(p *int, d int) {
		if *p <= 0 {
			*p = d
		}
	}
	setInt(&r.LsMaxEntries, defaultLsMaxEntries)
	setInt(&r.LsMaxDepth, defaultLsMaxDepth)
	setInt(&r.ReadMaxLines, defaultReadMaxLines)
	setInt(&r.ReadMaxLineChars, defaultReadMaxLineChars)
	setInt(&r.SearchMaxResults, defaultSearchMaxResults)
	setInt(&r.SearchMaxLineChars, defaultSearchMaxLineChars)
	setInt(&r.MaxOutputChars, defaultMaxOutputChars)
	if r.ReadMaxBytes <= 0 {
		r.ReadMaxBytes = defaultReadMaxBytes
	}
	if r.ReadMaxImageBytes <= 0 {
		r.ReadMaxImageBytes = defaultReadMaxImageBytes
	}
	if r.SearchTimeout <= 0 {
		r.SearchTimeout = defaultSearchTimeout
	}
	return r
}

// FilesystemToolNames are the names of the tools [Filesystem] returns, in
// the same order.
var FilesystemToolNames = []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep"}

// FilesystemInstructions are the filesystem group's runtime instructions for
// the system prompt (seed: "Each ServerToolConfig owns tool creation, runtime
// instructions, and result hooks").
const FilesystemInstructions = `Filesystem tools (ls, read_file, write_file, edit_file, glob, grep) work inside the workspace only; paths are relative to the workspace root, and a path that resolves outside it (through "..", an absolute path or a symlink) is refused.
- Find files with glob and content with grep before reading; both skip hidden directories and .gitignore'd files unless you set include_hidden or no_ignore, and they say when they did.
- read_file shows each line as "<line number>→<text>". The number and the arrow are not part of the file: never copy them into old_string. Tabs in the text are real tab characters.
- Every result is bounded and says when it stopped and how to get the rest (for read_file, the offset to continue from). Do not treat a truncated or partial result as complete.
- Read a file before editing it. edit_file replaces exact text: old_string must match the file byte for byte (whitespace and quotes included) and, unless replace_all is set, exactly once. If the file changed on disk since you last read it, the edit is refused: read it again first.
- Use write_file only to create a file or replace it entirely. After a change, check the region shown in the result (or read it again) before you call the task done.`

// Filesystem builds the filesystem group over sb: ls, read_file,
// write_file, edit_file, glob and grep, in that order (the order of
// [FilesystemToolNames]). opts may be nil for the defaults.
//
// Each call creates fresh per-run state: a read tracker that records, per
// workspace path, the SHA-256 seen by the last read_file, write_file or
// edit_file of this run. edit_file of a tracked file passes that digest to
// the sandbox (EditRequest.ExpectedSHA256), so an edit of a file changed on
// disk since it was last seen is refused at the Verification stage with the
// hint to read it again. A file never read in this run may be edited: the
// exact, unique match of old_string is its protection (a stale guess does not
// match), and the tool description says so.
func Filesystem(sb sandbox.Sandbox, opts *FSOptions) []*tool.Tool {
	f := &fsTools{sb: sb, opts: opts.withDefaults(), seen: map[string]string{}}
	if f.opts.Denied == nil && (len(f.opts.DeniedPaths) > 0 || f.opts.Permissions != nil) {
		ws := "/"
		if sb != nil && sb.Workspace() != "" {
			ws = sb.Workspace()
		}
		// The same engine the approval gate builds from the same
		// settings; an entry that does not compile is left out here, and
		// the gate refuses every call then (and the CLI refuses to start).
		eng, _ := permissions.New(permissions.Options{Settings: f.opts.Permissions, Workspace: ws,
			SettingsDir: f.opts.SettingsDir, DeniedPaths: f.opts.DeniedPaths, NoCredentialPaths: true})
		f.opts.Denied = eng.DeniedPaths()
	}
	return []*tool.Tool{
		f.lsTool(),
		f.readFileTool(),
		f.writeFileTool(),
		f.editFileTool(),
		f.globTool(),
		f.grepTool(),
	}
}

// fsTools is the per-run state shared by one group's tools.
type fsTools struct {
	sb   sandbox.Sandbox
	opts FSOptions

	mu   sync.Mutex
	seen map[string]string // workspace path key -> sha256 hex last seen by this run
}

// pathKey normalizes a requested path for the read tracker: slashes,
// cleaned, and an absolute path inside the workspace made relative. Two
// spellings of the same path ("./a.txt", "a.txt", "/ws/a.txt") share a key.
func (f *fsTools) pathKey(p string) string {
	p = filepath.ToSlash(p)
	if path.IsAbs(p) && f.sb != nil {
		if ws := strings.TrimSuffix(filepath.ToSlash(f.sb.Workspace()), "/"); ws != "" {
			if p == ws {
				return "."
			}
			if rest, ok := strings.CutPrefix(p, ws+"/"); ok {
				p = rest
			}
		}
	}
	if p == "" {
		return "."
	}
	return path.Clean(p)
}

// remember records sha as the digest this run last saw for each of paths.
func (f *fsTools) remember(sha string, paths ...string) {
	if sha == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		if p != "" {
			f.seen[f.pathKey(p)] = sha
		}
	}
}

// lastSeen returns the digest this run last saw for p, if any.
func (f *fsTools) lastSeen(p string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sha, ok := f.seen[f.pathKey(p)]
	return sha, ok
}

// walkContext bounds a walk by SearchTimeout. timedOut reports whether that
// deadline (and not the caller's) stopped it.
func (f *fsTools) walkContext(ctx context.Context) (wctx context.Context, cancel context.CancelFunc, timedOut func() bool) {
	wctx, cancel = context.WithTimeout(ctx, f.opts.SearchTimeout)
	return wctx, cancel, func() bool { return wctx.Err() != nil && ctx.Err() == nil }
}

//go:embed descriptions/*.md
var descriptionFS embed.FS

// description renders descriptions/<name>.md with the group's options, so
// the numbers the model reads are the bounds in force. Templates use
// {{n .Field}} for a number with thousands separators.
func (f *fsTools) description(name string) string {
	raw, err := descriptionFS.ReadFile("descriptions/" + name + ".md")
	if err != nil {
		panic(fmt.Sprintf("coretools: missing description for %s: %v", name, err))
	}
	tmpl := template.Must(template.New(name).Funcs(template.FuncMap{
		"n":   func(v any) string { return fsCount(fsInt64(v)) },
		"dur": fsDuration,
	}).Parse(string(raw)))
	var b bytes.Buffer
	if err := tmpl.Execute(&b, f.opts); err != nil {
		panic(fmt.Sprintf("coretools: description for %s: %v", name, err))
	}
	return strings.TrimSpace(b.String())
}

func fsInt64(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	}
	panic(fmt.Sprintf("coretools: n of %T", v))
}

// readOnly and destructive are the MCP annotations of the group's tools.
func fsReadOnly(title string) *tool.Annotations {
	return &tool.Annotations{Title: title, ReadOnlyHint: true}
}

func fsDestructive(title string) *tool.Annotations {
	t := true
	return &tool.Annotations{Title: title, DestructiveHint: &t}
}

// fsCount formats n with thousands separators (golang.org/x/text/message, English): 65544 -> "65,544".
func fsCount(n int64) string { return thousands.Sprintf("%d", n) }

var thousands = message.NewPrinter(language.English)

// fsPlural returns "1 file" or "2 files".
func fsPlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fsCount(int64(n)) + " " + many
}

// fsDuration formats d for the model: "2 s", "1.5 s", "300 ms".
func fsDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	default:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
}

// fsClip keeps the first max runes of s. It reports whether it cut.
func fsClip(s string, max int) (string, bool) {
	if max <= 0 || len(s) <= max {
		return s, false
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i], true
		}
		n++
	}
	return s, false
}

// fsRunes counts the characters of s.
func fsRunes(s string) int { return utf8.RuneCountInString(s) }

// lineNumberPrefix is the read_file line prefix: the 1-based line number
// right-aligned in six columns, then U+2192 (→). The arrow is not
// whitespace, so the prefix can never be mistaken for indentation and the
// text after it is the line exactly as on disk, raw tabs included (case
// BH-002).
func lineNumberPrefix(n int) string {
	return fmt.Sprintf("%6d→", n)
}

// fsLimiter accumulates output text up to a bound in characters.
type fsLimiter struct {
	b     strings.Builder
	max   int
	chars int
	full  bool
}

// line appends s and a newline unless that would pass the bound; then it
// marks the limiter full and reports false.
func (l *fsLimiter) line(s string) bool {
	if l.full {
		return false
	}
	n := fsRunes(s) + 1
	if l.max > 0 && l.chars+n > l.max {
		l.full = true
		return false
	}
	l.b.WriteString(s)
	l.b.WriteByte('\n')
	l.chars += n
	return true
}

func (l *fsLimiter) String() string { return l.b.String() }

// checkDenied refuses a path whose name is denied to the file tools
// (FSOptions.DeniedPaths and the permissions block's Read/Edit deny
// rules), at the Authorization stage (case BH-059), before the sandbox is
// asked. It judges the name only: what the name leads to (a symlink to
// .env, through a linked folder) is judged by the sandbox on the object it
// opens, with [fsTools.deny] in the request, so a name swapped between
// this check and the open cannot bring a denied file in (issue 11).
func (f *fsTools) checkDenied(toolName, p string) error {
	if f.opts.Denied.Empty() {
		return nil
	}
	write := toolName == "write_file" || toolName == "edit_file"
	if pat, ok := fsDenied(f.opts.Denied, p, write); ok {
		return &tool.Error{Stage: tool.Authorization, Tool: toolName,
			Msg:  fmt.Sprintf("path %q is denied to the file tools by the rule %s", p, pat),
			Hint: hintDenied}
	}
	return nil
}

// deny is the sandbox.Deny of a file tool request: the denied-path rules
// (fsDenied) matched against the real path of what the sandbox opened or
// a walk met, for writing when write is set. nil when there are no rules.
func (f *fsTools) deny(write bool) sandbox.Deny {
	if f.opts.Denied.Empty() {
		return nil
	}
	d := f.opts.Denied
	return func(real string) (string, bool) { return d.Match(real, write) }
}

// fsDenied reports the first denied-path rule that p (slash or OS path,
// relative to the workspace or absolute) names, for reading or, with
// write, for writing: the one matcher of package permissions, which the
// approval gate uses too.
func fsDenied(d *permissions.PathRules, p string, write bool) (string, bool) {
	return d.Match(p, write)
}
