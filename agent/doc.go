// Package agent runs an agent: the step loop that drives the capability
// plane and the execution plane with a model (ARCHITECTURE.md, "One call,
// end to end"; issue 7).
//
// Each step first takes the tool set as it is now (Options.CurrentSet: MCP
// servers whose tools changed are re-resolved, tool_search activations
// kept), then rebuilds the context from the run's transcript (completed
// ask_user_question and confirm exchanges as plain user-role text,
// compacted results in their compact form with their recovery pointer,
// every tool_use paired with exactly one tool_result: [Rebuild], [Repair],
// [Validate]), cuts it to the context budget by dropping the oldest whole
// exchanges (provider.Fit; a provider's "prompt is too long" refusal halves
// the budget and retries the step), reactivates deferred tools that
// retained calls reference (discovery.Run.Retain, over what was kept),
// presents the tools by the model's strategy
// (activeTools: the active set; native: every tool with Deferred marks from
// the same catalog decision), calls the model, and runs its tool calls
// through the pipeline aibuddy mcp and aibuddy call use too
// (Options.Pipeline, package pipeline: record, Discovery over the run's
// discovery state, Middleware, Parameters, the confirm gate, Execution,
// Verification by each tool's declared check, projection, compaction). It
// stops when
// the model stops, at the step limit, or when the context is cancelled; a
// cancelled run still gives every tool_use its tool_result (BH-051, case
// file 7-pairing.md).
//
// The calls of one model turn run at once where that is safe, up to
// Options.MaxParallelCalls (default 4): read-only tools (readOnlyHint,
// tool_search) beside each other, writes beside calls on other paths and
// one path's writes in call order, execute and tools without annotations
// alone (the rule of Claude Code and Codex; run.classify in parallel.go).
// Results go back in call order, each paired with its call and, in a turn
// of several, headed by a line naming it (BH-070, BH-071); each call's
// record is written when it ends; one failure does not stop its siblings;
// a stop gives each running call a cancelled result with its partial
// output (BH-073).
//
// [Agent.Run] is an iter.Seq2[Event, error]: text deltas, tool-call
// starts, live output and progress, results, human decisions, and a final
// Done event carrying the [Summary] (stop reason, failures by stage, the
// transcript). Heartbeats are passed to the client and never enter the
// model's context.
package agent
