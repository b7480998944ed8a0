// Package tool is the tool contract of aibuddy: defining a tool (the seed's
// defineTool), calling it, and the failure stages every error is attributed to.
//
// A tool is defined once with [Define], which compiles its input schema with a
// real JSON Schema implementation (github.com/santhosh-tekuri/jsonschema/v6:
// full draft 2020-12 and draft-07, meta-schema validation of the schema
// itself, every violation with its instance location). Definition fails when
// the schema is not valid against its meta-schema, cannot be resolved
// locally (a remote or dangling $ref), has a top level other than
// `"type": "object"`, or when the name does not fit the providers' rules. Every call's raw JSON input
// is validated against the compiled schema before the handler runs; a bad
// input becomes a Parameters-stage error [Result] naming the field and what
// was expected.
//
// For tools of which a run uses few (thousands of deferred MCP tools),
// [Spec.CompileOnUse] moves the compile to the tool's first call or
// [Tool.Compile]; [CheckSchema] is the cheap structural check such a schema
// passes first (depth bound, top-level type, local references that
// resolve, no reference cycle that never ends, keyword shapes).
//
// A tool declares what it needs from the stages of the pipeline (package
// pipeline) on its [Spec], instead of being switched on its name
// elsewhere: its schema (Parameters), the check of its own effect
// ([Spec.Verify], run by the Verification stage), and the file it keeps
// its whole output in ([Spec.OutputFile], read by view_tool_call). The
// evidence a result carries is keyed by [EvidenceKey]; the keys more than
// one package reads are constants here.
//
// A tool's failure is a [Result] with IsError set, a [Stage] and a next step
// the model can act on; a Go error from this package means the plane itself
// failed. Stages come from the seed (tools-and-execution.md, "A successful
// response still requires effect verification"): Discovery, Parameters,
// Authorization, Execution, Projection, Verification.
package tool
