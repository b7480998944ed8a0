// Package mcpserver serves a run's effective tool set to any MCP host
// (Claude Code, Claude Desktop, Cursor, Codex, the MCP Inspector) with the
// official MCP Go SDK. tools/list returns the run's active tools; every
// tools/call goes through the same pipeline as a call of aibuddy run or
// aibuddy call (package pipeline, Options.Pipeline: record, Discovery over
// the gateway's run, Parameters, Authorization, Execution, Verification,
// projection, compaction), and a tool failure is a result with isError set
// whose text names the stage and the next step, with the stage and the
// evidence (the Verification outcome included) in _meta, while protocol
// faults stay JSON-RPC errors.
//
// While a call runs, its transient events (output chunks, heartbeats) reach
// the client as notifications/progress when the request carried a
// progressToken (MCP spec 2025-06-18, "Progress"); they never enter the
// result the model sees.
//
// Protocol versions: the SDK serves every version of [ProtocolVersions]
// and answers a host with the newest both support (2026-07-28 through
// server/discover and per-request _meta, older ones through initialize).
// Questions for the user (confirm, ask_user_question, and an upstream
// server's form through [HostElicitor]) go to a host on 2025-11-25 or
// older as elicitation/create, and to a 2026-07-28 host as input
// requests in the tools/call reply, the answers of earlier rounds carried
// in the gateway's signed requestState; a host without elicitation gets
// an Authorization-stage error.
//
// Summaries of large results (the compaction strategy "summarize") are
// asked of the host through MCP sampling by [Sampler] (sampling.go), after
// the tools/call reply, when the host declared sampling on 2025-11-25 or
// older; otherwise the result is trimmed and its record says why.
//
// With Options.Passthrough, the upstream MCP servers' resources, resource
// templates, prompts, completions and resource subscriptions are served
// too (passthru.go), named by mcpclient's pass-through naming and bounded
// like tool results.
package mcpserver
