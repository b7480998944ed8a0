// Package approval holds the human-decision tools of the seed ("High-impact
// actions also require a separate human decision"): ask_user_question, which
// asks the user a question with optional choices. The question reaches a
// person through an injected [Asker] service (a terminal prompt in `aibuddy
// run`, MCP elicitation for a host that supports it); a run without one
// does not expose the tool at all, so the model never calls a question that
// nobody can answer.
package approval
