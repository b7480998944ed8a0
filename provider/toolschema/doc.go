// Package toolschema projects a tool's full input schema (JSON Schema,
// draft 2020-12 or draft-07, as accepted by tool.Compile) into the subset a
// provider accepts, and says what it changed.
//
// The full schema stays the one that validates arguments locally (package
// tool); a projection only shapes what the model sees. Nothing is dropped
// silently: every rewrite comes back as a [Note] that names the place in the
// schema and what happened, and a constraint a provider cannot express is
// kept as plain language in the description (case BH-031: "size ≤ 64 when
// mode=quick").
//
// Three projections:
//
//   - [ForAnthropic]: Anthropic Messages API input_schema. No allOf, anyOf or
//     oneOf at the top level ("input_schema does not support oneOf, allOf, or
//     anyOf at the top level"); non-recursive $ref inlined, recursive ones kept
//     under the root $defs (cases BH-031, BH-034, BH-035).
//   - [ForOpenAIStrict]: OpenAI function tools with "strict": true
//     (Structured Outputs, "Supported schemas",
//     https://platform.openai.com/docs/guides/structured-outputs#supported-schemas):
//     every object has additionalProperties false and lists every property in
//     required, optional ones taking a null type union; unsupported keywords
//     become prose; a schema that cannot be made strict fails with
//     [ErrNotStrict] so the caller sends the non-strict projection instead.
//     [RestoreOptional] removes the nulls the model sends for optional
//     properties before the arguments meet the full schema (case BH-038).
//   - [ForOpenAI]: non-strict function parameters, also for chat-completions
//     compatible endpoints that do not resolve $ref.
//
// All three remove branches that match nothing ({"not":{}}, false) and
// collapse a one-branch anyOf/oneOf (case BH-038), and never emit a $ref
// that does not resolve inside the emitted document (case BH-035): the
// output is checked before it is returned.
package toolschema
