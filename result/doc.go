// Package result builds the three projections of one tool call and keeps
// its durable record (seed, tools-and-execution.md: "Tool results use
// projections tailored to each consumer"):
//
//   - [Client]: display fields (tool, target, status, timing) and the
//     complete output; transient progress reaches the client through the
//     call's events, never through the model.
//   - [Model]: the text later model steps see: the result bounded to
//     30,000 characters by default ([Bound]: head, tail and a header naming
//     what was omitted and how to recover it, case BH-049) until the
//     compact hook (package compact) replaces it with a smaller form.
//   - Record: a [store.Record] with the raw input and output, the stable
//     toolCallId, task id, timestamps, stage, outcome and an optional
//     recovery pointer.
//
// [Recorder] is the middleware that keeps the record (the record stage of
// package pipeline, which every entry point shares): it writes a
// "running" record when a call starts (a crash leaves a trace), writes the
// final record durably before the result is handed back, then hands the
// record to a [Compactor] that works in the background.
//
// [Pair] answers one result per tool_use id from the records, so a turn
// interrupted mid-way still gets a tool_result for every call (case BH-051).
package result
