// Package approval holds the human decisions of the seed ("High-impact
// actions also require a separate human decision"):
//
//   - ask_user_question asks the user a question with optional choices,
//     through an injected Asker service (a terminal prompt in `aibuddy
//     run`, MCP elicitation in `aibuddy mcp`); a run without one does not
//     expose the tool at all.
//   - confirm is a Gate in the execution plane: a Policy (the permission
//     engine of package permissions: a Claude Code-style permissions block
//     and today's approval keys as rules) decides each call on what the
//     tool declares it reaches (tool.Access: paths, a shell command parsed
//     into its commands, a URL; MCP tools by name and annotations), never
//     on tool names; the Gate records the Action (target, scope, expected
//     consequence, the rule that decided and what to change), asks a
//     Confirmer, and runs exactly that call only when approved. A decision is bound to that one call and never reused for a
//     later, similar one; without anyone to ask, the action is refused at the
//     Authorization stage, never run unasked.
package approval
