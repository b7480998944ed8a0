package coretools

import (
	"context"
	"fmt"
	"strings"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// editPair is one replacement of an edit_file batch.
type editPair struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// editInput is the input of edit_file: either one replacement (old_string,
// new_string, replace_all) or a batch (edits), never both.
type editInput struct {
	Path       string     `json:"path"`
	OldString  *string    `json:"old_string"`
	NewString  *string    `json:"new_string"`
	ReplaceAll bool       `json:"replace_all"`
	Edits      []editPair `json:"edits"`
}

// maxBatchEdits bounds the replacements of one edit_file batch.
const maxBatchEdits = 50

// Bounds of the edited region edit_file shows back.
const (
	regionMaxLines = 60
	regionMaxBytes = 16 << 10
)

const editSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to edit, relative to the workspace root. It must exist; use write_file to create a file."},
    "old_string": {"type": "string", "description": "Exact text to replace, copied from read_file output without the line-number prefix (tabs, spaces and quote characters exactly as in the file). Must match once unless replace_all is set."},
    "new_string": {"type": "string", "description": "Replacement text, inserted literally (no $1 or $& expansion). Must differ from old_string."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string instead of requiring exactly one. Default false."},
    "edits": {
      "type": "array",
      "minItems": 1,
      "maxItems": %d,
      "description": "Instead of old_string/new_string: several replacements applied in order, all or nothing (if any one fails, nothing is written).",
      "items": {
        "type": "object",
        "properties": {
          "old_string": {"type": "string", "description": "Exact text to replace."},
          "new_string": {"type": "string", "description": "Replacement text, inserted literally."},
          "replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."}
        },
        "required": ["old_string", "new_string"],
        "additionalProperties": false
      }
    }
  },
  "required": ["path"],
  "additionalProperties": false
}`

func (f *fsTools) editFileTool() *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name:        "edit_file",
		Description: f.description("edit_file"),
		InputSchema: []byte(fmt.Sprintf(editSchema, maxBatchEdits)),
		Annotations: fsDestructive("Edit file"),
		Handler:     fsShownPaths(f.editFile),
		Verify:      verifyEdit,
		Access:      tool.PathAccess(tool.AccessEdit, "path"),
	})
}

// editFile applies exact replacements through the sandbox, all or nothing.
//
// Checks before the sandbox is called (Parameters stage): exactly one of
// old_string/new_string or edits; old_string not empty (case BH-010); old
// and new not equal (a no-op, with its own message). When this run has seen
// the file (read_file, write_file or edit_file), the digest seen is passed as
// ExpectedSHA256, and a file changed on disk since then is refused at the
// Verification stage. A file never seen in this run is edited without that
// check: the exact, unique match is its protection.
//
// On success the result shows the edited region as it now is on disk, in
// read_file's line form, with Evidence {replacements, bytes, sha256,
// stale_checked}.
func (f *fsTools) editFile(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[editInput](call)
	if err != nil {
		return nil, err
	}
	in.Path = fsPathArg(in.Path) // a name as ls, glob and grep print it (pathquote.go)
	if err := f.checkDenied("edit_file", in.Path); err != nil {
		return nil, err
	}
	edits, perr := in.replacements()
	if perr != nil {
		return nil, perr
	}
	req := sandbox.EditRequest{Path: in.Path, Edits: edits, Deny: f.deny(true)}
	expected, checked := f.lastSeen(in.Path)
	if checked {
		req.ExpectedSHA256 = expected
	}
	res, err := f.sb.Edit(ctx, req)
	if err != nil {
		return nil, fsError(err, "edit_file", in.Path)
	}
	f.remember(res.SHA256, in.Path, res.Path)
	text := formatEdit(in.Path, res, f.opts.ReadMaxLineChars)
	return tool.TextWith(text, tool.Evidence{
		tool.EvidencePath:         in.Path,
		tool.EvidenceReplacements: res.Replacements,
		tool.EvidenceBytes:        res.Bytes,
		tool.EvidenceSHA256:       res.SHA256,
		"stale_checked":           checked,
	}), nil
}

// replacements checks the input's shape and turns it into sandbox
// replacements. Errors are Parameters-stage, prefixed "edit N: " in a batch.
func (in *editInput) replacements() ([]sandbox.Replacement, *tool.Error) {
	var pairs []editPair
	switch {
	case len(in.Edits) > 0 && (in.OldString != nil || in.NewString != nil):
		return nil, tool.Errorf(tool.Parameters, "give either old_string and new_string, or edits, not both").
			WithHint("move the single replacement into edits, or drop edits")
	case len(in.Edits) > 0:
		pairs = in.Edits
	case in.OldString == nil || in.NewString == nil:
		return nil, tool.Errorf(tool.Parameters, "old_string and new_string are required (or an edits array)").
			WithHint("read the file, then copy the exact text to change into old_string")
	default:
		pairs = []editPair{{OldString: *in.OldString, NewString: *in.NewString, ReplaceAll: in.ReplaceAll}}
	}
	out := make([]sandbox.Replacement, 0, len(pairs))
	for i, p := range pairs {
		prefix := ""
		if len(pairs) > 1 {
			prefix = fmt.Sprintf("edit %d: ", i+1)
		}
		if p.OldString == "" {
			return nil, &tool.Error{Stage: tool.Parameters, Msg: prefix + msgEmptyOld, Hint: hintEmptyOld, Err: sandbox.ErrEmptyOld}
		}
		if p.OldString == p.NewString {
			return nil, &tool.Error{Stage: tool.Parameters, Msg: prefix + msgNoOp, Hint: hintNoOp, Err: sandbox.ErrNoOp}
		}
		out = append(out, sandbox.Replacement{Old: p.OldString, New: p.NewString, ReplaceAll: p.ReplaceAll})
	}
	return out, nil
}

// formatEdit renders a successful edit: the counts and read-back digest,
// then the edited region as it now is on disk in read_file's line form,
// bounded to regionMaxLines lines, regionMaxBytes bytes and lineChars
// characters per line, with a pointer to read_file for the rest.
func formatEdit(p string, res *sandbox.EditResult, lineChars int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "edited %s: %s; %s on disk; sha256 %s read back from disk",
		p, fsPlural(res.Replacements, "replacement", "replacements"),
		fsPlural(int(res.Bytes), "byte", "bytes"), res.SHA256)
	if len(res.Region) == 0 {
		b.WriteString("\ncall read_file to check the edited region")
		return b.String()
	}
	first := res.Region[0].Number
	var body strings.Builder
	used, last, cut := 0, 0, 0
	for i, l := range res.Region {
		text, clipped := fsClip(l.Text, lineChars)
		if i == regionMaxLines || (i > 0 && used+len(text) > regionMaxBytes) {
			break
		}
		if clipped || (l.Chars > 0 && fsRunes(text) < l.Chars) {
			cut++
		}
		used += len(text)
		body.WriteString(lineNumberPrefix(l.Number))
		body.WriteString(text)
		body.WriteByte('\n')
		last = l.Number
	}
	fmt.Fprintf(&b, "\nlines %d-%d as now on disk:\n%s", first, last, body.String())
	end := max(res.EndLine, res.Region[len(res.Region)-1].Number)
	if last < end {
		fmt.Fprintf(&b, "region cut at line %d of %d-%d; call read_file with offset=%d to see the rest\n", last, first, end, last+1)
	}
	if cut > 0 {
		fmt.Fprintf(&b, "%s cut to %s characters; use read_file or grep to see them whole\n",
			fsPlural(cut, "long line", "long lines"), fsCount(int64(lineChars)))
	}
	return strings.TrimRight(b.String(), "\n")
}
