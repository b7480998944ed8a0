package coretools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// lsInput is the input of ls.
type lsInput struct {
	Path          string `json:"path"`
	Depth         int    `json:"depth"`
	IncludeHidden bool   `json:"include_hidden"`
	MaxEntries    int    `json:"max_entries"`
}

const lsSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory to list, relative to the workspace root; \".\" is the root."},
    "depth": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Levels to descend: 1 (default) lists direct children only."},
    "include_hidden": {"type": "boolean", "description": "Include entries whose name starts with a dot (.git is never descended). Default false."},
    "max_entries": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Stop after this many entries (default and maximum %d)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

func (f *fsTools) lsTool() *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name:        "ls",
		Description: f.description("ls"),
		InputSchema: []byte(fmt.Sprintf(lsSchema, f.opts.LsMaxDepth, f.opts.LsMaxEntries, f.opts.LsMaxEntries)),
		Annotations: fsReadOnly("List directory"),
		Handler:     f.ls,
		Access:      tool.PathAccess(tool.AccessRead, "path"),
	})
}

func (f *fsTools) ls(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[lsInput](call)
	if err != nil {
		return nil, err
	}
	in.Path = fsPathArg(in.Path)
	if err := f.checkDenied("ls", in.Path); err != nil {
		return nil, err
	}
	depth := min(max(in.Depth, 1), f.opts.LsMaxDepth)
	maxEntries := f.opts.LsMaxEntries
	if in.MaxEntries > 0 && in.MaxEntries < maxEntries {
		maxEntries = in.MaxEntries
	}
	wctx, cancel, timedOut := f.walkContext(ctx)
	defer cancel()
	res, err := f.sb.List(wctx, sandbox.ListRequest{
		Path: in.Path, Depth: depth, MaxEntries: maxEntries, IncludeHidden: in.IncludeHidden,
		Deny: f.deny(false),
	})
	if err != nil && !(timedOut() && res != nil) {
		if timedOut() {
			return nil, tool.Errorf(tool.Execution, "timed out after %s before any entry was listed", fsDuration(f.opts.SearchTimeout)).
				WithHint("list a smaller directory or lower depth")
		}
		return nil, fsError(err, "ls", in.Path)
	}
	if timedOut() {
		res.Partial = true
	}
	if !f.opts.Denied.Empty() { // denied names are not listed (BH-059)
		kept := res.Entries[:0:0]
		for _, e := range res.Entries {
			if _, denied := fsDenied(f.opts.Denied, e.Path, false); !denied {
				kept = append(kept, e)
			}
		}
		res.Entries = kept
	}
	text, shown := formatList(in.Path, res, maxEntries, f.opts.MaxOutputChars, f.opts.SearchTimeout)
	return tool.TextWith(text, tool.Evidence{
		"entries":        shown,
		"truncated":      res.Truncated || shown < len(res.Entries),
		"partial":        res.Partial,
		"skipped_hidden": res.Skipped,
	}), nil
}

// formatList renders ls output: one entry per line, workspace-relative so
// it can be passed to the other tools; directories end in "/", files show
// their size in bytes, symlinks are marked and never followed. Notes after
// the entries say when the listing was cut (by maxEntries or by outChars
// characters), stopped by the timeout, or left hidden entries out.
// It returns the text and the number of entries shown.
func formatList(reqPath string, res *sandbox.ListResult, maxEntries, outChars int, timeout time.Duration) (string, int) {
	out := fsLimiter{max: outChars}
	shown := 0
	for _, e := range res.Entries {
		var line string
		name := fsShowPath(strings.TrimSuffix(e.Path, "/"))
		switch e.Type {
		case sandbox.TypeDir:
			line = name + "/"
		case sandbox.TypeSymlink:
			line = name + "@  (symlink, not followed)"
		case sandbox.TypeOther:
			line = name + "  (special file)"
		default:
			line = name + "  (" + fsPlural(int(e.Size), "byte", "bytes") + ")"
		}
		if !out.line(line) {
			break
		}
		shown++
	}
	where := fsShowPath(reqPath)
	if where == "" {
		where = "."
	}
	var notes []string
	switch {
	case shown < len(res.Entries):
		notes = append(notes, fmt.Sprintf("output cut at %s characters after %s of %s; list a subdirectory or lower depth for the rest",
			fsCount(int64(outChars)), fsCount(int64(shown)), fsPlural(len(res.Entries), "entry", "entries")))
	case res.Truncated:
		notes = append(notes, fmt.Sprintf("showing %s of at least %s (max_entries %s); list a subdirectory or lower depth for the rest",
			fsCount(int64(shown)), fsCount(int64(shown+1)), fsCount(int64(maxEntries))))
	case len(res.Entries) == 0 && !res.Partial:
		notes = append(notes, fmt.Sprintf("%s is empty", where))
	}
	if res.Partial {
		notes = append(notes, fmt.Sprintf("timed out after %s; listed %s; the listing is partial; list a subdirectory or lower depth",
			fsDuration(timeout), fsPlural(shown, "entry", "entries")))
	}
	if res.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("%s skipped; set include_hidden to see them",
			fsPlural(res.Skipped, "hidden entry was", "hidden entries were")))
	}
	text := out.String()
	if len(notes) > 0 {
		if text != "" {
			text += "\n"
		}
		text += strings.Join(notes, "\n")
	}
	return strings.TrimRight(text, "\n"), shown
}
