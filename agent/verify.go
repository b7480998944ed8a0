package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aibuddy/aibuddy/tool"
)

// VerifyEvidence checks a successful built-in result against its call and
// its own evidence (seed: "A successful response still requires effect
// verification"; "Failed verification should continue into correction
// rather than being translated into completion"):
//
//   - write_file: the read-back sha256 and byte count (evidence sha256,
//     bytes) must be those of the content sent;
//   - edit_file: the read-back sha256 must be present, at least one
//     replacement made, and the region read back from disk (the result's
//     "lines A-B as now on disk:" block) must contain new_string. A batch
//     (edits) needs at least one of its new_strings there, since the
//     region spans the first to the last change and may stop before a
//     later one. A new_string that is empty (a deletion), changed by a
//     later edit of the batch, or only partly shown (the region or a line
//     cut, said in the result) is not checked;
//   - execute: the result must carry an exit code (evidence exit_code)
//     equal to the one its header states ("exit code: N"), and no
//     evidence of a timeout or cancellation (those are error results).
//
// A contradiction turns the result into a Verification-stage error that
// keeps the tool's own text (so the model sees what happened) and its
// evidence, plus evidence "verification" naming the mismatch. Error
// results pass unchanged: their tool already said the effect failed or is
// partial. Other tools pass unchanged.
func VerifyEvidence(call *tool.Call, res *tool.Result) *tool.Result {
	if res == nil || res.IsError || call == nil {
		return res
	}
	var problem string
	switch call.Name {
	case "write_file":
		problem = verifyWrite(call, res)
	case "edit_file":
		problem = verifyEdit(call, res)
	case "execute":
		problem = verifyExecute(res)
	}
	if problem == "" {
		return res
	}
	out := &tool.Result{IsError: true, Stage: tool.Verification, Evidence: map[string]any{}}
	for k, v := range res.Evidence {
		out.Evidence[k] = v
	}
	out.Evidence["verification"] = problem
	e := tool.Errorf(tool.Verification, "%s", problem).WithHint("inspect the actual state (read the file, check the output) before continuing or retrying")
	e.Tool = call.Name
	out.Content = append([]tool.Content{{Type: tool.TextContent, Text: e.Error()}}, res.Content...)
	return out
}

func verifyWrite(call *tool.Call, res *tool.Result) string {
	var in struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(call.Input, &in) != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(in.Content))
	want := hex.EncodeToString(sum[:])
	got, _ := res.Evidence["sha256"].(string)
	switch {
	case got == "":
		return "write_file reported success without a read-back sha256"
	case !strings.EqualFold(got, want):
		return fmt.Sprintf("the file read back has sha256 %s, but the content sent has sha256 %s", got, want)
	case number(res.Evidence["bytes"]) != int64(len(in.Content)):
		return fmt.Sprintf("the file read back has %d bytes, but %d were sent", number(res.Evidence["bytes"]), len(in.Content))
	}
	return ""
}

// editPair is one replacement of an edit_file input.
type editPair struct {
	Old string `json:"old_string"`
	New string `json:"new_string"`
}

// regionStart opens the read-back region of an edit_file result; each
// region line is "%6d→text".
const regionStart = " as now on disk:\n"

var regionLine = regexp.MustCompile(`^ *[0-9]+→`)

func verifyEdit(call *tool.Call, res *tool.Result) string {
	if _, ok := res.Evidence["sha256"].(string); !ok {
		return "edit_file reported success without a read-back sha256"
	}
	if number(res.Evidence["replacements"]) < 1 {
		return "edit_file reported success but made no replacement"
	}
	var in struct {
		editPair
		Edits []editPair `json:"edits"`
	}
	if json.Unmarshal(call.Input, &in) != nil {
		return ""
	}
	edits := in.Edits
	if len(edits) == 0 {
		edits = []editPair{in.editPair}
	}
	text := res.AllText()
	i := strings.Index(text, regionStart)
	if i < 0 || strings.Contains(text, "\nregion cut at line ") || strings.Contains(text, "characters; use read_file or grep to see them whole") {
		return "" // no region shown, or only part of it: nothing to compare
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
	if checked == 0 || found > 0 && len(edits) > 1 || found == checked {
		return ""
	}
	if r := []rune(missing); len(r) > 80 {
		missing = string(r[:80]) + "…"
	}
	return fmt.Sprintf("edit_file reported success, but the region read back from disk does not contain new_string %q", missing)
}

// changedLater reports whether a later edit of a batch may have rewritten
// ns (its old_string overlaps ns).
func changedLater(ns string, later []editPair) bool {
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

func verifyExecute(res *tool.Result) string {
	if b, _ := res.Evidence["timed_out"].(bool); b {
		return "execute reported success but its evidence says it timed out"
	}
	if b, _ := res.Evidence["cancelled"].(bool); b {
		return "execute reported success but its evidence says it was cancelled"
	}
	code, ok := res.Evidence["exit_code"]
	if !ok || number(code) == -1 && !isMinusOne(code) {
		return "execute reported success without an exit code in its evidence"
	}
	m := exitHeader.FindStringSubmatch(res.AllText())
	if m == nil {
		return "execute reported success without an exit code in its result header"
	}
	if m[1] != strconv.FormatInt(number(code), 10) {
		return fmt.Sprintf("execute's header says exit code %s, but its evidence says %d", m[1], number(code))
	}
	return ""
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

// number reads an evidence number of any Go numeric type (or a
// json.Number); -1 when it is not a number.
func number(v any) int64 {
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
