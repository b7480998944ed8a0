// Package toolschema projects a tool's full input schema (JSON Schema,
// draft 2020-12 or draft-07, as accepted by tool.Compile) into the dialect
// a provider accepts, and says what it changed.
//
// The full schema stays the one that validates arguments locally (package
// tool, at the Parameters stage of every call); a projection only shapes
// what the model sees. Nothing is dropped silently: every rewrite comes
// back as a [Note] that names the place in the schema and what happened
// (Lossy when the provider no longer enforces something), and a
// constraint a provider cannot express is kept as plain language in the
// description (case BH-031: "size ≤ 64 when mode=quick").
//
// Four projections:
//
//   - [ForAnthropic]: Anthropic Messages API input_schema. No allOf, anyOf or
//     oneOf at the top level ("input_schema does not support oneOf, allOf, or
//     anyOf at the top level"); non-recursive $ref inlined, recursive ones kept
//     under the root $defs (cases BH-031, BH-034, BH-035).
//   - [ForOpenAIStrict] / [ForOpenAIStrictWith]: OpenAI function tools with
//     "strict": true (Structured Outputs, "Supported schemas",
//     https://platform.openai.com/docs/guides/structured-outputs#supported-schemas),
//     only when nothing is lost: every object gets additionalProperties false
//     and lists every property in required, optional ones taking a null
//     type union; any change strict mode cannot carry (an unsupported
//     keyword or format, a free-form object, a flattened top-level
//     combinator) fails with [ErrNotStrict], whose text is the reason, so the
//     caller sends the non-strict projection instead (case BH-093).
//     [RestoreOptional] removes the nulls the model sends for optional
//     properties before the arguments meet the full schema (case BH-038).
//   - [ForOpenAI]: non-strict function parameters, also for chat-completions
//     compatible endpoints that do not resolve $ref.
//   - [ForGemini]: the Gemini Schema subset (OpenAPI 3.0 subset) for
//     Gemini function declarations and Gemini's OpenAI-compatible endpoint:
//     every $ref inlined, recursion cut at a set depth, keywords outside the
//     subset converted (exclusive integer bounds) or described (case BH-094).
//
// All four remove branches that match nothing ({"not":{}}, false) and
// collapse a one-branch anyOf/oneOf (case BH-038); flatten a top-level
// anyOf/oneOf into root properties the model can see, the alternatives
// described (issue 14); and never emit a $ref that does not resolve inside
// the emitted document (case BH-035): the output is checked before it is
// returned.
package toolschema
