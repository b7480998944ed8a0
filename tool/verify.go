package tool

// Verdict is the outcome of a tool's own check of one successful
// result ([VerifyFunc]).
type Verdict struct {
	// Checked says what was compared, one phrase, e.g. "the read-back
	// sha256 and byte count match the content sent".
	Checked string
	// Problem is what contradicts the result, one sentence; "" when the
	// result holds.
	Problem string
}

// VerifyFunc is a tool's declared check of its own effect ([Spec.Verify]):
// it compares a successful result of call (its evidence and text) with
// what the call asked for (seed: "A successful response still requires
// effect verification"). It only reads call and res, never the world
// again, and must be fast: it runs on every successful call, in the
// Verification stage of the pipeline (package pipeline).
type VerifyFunc func(call *Call, res *Result) Verdict

// OutputFileFunc is a tool's declaration of where it keeps the whole raw
// output of one call ([Spec.OutputFile]): the path of the file for the
// call toolCallID of task taskID, written while the call runs, or "" when
// that call has none.
type OutputFileFunc func(taskID, toolCallID string) string

// Verify runs the tool's declared check on res, a successful result of
// call; ok is false when the tool declares none ([Spec.Verify]).
func (t *Tool) Verify(call *Call, res *Result) (v Verdict, ok bool) {
	if t == nil || t.verify == nil {
		return Verdict{}, false
	}
	return t.verify(call, res), true
}

// OutputFile is the file where the tool keeps the whole raw output of the
// call toolCallID of task taskID, as declared by [Spec.OutputFile]; "" when
// the tool declares none. view_tool_call reads a running or interrupted
// call's output from it, before the call has a result that names it
// ([EvidenceFullOutputPath]).
func (t *Tool) OutputFile(taskID, toolCallID string) string {
	if t == nil || t.outputFile == nil {
		return ""
	}
	return t.outputFile(taskID, toolCallID)
}
