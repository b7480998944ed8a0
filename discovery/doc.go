// Package discovery narrows a run's effective tool set into the tools the
// model sees (seed: "The catalog narrows progressively into the active
// tool set"): the MCP count gates decide which tools are direct and which
// are deferred, the deferred index keeps only the names and descriptions
// (and parameter names) of deferred tools, tool_search surfaces candidates
// with their full schemas and activates them for the rest of the run, a
// deferred tool referenced by a retained tool call is active again without
// a new search, and Dispatch refuses any call to a tool that is not active.
//
// A [Catalog] is built once per resolution of the tool set and shared; a
// [Run] holds one run's activation state and is created fresh per run.
// Nothing here performs an effect besides forwarding an active call.
package discovery
