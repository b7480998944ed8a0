package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aibuddy/aibuddy/tool"
)

// VerifyEvidence checks a successful built-in result against its own
// evidence (seed: "A successful response still requires effect
// verification"; "Failed verification should continue into correction
// rather than being translated into completion"):
//
//   - write_file: the read-back sha256 and byte count must be those of
//     the content sent;
//   - edit_file: at least one replacement must have been made, and the
//     read-back sha256 must be present;
//   - execute: a result not marked as an error must not carry
//     evidence of a timeout or cancellation.
//
// A contradiction turns the result into a Verification-stage error that
// keeps the tool's own text (so the model sees what happened) and its
// evidence, plus evidence "verification" naming the mismatch. Error
// results and other tools pass unchanged.
func VerifyEvidence(call *tool.Call, res *tool.Result) *tool.Result {
	if res == nil || res.IsError || call == nil {
		return res
	}
	var problem string
	switch call.Name {
	case "write_file":
		var in struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(call.Input, &in) != nil {
			return res
		}
		sum := sha256.Sum256([]byte(in.Content))
		want := hex.EncodeToString(sum[:])
		got, _ := res.Evidence["sha256"].(string)
		switch {
		case got == "":
			problem = "write_file reported success without a read-back sha256"
		case !strings.EqualFold(got, want):
			problem = fmt.Sprintf("the file read back has sha256 %s, but the content sent has sha256 %s", got, want)
		case number(res.Evidence["bytes"]) != int64(len(in.Content)):
			problem = fmt.Sprintf("the file read back has %d bytes, but %d were sent", number(res.Evidence["bytes"]), len(in.Content))
		}
	case "edit_file":
		if _, ok := res.Evidence["sha256"].(string); !ok {
			problem = "edit_file reported success without a read-back sha256"
		} else if number(res.Evidence["replacements"]) < 1 {
			problem = "edit_file reported success but made no replacement"
		}
	case "execute":
		if b, _ := res.Evidence["timed_out"].(bool); b {
			problem = "execute reported success but its evidence says it timed out"
		} else if b, _ := res.Evidence["cancelled"].(bool); b {
			problem = "execute reported success but its evidence says it was cancelled"
		}
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
