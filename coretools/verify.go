package coretools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/aibuddy/aibuddy/tool"
)

// The checks below are what the built-in tools declare to the pipeline's
// Verification stage (tool.Spec.Verify): each compares a successful result
// with its call, from the result's own evidence and text (seed: "A
// successful response still requires effect verification"; "Failed
// verification should continue into correction rather than being
// translated into completion"). They never touch the workspace again.

// verifyWrite is write_file's check: the read-back sha256 and byte count
// (evidence sha256, bytes) must be those of the content sent.
func verifyWrite(call *tool.Call, res *tool.Result) tool.Verdict {
	v := tool.Verdict{Checked: "write_file: the sha256 and size of the file read back from disk match the content sent"}
	var in struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(call.Input, &in) != nil {
		v.Problem = "write_file's input has no content to compare the file with"
		return v
	}
	sum := sha256.Sum256([]byte(in.Content))
	want := hex.EncodeToString(sum[:])
	got, _ := res.Evidence[tool.EvidenceSHA256].(string)
	switch {
	case got == "":
		v.Problem = "write_file reported success without a read-back sha256"
	case !strings.EqualFold(got, want):
		v.Problem = fmt.Sprintf("the file read back has sha256 %s, but the content sent has sha256 %s", got, want)
	case evidenceNumber(res.Evidence[tool.EvidenceBytes]) != int64(len(in.Content)):
		v.Problem = fmt.Sprintf("the file read back has %d bytes, but %d were sent", evidenceNumber(res.Evidence[tool.EvidenceBytes]), len(in.Content))
	}
	return v
}

// verifyPair is one replacement of an edit_file input.
type verifyPair struct {
	Old string `json:"old_string"`
	New string `json:"new_string"`
}

// regionStart opens the read-back region of an edit_file result
// (formatEdit); each region line is "%6d→text".
const regionStart = " as now on disk:\n"

var regionLine = regexp.MustCompile(`^ *[0-9]+→`)

// verifyEdit is edit_file's check: the read-back sha256 must be present,
// at least one replacement made, and the region read back from disk (the
// result's "lines A-B as now on disk:" block) must contain new_string. A
// batch (edits) needs at least one of its new_strings there, since the
// region spans the first to the last change and may stop before a later
// one. A new_string that is empty (a deletion), changed by a later edit of
// the batch, or only partly shown (the region or a line cut, said in the
// result) is not compared, and Checked says so.
func verifyEdit(call *tool.Call, res *tool.Result) tool.Verdict {
	v := tool.Verdict{Checked: "edit_file: a read-back sha256, a replacement made, and new_string in the region read back from disk"}
	if _, ok := res.Evidence[tool.EvidenceSHA256].(string); !ok {
		v.Problem = "edit_file reported success without a read-back sha256"
		return v
	}
	if evidenceNumber(res.Evidence[tool.EvidenceReplacements]) < 1 {
		v.Problem = "edit_file reported success but made no replacement"
		return v
	}
	notCompared := "edit_file: a read-back sha256 and a replacement made (new_string not compared: "
	var in struct {
		verifyPair
		Edits []verifyPair `json:"edits"`
	}
	if json.Unmarshal(call.Input, &in) != nil {
		v.Checked = notCompared + "the input does not decode)"
		return v
	}
	edits := in.Edits
	if len(edits) == 0 {
		edits = []verifyPair{in.verifyPair}
	}
	text := res.AllText()
	i := strings.Index(text, regionStart)
	if i < 0 || strings.Contains(text, "\nregion cut at line ") || strings.Contains(text, "characters; use read_file or grep to see them whole") {
		v.Checked = notCompared + "the region is not shown whole)"
		return v
	}
	var lines []string
	for _, l := range strings.Split(text[i+len(regionStart):], "\n") {
		loc := regionLine.FindStringIndex(l)
		if loc == nil {
			break
		}
		lines = append(lines, strings.TrimSuffix(l[loc[1]:], "\r"))
	}
	region := strings.Join(lines, "\n")
	checked, found := 0, 0
	var missing string
	for k, e := range edits {
		ns := strings.Trim(strings.ReplaceAll(e.New, "\r\n", "\n"), "\n")
		if ns == "" || changedLater(ns, edits[k+1:]) {
			continue
		}
		checked++
		if strings.Contains(region, ns) || runsOffEnd(region, ns) {
			found++
		} else if missing == "" {
			missing = ns
		}
	}
	if checked == 0 {
		v.Checked = notCompared + "a deletion, or every new_string rewritten by a later edit)"
		return v
	}
	if found > 0 && len(edits) > 1 || found == checked {
		return v
	}
	if r := []rune(missing); len(r) > 80 {
		missing = string(r[:80]) + "…"
	}
	v.Problem = fmt.Sprintf("edit_file reported success, but the region read back from disk does not contain new_string %q", missing)
	return v
}

// changedLater reports whether a later edit of a batch may have rewritten
// ns (its old_string overlaps ns).
func changedLater(ns string, later []verifyPair) bool {
	for _, e := range later {
		if e.Old != "" && (strings.Contains(ns, e.Old) || strings.Contains(e.Old, ns) || overlap(ns, e.Old) || overlap(e.Old, ns)) {
			return true
		}
	}
	return false
}

// overlap reports whether a suffix of a is a prefix of b.
func overlap(a, b string) bool {
	for k := min(len(a), len(b)) - 1; k > 0; k-- {
		if strings.HasSuffix(a, b[:k]) {
			return true
		}
	}
	return false
}

// runsOffEnd reports whether the region ends inside ns: it holds ns's
// whole first line and more, and stops before ns does (a region bounded
// by the sandbox).
func runsOffEnd(region, ns string) bool {
	first, _, _ := strings.Cut(ns, "\n")
	for k := len(ns) - 1; k > len(first); k-- {
		if strings.HasSuffix(region, ns[:k]) {
			return true
		}
	}
	return false
}

var exitHeader = regexp.MustCompile(`(?m)^exit code: (-?[0-9]+|unknown)`)

// verifyExecute is execute's check: the result must carry an exit code
// (evidence exit_code) equal to the one its header states ("exit code:
// N"), and no evidence of a timeout or cancellation (those are error
// results). A non-zero exit code is a normal result.
func verifyExecute(_ *tool.Call, res *tool.Result) tool.Verdict {
	if bg, _ := res.Evidence["background"].(bool); bg {
		return verifyBackground(res) // a background start: no exit code yet (jobs.go)
	}
	v := tool.Verdict{Checked: "execute: the exit code in the evidence matches the result's header, and the command neither timed out nor was cancelled"}
	if b, _ := res.Evidence[tool.EvidenceTimedOut].(bool); b {
		v.Problem = "execute reported success but its evidence says it timed out"
		return v
	}
	if b, _ := res.Evidence[tool.EvidenceCancelled].(bool); b {
		v.Problem = "execute reported success but its evidence says it was cancelled"
		return v
	}
	code, ok := res.Evidence[tool.EvidenceExitCode]
	if !ok || evidenceNumber(code) == -1 && !isMinusOne(code) {
		v.Problem = "execute reported success without an exit code in its evidence"
		return v
	}
	m := exitHeader.FindStringSubmatch(res.AllText())
	switch {
	case m == nil:
		v.Problem = "execute reported success without an exit code in its result header"
	case m[1] != strconv.FormatInt(evidenceNumber(code), 10):
		v.Problem = fmt.Sprintf("execute's header says exit code %s, but its evidence says %d", m[1], evidenceNumber(code))
	}
	return v
}

func isMinusOne(v any) bool {
	switch n := v.(type) {
	case int:
		return n == -1
	case int64:
		return n == -1
	case float64:
		return n == -1
	case json.Number:
		return n.String() == "-1"
	}
	return false
}

// evidenceNumber reads an evidence number of any Go numeric type (or a
// json.Number); -1 when it is not a number.
func evidenceNumber(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case int32:
		return int64(n)
	case uint64:
		return int64(n)
	case float64:
		return int64(n)
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return -1
		}
		return i
	}
	return -1
}

// outputFile is execute's declaration of where a call's whole raw output
// is kept while it runs (tool.Spec.OutputFile):
// OutputDir/<taskId>/<toolCallId>.log, the name createOutputFile gives it
// (ids as safe file names; no task folder without a task id). "" without
// OutputDir or a call id.
func (e *executor) outputFile(taskID, toolCallID string) string {
	if e.opts.OutputDir == "" || toolCallID == "" {
		return ""
	}
	dir, err := filepath.Abs(e.opts.OutputDir)
	if err != nil {
		return ""
	}
	if taskID != "" {
		dir = filepath.Join(dir, tool.SafeFileName(taskID))
	}
	return filepath.Join(dir, tool.SafeFileName(toolCallID)+".log")
}
