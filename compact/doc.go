// Package compact is background precompaction of tool results and their
// recovery by call id (seed, tools-and-execution.md: "When a tool result
// reaches the current 2,500-token precompaction threshold,
// onToolExecutionEnd starts tool-specific compaction in the background";
// implementation anchor "tool-compactor / view_tool_call").
//
// A [Compactor] receives finished records (it implements
// result.Compactor). A record whose model form reaches the threshold, in
// tokens counted by [Count] (an offline o200k_base BPE tokenizer; an
// estimate for models with other tokenizers), is compacted by its tool's
// [Strategy]:
//
//   - [Trim]: JSON is shortened keeping its structure (arrays sampled,
//     long strings cut, each cut marked with what was removed); other text
//     keeps its head and tail with a marker naming the omitted characters
//     and lines.
//   - [Summarize]: a [Summarizer] writes a summary: `aibuddy run` gives
//     one over its provider ([ModelSummarizer], settings
//     compaction.summaryModel: a cheaper model of the same provider by
//     default), `aibuddy mcp` one over the host's MCP sampling
//     (mcpserver). The request is bounded: the result text cut to
//     Options.SummaryInputMaxChars (head and tail), the summary to
//     Options.SummaryMaxTokens, the wait to Options.SummaryTimeout, and it
//     stops with the run. The summary enters only when its form is smaller
//     in bytes than the result; its stub says "summarized by <model> via
//     <provider|host sampling>". Without a summarizer, when it is
//     unavailable (a host without sampling), fails, times out or is not
//     smaller, the result is trimmed and the stub says "trimmed: <why>".
//   - [Drop]: only for tools that declare their output disposable; the
//     model form becomes a one-line stub with no recovery pointer.
//
// Trim and summarize offload first: the raw input and output are written
// atomically to compacted_outputs/<taskId>/<toolCallId>.json under the
// data folder, then the model form is replaced (store.ReplaceModel, which
// only replaces with something smaller) by the compact form, headed by a
// stub that names the tool, its arguments, the sizes, who cut it and how
// to recover the rest with view_tool_call (cases BH-046, BH-050). When the
// result is execute's 30,000-character projection of an output kept whole
// in a file (evidence full_output_path), the stub also gives the command's
// true totals, and its markers address the result text with
// "part":"result", since view_tool_call reads the full output file by
// default (case BH-047).
//
// [ViewToolCall] is the view_tool_call tool: a recorded call's raw output
// or input in bounded slices (character offset and limit, a line range, a
// regular expression, or an RFC 9535 JSONPath). It streams an output
// file of any size in bounded memory (see [ViewToolCall]).
package compact
