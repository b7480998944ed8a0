package coretools

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// globInput is the input of glob.
type globInput struct {
	Pattern       string `json:"pattern"`
	Path          string `json:"path"`
	IncludeHidden bool   `json:"include_hidden"`
	NoIgnore      bool   `json:"no_ignore"`
	MaxResults    int    `json:"max_results"`
}

const globSchema = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "Glob matched against paths relative to path: * within one segment, ** across directories, {a,b} alternatives, [abc] classes. Example: **/*.go"},
    "path": {"type": "string", "description": "Directory to search, relative to the workspace root. Default the root."},
    "include_hidden": {"type": "boolean", "description": "Also list files and descend into directories whose name starts with a dot (.git never). Default false."},
    "no_ignore": {"type": "boolean", "description": "Also search files and directories excluded by .gitignore. Default false."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Stop after this many files (default and maximum %d)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

func (f *fsTools) globTool() *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name:        "glob",
		Description: f.description("glob"),
		InputSchema: []byte(fmt.Sprintf(globSchema, f.opts.SearchMaxResults, f.opts.SearchMaxResults)),
		Annotations: fsReadOnly("Find files"),
		Handler:     f.glob,
		Access:      tool.PathAccess(tool.AccessRead, "path"),
	})
}

func (f *fsTools) glob(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[globInput](call)
	if err != nil {
		return nil, err
	}
	in.Path = fsPathArg(in.Path)
	maxResults := fsCapAt(in.MaxResults, f.opts.SearchMaxResults)
	res, err := f.search(ctx, "glob", sandbox.SearchRequest{
		Mode: sandbox.ModeGlob, Pattern: in.Pattern, Path: in.Path,
		IncludeHidden: in.IncludeHidden, NoIgnore: in.NoIgnore, MaxResults: maxResults,
	})
	if err != nil {
		return nil, err
	}
	out := fsLimiter{max: f.opts.MaxOutputChars}
	shown := 0
	for _, h := range res.Files {
		if !out.line(fsShowPath(h.Path)) {
			break
		}
		shown++
	}
	sum := searchSummary{
		what: "files", one: "file", found: len(res.Files), shown: shown, max: maxResults,
		outChars: f.opts.MaxOutputChars, timeout: f.opts.SearchTimeout, noIgnore: in.NoIgnore, res: res,
	}
	head := fmt.Sprintf("%s match %q under %s", fsPlural(len(res.Files), "file", "files"), in.Pattern, fsDisplayPath(in.Path))
	if len(res.Files) == 1 {
		head = fmt.Sprintf("1 file matches %q under %s", in.Pattern, fsDisplayPath(in.Path))
	}
	return tool.TextWith(sum.render(head, out.String()), sum.evidence()), nil
}

// search runs one bounded walk: the sandbox call under SearchTimeout. When
// the timeout (not the caller) stops it, the result is marked Partial and
// kept; only a walk that found nothing to return is an Execution error
// (case BH-018: never a bare "timeout" when there are results).
func (f *fsTools) search(ctx context.Context, name string, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
	if err := f.checkDenied(name, req.Path); err != nil {
		return nil, err
	}
	if err := f.refuseGitDir(ctx, name, req); err != nil {
		return nil, err
	}
	// Denied paths are never searched: the sandbox applies the rules to
	// the real path of every entry it meets, so their names are not
	// listed and their content never matched (BH-059), whatever name
	// leads to them.
	req.Deny = f.deny(false)
	wctx, cancel, timedOut := f.walkContext(ctx)
	defer cancel()
	res, err := f.sb.Search(wctx, req)
	if timedOut() {
		if res == nil {
			return nil, tool.Errorf(tool.Execution, "timed out after %s before any result came back", fsDuration(f.opts.SearchTimeout)).
				WithHint("narrow path or add a more specific pattern")
		}
		res.Partial = true
		return res, nil
	}
	if err != nil {
		return nil, fsError(err, name, req.Path)
	}
	return res, nil
}

// refuseGitDir refuses a search of .git, which grep and glob never search
// (their walks never enter it): a path in it (also through a symlink or
// ".."), or a glob or include pattern with a ".git" segment. Parameters
// stage, naming what to use instead.
func (f *fsTools) refuseGitDir(ctx context.Context, name string, req sandbox.SearchRequest) error {
	refuse := func(what string) error {
		return tool.Errorf(tool.Parameters, "%s never searches .git (the repository's own data: objects, refs, config); %s", name, what).
			WithHint("read one file in it with read_file, or use execute with git itself (git log, git grep, git config --list)")
	}
	inGit := func(p string) bool {
		return slices.Contains(strings.Split(path.Clean(filepath.ToSlash(p)), "/"), ".git")
	}
	if req.Path != "" {
		if inGit(req.Path) {
			return refuse(fmt.Sprintf("path %q is in it", req.Path))
		}
		if pr, ok := f.sb.(sandbox.PathResolver); ok {
			if real, err := pr.ResolvePath(ctx, req.Path); err == nil && inGit(real) {
				return refuse(fmt.Sprintf("path %q leads into it (%q)", req.Path, real))
			}
		}
	}
	pats := req.Include
	if req.Mode == sandbox.ModeGlob {
		pats = append([]string{req.Pattern}, pats...)
	}
	for _, p := range pats {
		for _, seg := range strings.Split(p, "/") {
			if strings.EqualFold(seg, ".git") {
				return refuse(fmt.Sprintf("the pattern %q names it", p))
			}
		}
	}
	return nil
}

// capAt returns asked when it is in 1..limit, else limit.
func fsCapAt(asked, limit int) int {
	if asked > 0 && asked < limit {
		return asked
	}
	return limit
}

func fsDisplayPath(p string) string {
	if p == "" {
		p = "."
	}
	return fmt.Sprintf("%q", p)
}

// searchSummary renders the notes shared by glob and grep: a head line with
// the count, then, each when it applies (cases BH-015, BH-018):
//
//   - "showing 100 of at least 101; narrow the pattern or path" (Truncated);
//   - "output cut at 30,000 characters after N of M ..." (the output bound);
//   - "timed out after 2 s; searched N files; results are partial; narrow
//     path or add a pattern" (Partial);
//   - "1 hidden directory (.github) was skipped; set include_hidden";
//   - on zero results without no_ignore, how many .gitignore'd paths were not
//     searched, so "0" never reads as a complete search when it was not.
type searchSummary struct {
	what, one string // "files"/"file" or "matches"/"match"
	found     int    // results the sandbox returned
	shown     int    // results in the output
	max       int    // the max_results in force
	outChars  int
	timeout   time.Duration
	noIgnore  bool
	res       *sandbox.SearchResult
}

// hiddenSkipped lists the skipped hidden directories that include_hidden
// would open (.git never is, so it is left out).
func (s *searchSummary) hiddenSkipped() []string {
	var out []string
	for _, d := range s.res.SkippedHidden {
		if path.Base(d) != ".git" {
			out = append(out, fsShowPath(d))
		}
	}
	return out
}

func (s *searchSummary) notes() []string {
	var notes []string
	if s.shown < s.found {
		notes = append(notes, fmt.Sprintf("output cut at %s characters after %s of %s; narrow the pattern or path",
			fsCount(int64(s.outChars)), fsCount(int64(s.shown)), fsPlural(s.found, s.one, s.what)))
	} else if s.res.Truncated {
		notes = append(notes, fmt.Sprintf("showing %s of at least %s; narrow the pattern or path",
			fsCount(int64(s.shown)), fsCount(int64(s.found+1))))
	}
	if s.res.Partial {
		notes = append(notes, fmt.Sprintf("timed out after %s; searched %s; results are partial; narrow path or add a pattern",
			fsDuration(s.timeout), fsPlural(s.res.FilesSearched, "file", "files")))
	}
	if hidden := s.hiddenSkipped(); len(hidden) > 0 {
		names := hidden
		more := ""
		if len(names) > 3 {
			more = fmt.Sprintf(" and %d more", len(names)-3)
			names = names[:3]
		}
		notes = append(notes, fmt.Sprintf("%s (%s%s) %s skipped; set include_hidden to search %s",
			fsPlural(len(hidden), "hidden directory", "hidden directories"), strings.Join(names, ", "), more,
			map[bool]string{true: "was", false: "were"}[len(hidden) == 1],
			map[bool]string{true: "it", false: "them"}[len(hidden) == 1]))
	}
	if s.found == 0 && s.res.SkippedHiddenFiles > 0 {
		segment := "a pattern segment" // glob
		if s.what == "matches" {
			segment = "an include glob segment" // grep: its pattern is a regexp
		}
		notes = append(notes, fmt.Sprintf("%s skipped; set include_hidden to search %s (or name them: %s that starts with \".\" matches hidden names)",
			fsPlural(s.res.SkippedHiddenFiles, "hidden file was", "hidden files were"),
			map[bool]string{true: "it", false: "them"}[s.res.SkippedHiddenFiles == 1], segment))
	}
	if s.found == 0 && s.res.SkippedBinary > 0 {
		notes = append(notes, fmt.Sprintf("%s not searched (a NUL byte in %s first 8 KiB); grep reads text only: search %s with execute (grep -a)",
			fsPlural(s.res.SkippedBinary, "binary file was", "binary files were"),
			map[bool]string{true: "its", false: "their"}[s.res.SkippedBinary == 1],
			map[bool]string{true: "it", false: "them"}[s.res.SkippedBinary == 1]))
	}
	if s.found == 0 && !s.noIgnore && s.res.Ignored > 0 {
		notes = append(notes, fmt.Sprintf("%s excluded by .gitignore %s not searched; set no_ignore to include them",
			fsPlural(s.res.Ignored, "path", "paths"), map[bool]string{true: "was", false: "were"}[s.res.Ignored == 1]))
	}
	if s.found == 0 && !s.res.Partial {
		notes = append(notes, fmt.Sprintf("searched %s", fsPlural(s.res.FilesSearched, "file", "files")))
	}
	return notes
}

// render puts the head line, the results and the notes together. With no
// results everything is one line: "0 matches ...; 1 hidden directory
// (.github) was skipped; set include_hidden to search it; ...".
func (s *searchSummary) render(head, body string) string {
	notes := s.notes()
	if s.found == 0 {
		return strings.Join(append([]string{head}, notes...), "; ")
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(body, "\n"))
	b.WriteString("\n\n")
	b.WriteString(head)
	b.WriteString(" (newest first)")
	for _, n := range notes {
		b.WriteString("\n")
		b.WriteString(n)
	}
	return b.String()
}

func (s *searchSummary) evidence() tool.Evidence {
	return tool.Evidence{
		tool.EvidenceKey(s.what): s.found,
		"shown":                  s.shown,
		"truncated":              s.res.Truncated || s.shown < s.found,
		"partial":                s.res.Partial,
		"total":                  s.res.Total,
		"files_searched":         s.res.FilesSearched,
		"skipped_hidden_files":   s.res.SkippedHiddenFiles,
		"skipped_binary":         s.res.SkippedBinary,
		"ignored":                s.res.Ignored,
		"skipped_hidden":         s.hiddenSkipped(),
	}
}
