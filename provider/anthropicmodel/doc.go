// Package anthropicmodel is the provider.Model for Anthropic's Messages API
// (https://docs.anthropic.com/en/api/messages), built on the official SDK
// github.com/anthropics/anthropic-sdk-go/v2. Responses are streamed (SSE,
// https://docs.anthropic.com/en/docs/build-with-claude/streaming).
//
// Deferral follows the route (seed: "Deferral adapts to the provider"):
//
//   - provider.Native (genuine Anthropic routes with a model on the tool
//     search allowlist of provider.ChooseStrategy, not Haiku): one stable tools
//     array holding every tool, deferred ones with "defer_loading": true, plus
//     the BM25 tool search server tool
//     {"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}
//     (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool).
//     The server_tool_use and tool_search_tool_result blocks the API returns
//     come back as provider.Opaque blocks and are sent back verbatim.
//   - provider.ActiveTools: only the tools not marked Deferred.
//
// Input schemas go through toolschema.ForAnthropic (a top-level
// anyOf/oneOf flattened into visible fields, allOf/if described); lossy
// rewrites are logged as warnings naming the tool (case BH-031) and
// reported by ExplainSchemas (provider.SchemaExplainer). A request with no
// active tool carries no tools field (case BH-095).
//
// Before sending, the transcript is made valid for the API: every tool_use
// has exactly one tool_result in the user message right after it (missing
// ones get an is_error result, orphans become text; cases BH-051, BH-053),
// and images over Anthropic's 5 MB of base64 are replaced by a text note
// with their size (case BH-013). If the API still rejects an image, Stream
// returns an *ImageError naming it, and ImageError.Replace swaps it for a
// note in the stored history so the next turn succeeds.
package anthropicmodel
