package coretools

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// Hints the filesystem tools attach to stage errors.
const (
	hintOutside     = "use a path inside the workspace"
	hintStale       = "read the file again, then edit"
	hintNotFound    = "check the path with ls or glob"
	hintIsDir       = "the path is a directory; use ls to list it"
	hintNotDir      = "the path is a file, not a directory; use read_file for it"
	hintNoMatch     = "copy old_string exactly from read_file output (without the line-number prefix), whitespace and quotes included"
	hintAmbiguous   = "add surrounding lines to old_string so it matches once, or set replace_all to change every occurrence"
	hintNoOp        = "the file is unchanged and needs no re-read; set new_string to the text you want"
	hintEncoding    = "use only characters the file's encoding has (read_file names it), or convert the file to UTF-8 with execute first"
	hintEmptyOld    = "to insert text, set old_string to a unique nearby line and new_string to that line plus the new text"
	hintBadPattern  = "fix the pattern syntax"
	hintPermission  = "the host does not permit this; choose another path"
	hintUnsupported = "this sandbox does not offer the operation; use another tool"
	hintCancelled   = "the call was stopped; inspect the state before retrying"
	hintExecution   = "inspect the state (ls or read_file) before retrying"
)

// Messages of the Parameters errors edit_file raises before it calls the
// sandbox, so the model sees the same text whichever side caught it.
const (
	msgEmptyOld = "old_string must not be empty; use write_file to create a file" // case BH-010
	msgNoOp     = "old_string equals new_string, so the edit would change nothing; nothing was written"
)

// fsError maps an error from a sandbox call to a stage-carrying *tool.Error
// (seed: "Stage-specific attribution supports safer recovery"):
//
//   - sandbox.ErrOutsideWorkspace -> Authorization, hint "use a path inside
//     the workspace" (cases BH-055, BH-057, BH-058); fs.ErrPermission too;
//   - ErrNotFound, ErrIsDir, ErrNotDir, ErrNoMatch, ErrAmbiguous, ErrNoOp,
//     ErrEmptyOld, ErrEncoding, ErrBadPattern -> Parameters, with a next
//     step each;
//     ErrNoMatch lists the sandbox's closest candidates (EditError);
//   - ErrStale -> Verification, hint "read the file again, then edit";
//   - context cancellation or deadline, ErrUnsupported and anything else ->
//     Execution.
//
// A *tool.Error already in err's chain is returned as is. toolName is the
// tool the error is for; p the path as the model gave it.
func fsError(err error, toolName, p string) *tool.Error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	e := &tool.Error{Tool: toolName, Msg: err.Error(), Err: err}
	var ee *sandbox.EditError
	editIdx := ""
	if errors.As(err, &ee) && ee.Index > 0 {
		editIdx = "edit " + fsCount(int64(ee.Index+1)) + ": "
	}
	switch {
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		e.Stage, e.Hint = tool.Authorization, hintOutside
	case errors.Is(err, fs.ErrPermission):
		e.Stage, e.Hint = tool.Authorization, hintPermission
	case errors.Is(err, sandbox.ErrStale):
		e.Stage, e.Hint = tool.Verification, hintStale
		e.Msg = p + " changed on disk since this run last read it; nothing was written"
	case errors.Is(err, sandbox.ErrEmptyOld):
		e.Stage, e.Hint, e.Msg = tool.Parameters, hintEmptyOld, editIdx+msgEmptyOld
	case errors.Is(err, sandbox.ErrNoOp):
		e.Stage, e.Hint, e.Msg = tool.Parameters, hintNoOp, editIdx+msgNoOp
	case errors.Is(err, sandbox.ErrNoMatch):
		e.Stage, e.Hint = tool.Parameters, hintNoMatch
		e.Msg = editIdx + "old_string not found in " + p + "; nothing was written"
		if ee != nil && len(ee.Candidates) > 0 {
			e.Msg += "; closest: " + joinCandidates(ee.Candidates)
		}
	case errors.Is(err, sandbox.ErrEncoding):
		e.Stage, e.Hint = tool.Parameters, hintEncoding
		e.Msg = editIdx + "new_string cannot be written in the text encoding of " + p + "; nothing was written"
		if ee != nil && len(ee.Candidates) > 0 {
			e.Msg += ": " + joinCandidates(ee.Candidates)
		}
	case errors.Is(err, sandbox.ErrAmbiguous):
		e.Stage, e.Hint = tool.Parameters, hintAmbiguous
		n := "more than once"
		if ee != nil && ee.Matches > 1 {
			n = fsCount(int64(ee.Matches)) + " times"
		}
		e.Msg = editIdx + "old_string matches " + n + " in " + p + "; nothing was written"
	case errors.Is(err, sandbox.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		e.Stage, e.Hint = tool.Parameters, hintNotFound
		if toolName == "edit_file" {
			e.Hint = hintNotFound + "; use write_file to create a file"
		}
	case errors.Is(err, sandbox.ErrIsDir):
		e.Stage, e.Hint = tool.Parameters, hintIsDir
	case errors.Is(err, sandbox.ErrNotDir):
		e.Stage, e.Hint = tool.Parameters, hintNotDir
	case errors.Is(err, sandbox.ErrBadPattern):
		e.Stage, e.Hint = tool.Parameters, hintBadPattern
		if toolName == "grep" {
			e.Hint += " (RE2 syntax), or set literal to search for plain text"
		}
	case errors.Is(err, context.DeadlineExceeded):
		e.Stage, e.Hint, e.Msg = tool.Execution, hintCancelled, "timed out: "+err.Error()
	case errors.Is(err, context.Canceled):
		e.Stage, e.Hint, e.Msg = tool.Execution, hintCancelled, "cancelled: "+err.Error()
	case errors.Is(err, sandbox.ErrUnsupported):
		e.Stage, e.Hint = tool.Execution, hintUnsupported
	default:
		e.Stage, e.Hint = tool.Execution, hintExecution
	}
	return e
}

// maxCandidates and maxCandidateChars bound the closest-match text of a
// failed edit.
const (
	maxCandidates     = 3
	maxCandidateChars = 300
)

func joinCandidates(cs []string) string {
	var parts []string
	for i, c := range cs {
		if i == maxCandidates {
			parts = append(parts, "and "+fsPlural(len(cs)-maxCandidates, "more", "more"))
			break
		}
		if cut, clipped := fsClip(c, maxCandidateChars); clipped {
			c = cut + "…"
		}
		parts = append(parts, c)
	}
	return strings.Join(parts, "; ")
}
