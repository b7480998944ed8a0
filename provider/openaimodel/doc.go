// Package openaimodel adapts the OpenAI Responses API (POST /v1/responses,
// streamed as server-sent events) to provider.Model, with the official SDK
// github.com/openai/openai-go/v3.
//
// # Transcript mapping (both ways)
//
//	provider block                  Responses API item
//	user Text / Image               {"role":"user","content":"…" | [input_text, input_image]}
//	assistant Text                  output message item (verbatim when unchanged) | {"role":"assistant","content":"…"}
//	ToolUse {ID, Name, Input}       function_call {call_id: ID, name, arguments}
//	ToolResult {ToolUseID, Content} function_call_output {call_id, output: text | [input_text, input_image]}
//	Opaque (Provider "openai")      the item in Raw, verbatim (reasoning, tool_search_call, tool_search_output, …)
//	Opaque (other providers)        dropped
//
// function_call_output has no error flag: a result with IsError starts with
// "[tool error] ". Blocks read from a response keep their output item in
// Raw (Provider "openai"), also for Text and ToolUse: an unchanged block is
// sent back as that item, with its item id, so a reasoning item is always
// followed by the item it produced.
//
// # Pairing (cases BH-051, BH-054)
//
// Before a request is built the transcript is repaired: each function_call
// is followed by exactly one function_call_output (a missing one gets a
// synthetic error output), an output whose call is not in the transcript
// becomes user text naming the call id, and duplicates are dropped.
//
// # Deferred tools (seed: "Deferral adapts to the provider")
//
// The strategy is chosen once, in New, by provider.ChooseStrategy (BYOK on
// the official endpoint with a model on its tool search allowlist, gpt-5.4
// and later → provider.Native), unless Options.Strategy overrides it; only
// toolsFor reads it.
//
//   - provider.Native uses the Responses API's own tool search (OpenAI
//     guide "Tool search",
//     https://developers.openai.com/api/docs/guides/tools-tool-search):
//     the tools array holds {"type":"tool_search"} and every function tool,
//     deferred ones with "defer_loading": true; the array is the same on
//     every step. Hosted search results come back as tool_search_call and
//     tool_search_output items, kept as opaque blocks and sent back.
//   - provider.ActiveTools sends only the non-deferred tools; aibuddy's
//     own tool_search activates the rest.
//
// # Schemas
//
// Function tool parameters are projected by provider/toolschema, one
// decision per tool (case BH-093): ForOpenAIStrictWith with "strict": true
// when the schema fits strict mode's subset without loss, else ForOpenAI
// with "strict": false and the reason logged at Info and reported by
// ExplainSchemas (provider.SchemaExplainer); Options.Strict (settings key
// provider.openaiStrict: auto, exact, off) narrows when strict is used
// (cases BH-034, BH-035, BH-038). The arguments of every call, strict or
// not, are validated against the full schema at dispatch.
// Arguments of a strict call have the nulls strict mode adds for optional
// properties removed (toolschema.RestoreOptional) before they enter the
// transcript. Lossy projections are logged once per tool (Options.Logger).
package openaimodel
