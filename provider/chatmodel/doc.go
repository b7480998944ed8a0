// Package chatmodel adapts chat-completions compatible endpoints (POST
// {BaseURL}/chat/completions, streamed: OpenAI's Chat Completions API and
// the servers that copy it, such as a local model server) to
// provider.Model, with the official SDK github.com/openai/openai-go/v3.
//
// These routes always use aibuddy's activeTools path (seed: "third-party
// compatibility endpoints, and other models use aibuddy's activeTools
// path"): Strategy is provider.ActiveTools and deferred tools are never
// sent.
//
// # Transcript mapping (both ways)
//
//	provider block                  chat completions message
//	Request.System                  {"role":"system","content":"…"} first
//	user Text / Image               {"role":"user","content":"…" | [text, image_url (data URL)]}
//	assistant Text + ToolUse        {"role":"assistant","content":"…","tool_calls":[{"id","type":"function","function":{"name","arguments"}}]}
//	ToolResult {ToolUseID, Content} {"role":"tool","tool_call_id":…,"content":"…"} (images become a note: tool messages carry text only)
//	Opaque                          dropped (it belongs to another provider)
//
// Tools go out as {"type":"function","function":{"name","description","parameters"}}
// with parameters projected for the route's schema dialect
// (Options.Dialect, settings key provider.schemaDialect):
//   - provider.DialectOpenAI: provider/toolschema.ForOpenAI (local refs
//     inlined, impossible branches removed: many compatible servers
//     resolve neither);
//   - provider.DialectGemini, chosen by itself for Gemini's
//     OpenAI-compatible endpoint (host generativelanguage.googleapis.com):
//     toolschema.ForGemini, the Gemini Schema subset (no $ref, recursion cut
//     at Options.RefDepth, unsupported keywords converted or described;
//     case BH-094); a function without parameters is sent without the
//     parameters field (Gemini refuses an OBJECT without properties).
//
// Lossy changes are logged once per tool (Options.Logger) and reported by
// ExplainSchemas (provider.SchemaExplainer). A request with no active tool
// carries no tools field (case BH-095). Streamed tool calls are assembled
// by their index from the argument deltas and reported when the stream
// ends.
//
// # Pairing (cases BH-051, BH-054)
//
// Before a request is built the transcript is repaired: an assistant
// message with tool_calls is followed by one tool message for every id in
// them (a missing result gets a synthetic error), a result whose call is
// not in the transcript becomes user text naming the call id, and
// duplicates are dropped.
package chatmodel
