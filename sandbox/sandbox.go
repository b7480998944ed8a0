package sandbox

import (
	"context"
	"errors"
	"io"
	"time"
)

// Kind names a sandbox implementation (the seed's SandboxType).
type Kind string

// Known kinds. KindLocal and KindE2B have adapters; KindDaytona returns ErrUnavailable.
const (
	KindLocal   Kind = "local"
	KindDaytona Kind = "daytona"
	KindE2B     Kind = "e2b"
)

// Kinds lists every known kind, runnable or not.
var Kinds = []Kind{KindLocal, KindDaytona, KindE2B}

// Op names one operation of the interface, for capability checks.
type Op string

// The six operations of the seed's ISandbox.
const (
	OpList   Op = "list"
	OpRead   Op = "read"
	OpWrite  Op = "write"
	OpEdit   Op = "edit"
	OpSearch Op = "search"
	OpExec   Op = "exec"
)

// Errors adapters return, wrapped with %w (inspect with errors.Is).
var (
	// ErrUnavailable: the kind is known but has no runnable adapter here.
	ErrUnavailable = errors.New("sandbox kind unavailable")
	// ErrUnknownKind: the kind is not one of Kinds.
	ErrUnknownKind = errors.New("unknown sandbox kind")
	// ErrUnsupported: this adapter does not offer the operation.
	ErrUnsupported = errors.New("operation not supported by this sandbox")
	// ErrOutsideWorkspace: the path resolves outside the workspace (via
	// "..", an absolute path or a symlink). Authorization stage.
	ErrOutsideWorkspace = errors.New("path resolves outside the workspace")
	// ErrNotFound: the path does not exist (also matches fs.ErrNotExist).
	ErrNotFound = errors.New("no such file or directory")
	// ErrIsDir / ErrNotDir: the path is of the wrong type for the operation.
	ErrIsDir  = errors.New("is a directory")
	ErrNotDir = errors.New("not a directory")
	// ErrStale: Edit's ExpectedSHA256 no longer matches the file on disk.
	// Verification stage.
	ErrStale = errors.New("file changed on disk since it was read")
	// ErrChanged: another process replaced or removed the path (or a link
	// in it) while the operation ran, e.g. between its check and its
	// effect. PathError.Reason says what changed at which step and what
	// became of the operation ("nothing was written"). Execution stage;
	// retrying after a look at the path is safe.
	ErrChanged = errors.New("the path was changed by another process during the operation")
	// ErrNoMatch, ErrAmbiguous, ErrNoOp, ErrEmptyOld: Edit could not apply a
	// replacement. Parameters stage. See EditError for details.
	ErrNoMatch   = errors.New("old_string not found")
	ErrAmbiguous = errors.New("old_string matches more than once")
	ErrNoOp      = errors.New("old_string equals new_string")
	ErrEmptyOld  = errors.New("old_string is empty")
	// ErrEncoding: Edit's new text has a character the file's encoding
	// (GB18030, Shift_JIS, windows-1252, ...) cannot hold. Parameters
	// stage; nothing is written.
	ErrEncoding = errors.New("new_string cannot be written in the file's encoding")
	// ErrBadPattern: a glob or regular expression does not compile.
	// Parameters stage.
	ErrBadPattern = errors.New("invalid pattern")
	// ErrDenied: the object a path leads to (its real path, every link
	// followed, as found when it was opened) is denied by the request's
	// [Deny] rule. PathError.Reason names the rule and the real path.
	// Authorization stage; nothing was read or written.
	ErrDenied = errors.New("path is denied by a rule")
	// ErrSpecialFile: the path is a named pipe (FIFO), socket or device,
	// which the file operations never open for content (a FIFO's open or
	// read blocks, a device's read may never end or have side effects).
	// Found without blocking; PathError.Reason names what it is.
	// Authorization stage.
	ErrSpecialFile = errors.New("not a regular file or directory")
	// ErrTooDeep: the path, or what its links expand to, has more
	// components or bytes than the adapter resolves (a default like 256
	// components, 4,096 bytes; PathError.Reason names the bound and the
	// setting). Parameters stage; nothing was touched.
	ErrTooDeep = errors.New("path too deep or too long")
	// ErrConfinement: the configured OS confinement of commands cannot be
	// enforced on this machine (no user namespaces, an init binary
	// missing, an old kernel), so nothing runs: commands are never run
	// with a weaker confinement than configured. The wrapped error names
	// the missing piece and the fix. Authorization stage.
	ErrConfinement = errors.New("the configured confinement cannot be enforced")
)

// Deny decides whether the file operations may touch an object, given its
// real path: slash-separated, relative to the workspace root ("." for the
// root), every symlink followed, as the adapter found it when it opened the
// object (or, for a write, the name the new content is renamed onto). It
// returns the rule that denies the object and true, or "" and false to
// allow it. Adapters call it on what they actually opened, before any of
// its bytes are read or written, and on every entry a walk (List, Search)
// reports or enters, so a name swapped between a caller's check and the
// open cannot bring a denied object in (issue 11); a denied object fails
// with ErrDenied (a walk leaves it out). A nil Deny allows everything. It
// must be safe for concurrent use and cheap: a walk calls it once per
// entry.
type Deny func(real string) (rule string, denied bool)

// OpChecker is an optional interface of a [Sandbox]: CheckOp says why op
// cannot run as configured (an error wrapping ErrConfinement, for example),
// or nil when it can. Supports(op) is false exactly when CheckOp(op) is
// not nil; package capability shows the error as the exclusion's reason.
type OpChecker interface {
	CheckOp(op Op) error
}

// Confinement is what the OS confinement of Exec enforces, for tool
// descriptions and `aibuddy tools`.
type Confinement struct {
	Driver      string   `json:"driver,omitempty"`      // e.g. "linux-namespaces"; empty when off
	Mode        string   `json:"mode"`                  // "workspace-write", "read-only" or "off"
	Network     string   `json:"network"`               // "off", "limited" or "on"
	Enforced    bool     `json:"enforced"`              // every rule holds
	Unavailable string   `json:"unavailable,omitempty"` // why the configured confinement cannot be enforced, and the fix
	Layers      []string `json:"layers,omitempty"`      // the mechanisms in force
	Rules       []string `json:"rules,omitempty"`       // one line per rule, naming its setting
	Summary     string   `json:"-"`                     // one paragraph for a tool description
}

// ConfinementReporter is an optional interface of a [Sandbox] that
// confines the commands it runs.
type ConfinementReporter interface {
	Confinement() Confinement
}

// PathError is an error about one path, with the path as the caller gave it
// and, for confinement failures, how it escaped ("via symlink leak").
type PathError struct {
	Op     Op
	Path   string // as requested, workspace-relative
	Reason string // human detail, e.g. "via symlink leak -> /elsewhere"; may be empty
	Err    error  // one of the Err* sentinels, or an OS error
}

func (e *PathError) Error() string {
	s := string(e.Op) + " " + e.Path + ": " + e.Err.Error()
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

func (e *PathError) Unwrap() error { return e.Err }

// DeniedError is the Err of a *PathError when a [Deny] rule refused the
// object: the rule and the real path it judged. It matches ErrDenied.
type DeniedError struct {
	Rule string // as Deny returned it, e.g. ".env"
	Real string // workspace-relative, every link followed
}

func (e *DeniedError) Error() string { return ErrDenied.Error() }
func (e *DeniedError) Unwrap() error { return ErrDenied }

// EditError details a failed replacement: which one (0-based index into
// EditRequest.Edits), how many matches there were and on which lines, and
// the closest candidate lines when there was none.
type EditError struct {
	Index   int
	Matches int
	// MatchLines are the 1-based lines where the matches of an ambiguous
	// old string start, in order (a line holding two matches is named
	// twice); at most the first 100 when there are more (Matches counts
	// them all).
	MatchLines []int
	Candidates []string // e.g. "lines 2-3 match if whitespace is ignored; the file indents with TAB"
	Err        error    // ErrNoMatch, ErrAmbiguous, ErrNoOp, ErrEmptyOld or ErrEncoding
}

func (e *EditError) Error() string { return e.Err.Error() }
func (e *EditError) Unwrap() error { return e.Err }

// PathResolver is an optional interface of a [Sandbox]. ResolvePath maps a
// request path (relative to the workspace or absolute inside it) to where
// it really points: a slash-separated path relative to the workspace root
// ("." for the root) with every symlink followed; a part that does not
// exist yet resolves lexically. Errors are *PathError (an escape wraps
// ErrOutsideWorkspace). It answers for the moment it is asked: a rule that
// must hold for the object an operation opens belongs in the request's
// [Deny], which the adapter applies to what it actually opened.
type PathResolver interface {
	ResolvePath(ctx context.Context, p string) (string, error)
}

// Sandbox is the host boundary of one workspace. Implementations are safe for
// concurrent use. Every method stops early when ctx is done and then returns
// an error wrapping ctx.Err() (or, for walks, a Partial result).
type Sandbox interface {
	// Kind names the adapter.
	Kind() Kind
	// Workspace describes the root for display, e.g. a local folder path.
	Workspace() string
	// Supports reports whether the adapter offers op.
	Supports(op Op) bool

	// List returns the entries under a directory, bounded.
	List(ctx context.Context, req ListRequest) (*ListResult, error)
	// Read returns a bounded window of a file.
	Read(ctx context.Context, req ReadRequest) (*ReadResult, error)
	// Write replaces or creates a file atomically.
	Write(ctx context.Context, req WriteRequest) (*WriteResult, error)
	// Edit applies exact string replacements, all or nothing.
	Edit(ctx context.Context, req EditRequest) (*EditResult, error)
	// Search finds files by glob or lines by regular expression, bounded.
	Search(ctx context.Context, req SearchRequest) (*SearchResult, error)
	// Exec runs a shell command in the workspace, streaming its output.
	Exec(ctx context.Context, req ExecRequest) (*ExecResult, error)

	// Close releases the sandbox's resources.
	Close() error
}

// EntryType is the type of a directory entry.
type EntryType string

// Entry types. A symlink is reported as a symlink, never followed by List.
const (
	TypeFile    EntryType = "file"
	TypeDir     EntryType = "dir"
	TypeSymlink EntryType = "symlink"
	TypeOther   EntryType = "other"
)

// Entry is one directory entry.
type Entry struct {
	Path    string    // slash-separated, relative to the workspace root
	Type    EntryType //
	Size    int64     // bytes; 0 for directories
	ModTime time.Time //
}

// ListRequest asks for a directory's entries.
type ListRequest struct {
	Path          string // directory; "" or "." is the root
	Depth         int    // levels to descend; 0 or 1 means direct children only
	MaxEntries    int    // stop after this many entries; 0 means the adapter default (1,000)
	IncludeHidden bool   // include dot-entries (".git" is never descended)
	// Deny, when set, is applied to the listed directory's real path
	// (ErrDenied) and to each entry's; a denied entry is left out and not
	// descended.
	Deny Deny
}

// ListResult holds entries sorted by path (directories before their
// contents).
type ListResult struct {
	Entries   []Entry
	Truncated bool // MaxEntries was reached; more entries exist
	Partial   bool // ctx's deadline stopped the walk early
	Skipped   int  // hidden entries left out because IncludeHidden was false
}

// ReadRequest asks for a window of lines of a text file.
type ReadRequest struct {
	Path          string
	Offset        int   // first line to return, 1-based; 0 means 1
	Limit         int   // lines to return; 0 means the adapter default (2,000)
	MaxLineChars  int   // characters kept per line; 0 means the adapter default (2,000)
	MaxBytes      int64 // bytes of line text returned in all; 0 means the adapter default (256 KiB)
	MaxImageBytes int64 // largest image returned as data; 0 means the adapter default (5 MiB)
	// Deny, when set, is applied to the real path of the file opened;
	// a denied one fails with ErrDenied before any byte is read.
	Deny Deny
}

// ContentKind says what a file holds.
type ContentKind string

// File content kinds.
const (
	KindText   ContentKind = "text"
	KindBinary ContentKind = "binary"
	KindImage  ContentKind = "image"
)

// Line is one line of a text window, without its line ending.
type Line struct {
	Number int    // 1-based
	Text   string // at most MaxLineChars characters
	Chars  int    // characters in the whole line (> len(Text) in runes when cut)
}

// ReadResult is a window of a file. For text, Lines holds the window; for an
// image within MaxImageBytes, Data holds its bytes; for binary (or an image
// over the limit), neither is set and Description says what it is.
type ReadResult struct {
	Path     string
	Kind     ContentKind
	MIMEType string // detected, e.g. "text/plain; charset=utf-8", "image/png"
	Encoding string // text encoding: "utf-8", or e.g. "gb18030", "utf-16le", "windows-1252"; "utf-8 (...)"/"unknown (...)" when bytes are shown as \xNN
	BOM      bool   // the file starts with a UTF-8 byte order mark (not shown in Lines)
	// Undecodable counts the bytes of a converted encoding (UTF-16) in the
	// part read that could not be decoded and are shown as U+FFFD: an
	// unpaired surrogate's two bytes, an odd final byte (case BH-097).
	// 0 for UTF-8, where such bytes are shown as \xNN instead.
	Undecodable int64
	Size        int64     // bytes
	ModTime     time.Time //
	SHA256      string    // hex digest of the file's first HashedBytes bytes as read
	// HashedBytes is how many bytes, from the start of the file, SHA256
	// covers: Size, unless the file is larger than the adapter's read
	// bound (a default like 64 MiB); then Truncated is set.
	HashedBytes int64
	// Truncated: Read stopped at the adapter's read bound before the end
	// of the file. SHA256, Lines and TotalLines (then -1) cover only the
	// first HashedBytes bytes; a line cut by the bound is not returned,
	// and More is false (lines past the bound cannot be read this way).
	Truncated   bool
	Lines       []Line // the window, for text
	More        bool   // lines exist after the window
	NextOffset  int    // the Offset that continues after the window, when More
	TotalLines  int    // lines in the file, or -1 when not counted
	Data        []byte // image bytes
	Description string // for binary/oversized: e.g. "ELF executable, 65,544 bytes"
}

// WriteRequest replaces or creates a file.
type WriteRequest struct {
	Path    string
	Content []byte
	// NoCreateParents refuses to create missing parent directories
	// (they are created, inside the workspace only, by default).
	NoCreateParents bool
	// Deny, when set, is applied to the real path the content is renamed
	// onto (a final link followed), before any directory is created or
	// byte written; a denied one fails with ErrDenied.
	Deny Deny
}

// WriteResult is the evidence of a write, read back from disk.
type WriteResult struct {
	Path    string
	Bytes   int64  // bytes on disk after the write
	SHA256  string // hex digest read back from disk
	Created bool   // the file did not exist before
}

// Replacement is one exact string replacement. New is literal text: no
// template tokens ($1, $&) are expanded.
type Replacement struct {
	Old        string
	New        string
	ReplaceAll bool // replace every occurrence; otherwise Old must occur once
}

// EditRequest applies Edits in order to one file, all or nothing.
type EditRequest struct {
	Path  string
	Edits []Replacement
	// ExpectedSHA256, when set, must equal the file's current digest, or
	// the edit fails with ErrStale and the file is untouched.
	ExpectedSHA256 string
	// Deny, when set, is applied to the real path of the file opened
	// (read and replaced as that one object); a denied one fails with
	// ErrDenied before any byte is read.
	Deny Deny
}

// EditResult is the evidence of an edit, read back from disk.
type EditResult struct {
	Path         string
	Replacements int    // occurrences replaced in all
	Bytes        int64  // file size after the edit
	SHA256       string // hex digest read back from disk
	// Region is the edited region as it now is on disk, with a few lines
	// of context: StartLine..EndLine (1-based, inclusive).
	Region    []Line
	StartLine int
	EndLine   int
}

// SearchMode chooses between finding files and finding lines.
type SearchMode string

// Search modes.
const (
	ModeGlob SearchMode = "glob" // Pattern is a doublestar glob matched against paths
	ModeGrep SearchMode = "grep" // Pattern is an RE2 regular expression (or literal text)
)

// SearchRequest asks for files (glob) or matching lines (grep).
type SearchRequest struct {
	Mode    SearchMode
	Pattern string
	Path    string   // directory or file to search; "" is the root
	Include []string // doublestar globs a file's path must match (any), relative to Path
	Exclude []string // doublestar globs that exclude files or directories
	// Literal treats Pattern as plain text (grep only).
	Literal bool
	// IgnoreCase matches case-insensitively.
	IgnoreCase bool
	// IncludeHidden descends into dot-directories (".git" never).
	IncludeHidden bool
	// NoIgnore disables .gitignore handling.
	NoIgnore bool
	// MaxResults bounds files (glob) or matches (grep); 0 means 100.
	MaxResults int
	// MaxLineChars bounds the characters kept around a match; 0 means 400.
	MaxLineChars int
	// ContextLines is lines of context before and after each match (grep).
	ContextLines int
	// Deny, when set, is applied to the real path of Path (ErrDenied) and
	// to every entry the walk meets (the target of a followed link
	// included); a denied file is never listed or opened, a denied
	// directory never entered.
	Deny Deny
}

// Match is one matching line.
type Match struct {
	Path  string // workspace-relative
	Line  int    // 1-based
	Text  string // the line, clipped to a window around the match
	Chars int    // characters in the whole line
	// TextStart is the characters of the line before Text: 0 unless the
	// window around the match was cut at the start.
	TextStart int
	Before    []Line // context lines before
	After     []Line // context lines after
}

// FileHit is one file found by glob (or a file with grep matches).
type FileHit struct {
	Path    string
	ModTime time.Time
}

// SearchResult holds what was found, newest files first.
type SearchResult struct {
	Files         []FileHit // glob: the files; grep: files with matches
	Matches       []Match   // grep only
	Truncated     bool      // MaxResults was reached; more exist
	Partial       bool      // ctx's deadline stopped the walk early
	FilesSearched int       // files opened (grep) or tested (glob)
	SkippedHidden []string  // hidden directories not descended (workspace-relative)
	// Total counts everything that matched: files (glob) or matching lines
	// (grep), at least len(Files) / len(Matches); exact unless Partial.
	Total int
	// SkippedHiddenFiles counts dot-files left out because IncludeHidden
	// was false.
	SkippedHiddenFiles int
	// SkippedBinary counts files grep left out because they look binary.
	SkippedBinary int
	// Ignored counts files and directories pruned by .gitignore rules (a
	// pruned directory counts once, its contents not at all).
	Ignored int
}

// ExecRequest runs Command with /bin/sh -c (or the adapter's shell).
type ExecRequest struct {
	Command string
	Dir     string        // working directory, workspace-relative; "" is the root
	Timeout time.Duration // 0 means no timeout beyond ctx
	// Env is the complete environment of the command as KEY=VALUE; nil
	// means the adapter's safe default (not the host's environment).
	Env []string
	// Stdout and Stderr receive output chunks as they are produced. Either
	// may be nil (output discarded). The adapter never buffers the whole
	// output: bounding is the writer's job.
	Stdout io.Writer
	Stderr io.Writer
	// Started, when set, is called once when the command has started and
	// before any output is written, with its process id on the adapter's
	// machine (the shell's; under the OS confinement the sandbox init's,
	// whose end takes every process of the command with it). Adapters
	// without a process id to give pass 0 or never call it. For the
	// record of background jobs (package jobs).
	Started func(pid int)
	// Stdin is the command's standard input, read to its end (or until
	// the command stops reading) while it runs; nil is the null device
	// (a prompt for input fails at once). Hooks pass their JSON input
	// here (package hooks). An adapter that cannot feed a command's input
	// fails the call with ErrUnsupported rather than run it without.
	Stdin io.Reader
}

// ExecResult describes how a command ended.
type ExecResult struct {
	ExitCode  int           // -1 when killed by a signal
	TimedOut  bool          // stopped by Timeout
	Cancelled bool          // stopped because ctx was done
	Duration  time.Duration // wall time from start to end of output
	// Lingering is true when descendants still held the output open after
	// the shell exited and were stopped after the drain grace.
	Lingering bool
	// Escaped counts descendants that had left the command's process group
	// (setsid, daemonizing) and were stopped at the end of the call; 0 where
	// the adapter cannot find them.
	Escaped int
	// Denied are what the OS confinement refused during the call, each
	// one sentence naming the rule and its setting: the egress proxy's
	// refusals exactly, file and network denials as the command's error
	// output shows them. Empty when unconfined or nothing was refused.
	Denied []string
}
