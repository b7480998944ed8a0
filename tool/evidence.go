package tool

// EvidenceKey names one entry of a result's [Evidence]. On the wire (the
// record's JSON, an MCP result's _meta) it is the snake_case string.
//
// The keys below are the ones more than one package reads or writes: the
// tool that produces them, the Verification stage that checks them
// (package pipeline and the checks tools declare in [Spec.Verify]), the
// projections and the record (package result), compaction and
// view_tool_call (package compact), the MCP gateway. A tool may add keys
// of its own (untyped string constants convert).
type EvidenceKey string

// Evidence is machine-readable proof of a call's effect, keyed by
// [EvidenceKey]; values are JSON-encodable.
type Evidence map[EvidenceKey]any

// Evidence keys shared across packages.
const (
	// EvidencePath is the workspace path a file tool acted on (string).
	EvidencePath EvidenceKey = "path"
	// EvidenceBytes is the size of the file read back after a write, in
	// bytes (integer).
	EvidenceBytes EvidenceKey = "bytes"
	// EvidenceSHA256 is the hex sha256 of the file read back from disk
	// after a write or edit (string).
	EvidenceSHA256 EvidenceKey = "sha256"
	// EvidenceCreated says a write created the file (bool).
	EvidenceCreated EvidenceKey = "created"
	// EvidenceReplacements is how many replacements an edit made (integer).
	EvidenceReplacements EvidenceKey = "replacements"

	// EvidenceExitCode is a command's exit code, -1 when unknown (integer).
	EvidenceExitCode EvidenceKey = "exit_code"
	// EvidenceTimedOut says a command was stopped at its timeout (bool).
	EvidenceTimedOut EvidenceKey = "timed_out"
	// EvidenceCancelled says a call was stopped by its caller (bool); the
	// record's outcome is then "cancelled".
	EvidenceCancelled EvidenceKey = "cancelled"
	// EvidenceFullOutputPath is the file that holds a call's whole raw
	// output, beyond what its result shows (string): view_tool_call reads
	// it, compaction points at it.
	EvidenceFullOutputPath EvidenceKey = "full_output_path"
	// EvidenceOutputChars and EvidenceOutputLines are the size of the
	// whole output in characters and lines (integers).
	EvidenceOutputChars EvidenceKey = "output_chars"
	EvidenceOutputLines EvidenceKey = "output_lines"
	// EvidenceShownChars is how many characters of the output the result
	// itself shows (integer).
	EvidenceShownChars EvidenceKey = "shown_chars"

	// EvidenceVerified is the outcome of the Verification stage: true when
	// the tool's declared check ([Spec.Verify]) held, false when it found a
	// contradiction (the result is then a Verification-stage error).
	// Absent when no check ran: the tool declares none, or the call failed
	// earlier.
	EvidenceVerified EvidenceKey = "verified"
	// EvidenceVerification says what the Verification stage compared
	// (when EvidenceVerified is true) or what contradicted the result
	// (when false), one sentence (string).
	EvidenceVerification EvidenceKey = "verification"

	// EvidenceModelTotalChars, EvidenceModelShownChars and
	// EvidenceModelOmittedChars describe a result cut to the model's bound
	// (package result, Bound), in characters (integers).
	EvidenceModelTotalChars   EvidenceKey = "model_total_chars"
	EvidenceModelShownChars   EvidenceKey = "model_shown_chars"
	EvidenceModelOmittedChars EvidenceKey = "model_omitted_chars"

	// EvidenceMCPServer and EvidenceMCPTool name the upstream MCP server
	// and its own tool name of a gateway call (strings).
	EvidenceMCPServer EvidenceKey = "mcp_server"
	EvidenceMCPTool   EvidenceKey = "mcp_tool"
	// EvidenceStructuredContent is an upstream MCP tool's
	// structuredContent (any JSON value).
	EvidenceStructuredContent EvidenceKey = "structured_content"
	// EvidenceError replaces evidence that could not be encoded (string).
	EvidenceError EvidenceKey = "evidence_error"
)
