// Package provider is the seam between an agent run and a model API: a
// neutral transcript (messages of text, tool_use, tool_result, image and
// opaque provider blocks), the tools offered in one step, a streamed
// response, and the choice of deferral strategy for a route (seed:
// "Deferral adapts to the provider").
//
// Adapters live in sub-packages named after what they adapt, never after
// the SDKs they wrap (provider/anthropicmodel, provider/openaimodel,
// provider/chatmodel); provider/toolschema projects input schemas into
// what each provider accepts, and every adapter reports its per-tool
// schema decisions through [SchemaExplainer] for the effective-set
// explanation.
package provider
