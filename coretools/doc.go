// Package coretools holds the built-in tool groups, bounded at the source.
//
// The filesystem group ([Filesystem]) builds ls, read_file, write_file,
// edit_file, glob and grep over one [sandbox.Sandbox] (seed: "A filesystem
// group can generate ls, read_file, write_file, edit_file, glob, and grep").
// The tools hold no authority of their own: every path goes through the
// sandbox, which confines it to the workspace, and a path that resolves
// outside (via "..", an absolute path or a symlink) comes back as an
// Authorization-stage error result (cases BH-055, BH-057, BH-058).
//
// Every result is bounded where it is produced (seed: "Filesystem tools
// likewise bound lines, matches, or returned entries at the source"): lines,
// characters per line, bytes per call, entries, matches, output characters
// and walk time each have a limit in [FSOptions], and every result that hit a
// limit says so and says how to get the rest (for read_file, the offset to
// continue from; for glob and grep, to narrow the pattern or path).
//
// Failures are error results the model can act on, attributed to a stage
// ([tool.Stage]) with a next step; see errors.go for the mapping of sandbox
// errors to stages.
//
// The tools declare what the pipeline's stages need from them on their
// tool.Spec (verify.go): write_file, edit_file and execute each declare the
// check of their own effect that the Verification stage runs
// (tool.Spec.Verify), and execute declares its full output file
// (tool.Spec.OutputFile), which view_tool_call reads for a call that has
// no result yet. Their evidence uses the shared keys of package tool
// (tool.EvidenceSHA256, tool.EvidenceExitCode, ...).
package coretools
