// Package approval holds the human decisions of the seed ("High-impact
// actions also require a separate human decision"):
//
//   - ask_user_question asks the user a question with optional choices,
//     through an injected Asker service (a terminal prompt in `aibuddy
//     run`, MCP elicitation in `aibuddy mcp`); a run without one does not
//     expose the tool at all.
//   - confirm is a Gate in the execution plane: a Policy marks high-impact
//     calls (tools by name, MCP tools annotated destructive, execute
//     commands matching patterns or naming paths denied to the file tools,
//     case BH-059), the Gate records the Action (target, scope, expected
//     consequence), asks a Confirmer, and runs exactly that call only when
//     approved. A decision is bound to that one call and never reused for a
//     later, similar one; without anyone to ask, the action is refused at the
//     Authorization stage, never run unasked.
package approval
