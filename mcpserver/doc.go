// Package mcpserver serves a run's effective tool set to any MCP host
// (Claude Code, Claude Desktop, Cursor, Codex, the MCP Inspector) with the
// official MCP Go SDK. tools/list returns exactly the capability.Set; every
// tools/call goes through the same pipeline as any other call (schema check,
// handler, group hooks), and a tool failure is a result with isError set
// whose text names the stage and the next step, while protocol faults stay
// JSON-RPC errors.
//
// While a call runs, its transient events (output chunks, heartbeats) reach
// the client as notifications/progress when the request carried a
// progressToken (MCP spec 2025-06-18, "Progress"); they never enter the
// result the model sees.
package mcpserver
