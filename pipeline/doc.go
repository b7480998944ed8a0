// Package pipeline is the path one concrete tool call takes on the
// execution plane, assembled once (ARCHITECTURE.md, "One call, end to
// end"; issue 11): every entry point (aibuddy mcp, aibuddy run, aibuddy
// call) and every embedder builds it with [New] and hands each run's calls
// to [Pipeline.Handler], so a call gives the same record whoever made it.
//
// The stages, in the order a call meets them, each a [Middleware] around
// a [Handler]:
//
//	Record opens      "running" record with the raw input (a crash leaves a trace)
//	Discovery         the run's Dispatcher: tool_search, inactive names refused
//	Options.Middleware the embedder's own, here and only here
//	Parameters        input checked against the tool's compiled schema
//	PreToolUse hooks  Options.Hooks: deny, ask, allow, updatedInput (Authorization stage)
//	Authorization     approval.Gate: denied, confirmed by a person, or refused
//	Path lock         a call writing files waits for others writing them
//	Execution         the tool set's Call (handler, group result hook)
//	Verification      the tool's declared check of its effect (tool.Spec.Verify)
//	PostToolUse hooks Options.Hooks, on a verified success, the lock still held
//	Record closes     final record (output, evidence, stage, outcome), then the
//	                  model projection bounded, then background compaction
//
// A stage that refuses a call answers with an error [tool.Result] at its
// own stage and does not call the next; the record closes all the same.
// What a tool needs from the stages is declared by the tool, never switched
// on its name here: its input schema (Parameters), its verification
// (tool.Spec.Verify, set by the coretools groups), the file it keeps its
// whole output in (tool.Spec.OutputFile, read by view_tool_call). The
// Verification outcome is written into the result's evidence
// (tool.EvidenceVerified, tool.EvidenceVerification) and so into the
// record.
//
// The name: the seed calls this the call's lifecycle and its parts
// stages; "pipeline" is what the issue and the architecture notes call
// the assembly, and says that it is a fixed sequence one call flows
// through, unlike adk-go's "runner", which here would be the agent loop
// (package agent) that uses it.
package pipeline
