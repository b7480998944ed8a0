package pipeline

import (
	"maps"

	"github.com/aibuddy/aibuddy/tool"
)

// Verify is the Verification stage's rule for one result res of call to
// tool t (seed: "A successful response still requires effect
// verification"; "Failed verification should continue into correction
// rather than being translated into completion"):
//
//   - an error result passes unchanged: its tool already said the effect
//     failed or is partial;
//   - a tool that declares no check (tool.Spec.Verify; t nil) passes its
//     result unchanged, without a verification outcome;
//   - a check that holds returns a copy of res whose evidence says so:
//     tool.EvidenceVerified true and tool.EvidenceVerification naming
//     what was compared;
//   - a check that finds a contradiction returns a Verification-stage
//     error that keeps the tool's own text (so the model sees what
//     happened) after the error line, and its evidence, with
//     tool.EvidenceVerified false and tool.EvidenceVerification naming
//     the mismatch. The next step it gives is to inspect the actual state.
func Verify(t *tool.Tool, call *tool.Call, res *tool.Result) *tool.Result {
	if res == nil || res.IsError || call == nil || t == nil {
		return res
	}
	v, ok := t.Verify(call, res)
	if !ok {
		return res
	}
	ev := maps.Clone(res.Evidence)
	if ev == nil {
		ev = tool.Evidence{}
	}
	if v.Problem == "" {
		ev[tool.EvidenceVerified] = true
		ev[tool.EvidenceVerification] = v.Checked
		out := *res
		out.Evidence = ev
		return &out
	}
	ev[tool.EvidenceVerified] = false
	ev[tool.EvidenceVerification] = v.Problem
	e := tool.Errorf(tool.Verification, "%s", v.Problem).
		WithHint("inspect the actual state (read the file, check the output) before continuing or retrying")
	e.Tool = call.Name
	return &tool.Result{
		IsError:  true,
		Stage:    tool.Verification,
		Evidence: ev,
		Content:  append([]tool.Content{{Type: tool.TextContent, Text: e.Error()}}, res.Content...),
	}
}
