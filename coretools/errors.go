package coretools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
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
	hintAmbiguous   = "add surrounding lines to old_string so it matches once (read_file around the lines named), or set replace_all to change every occurrence"
	hintNoOp        = "the file is unchanged and needs no re-read; set new_string to the text you want"
	hintChanged     = "another process is changing this path; look at it (ls or read_file), then retry"
	hintEncoding    = "use only characters the file's encoding has (read_file names it), or convert the file to UTF-8 with execute first"
	hintEmptyOld    = "to insert text, set old_string to a unique nearby line and new_string to that line plus the new text"
	hintBadPattern  = "fix the pattern syntax"
	hintPermission  = "the host does not permit this; choose another path"
	hintUnsupported = "this sandbox does not offer the operation; use another tool"
	hintCancelled   = "the call was stopped; inspect the state before retrying"
	hintExecution   = "inspect the state (ls or read_file) before retrying"
	hintDenied      = "this file is off limits in this workspace; do not try to reach it another way"
	hintSpecial     = "the file tools read and write regular files only; a FIFO, socket or device could block the call or have side effects (use execute if you mean to use it)"
	hintTooDeep     = "use a shorter path (fewer folders, or fewer links on the way), or raise the sandbox setting the message names"
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
//   - sandbox.ErrDenied (the object opened is denied by FSOptions.
//     DeniedPaths, judged on its real path) and sandbox.ErrSpecialFile (a
//     FIFO, socket or device, refused unopened) -> Authorization;
//   - sandbox.ErrTooDeep (more components or bytes than the sandbox
//     resolves) -> Parameters;
//   - ErrNotFound, ErrIsDir, ErrNotDir, ErrNoMatch, ErrAmbiguous, ErrNoOp,
//     ErrEmptyOld, ErrEncoding, ErrBadPattern -> Parameters, with a next
//     step each;
//     ErrNoMatch lists the sandbox's closest candidates (EditError);
//   - ErrStale -> Verification, hint "read the file again, then edit";
//   - ErrChanged (another process replaced or removed the path during
//     the call; the message says at which step and what became of the
//     call) -> Execution, hint to look at the path and retry;
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
	case errors.Is(err, sandbox.ErrDenied):
		e.Stage, e.Hint = tool.Authorization, hintDenied
		var de *sandbox.DeniedError
		if errors.As(err, &de) {
			via := ""
			if de.Real != path.Clean(filepath.ToSlash(p)) {
				via = fmt.Sprintf(" (a link to %q)", de.Real)
			}
			e.Msg = fmt.Sprintf("path %q%s is denied to the file tools by the rule %q", p, via, de.Rule)
		}
	case errors.Is(err, sandbox.ErrSpecialFile):
		e.Stage, e.Hint = tool.Authorization, hintSpecial
	case errors.Is(err, sandbox.ErrTooDeep):
		e.Stage, e.Hint = tool.Parameters, hintTooDeep
	case errors.Is(err, fs.ErrPermission):
		e.Stage, e.Hint = tool.Authorization, hintPermission
	case errors.Is(err, sandbox.ErrChanged):
		e.Stage, e.Hint = tool.Execution, hintChanged
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
			n = fsCount(int64(ee.Matches)) + " places"
		}
		e.Msg = editIdx + "old_string matches " + n + " in " + p
		if ee != nil && len(ee.MatchLines) > 0 {
			e.Msg += ": " + matchLines(ee.MatchLines, ee.Matches)
		}
		e.Msg += "; nothing was written"
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

// maxMatchLinesShown bounds the match lines an ambiguous edit's message
// names one by one; the rest are counted.
const maxMatchLinesShown = 20

// matchLines names where the matches of an ambiguous old_string start:
// "lines 12, 40 and 97", "line 7 (twice)", "lines 3 (3 times) and 9", or
// for many "lines 1, 2, ..., 20 and 1,180 more". lines are in file order
// (a line repeats once per match on it); total counts every match.
func matchLines(lines []int, total int) string {
	type run struct{ line, n int }
	var runs []run
	for _, l := range lines {
		if len(runs) > 0 && runs[len(runs)-1].line == l {
			runs[len(runs)-1].n++
			continue
		}
		runs = append(runs, run{l, 1})
	}
	var parts []string
	shown := 0
	for _, r := range runs {
		if len(parts) == maxMatchLinesShown {
			break
		}
		s := fsCount(int64(r.line))
		switch r.n {
		case 1:
		case 2:
			s += " (twice)"
		default:
			s += " (" + fsCount(int64(r.n)) + " times)"
		}
		parts = append(parts, s)
		shown += r.n
	}
	word := "lines "
	if len(runs) == 1 {
		word = "line "
	}
	if rest := total - shown; rest > 0 {
		return word + strings.Join(parts, ", ") + " and " + fsPlural(rest, "more match", "more matches")
	}
	if len(parts) == 1 {
		return word + parts[0]
	}
	return word + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
