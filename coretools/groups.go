package coretools

import (
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// Group keys of the built-in groups (the tool keys users configure).
const (
	FilesystemKey = "filesystem"
	ExecuteKey    = "execute"
)

// Groups returns the built-in tool groups: filesystem (ls, read_file,
// write_file, edit_file, glob, grep: six names mapped back to one group),
// execute, and jobs (job_output, job_kill, jobs; with the run's
// *jobs.Runner service, which also gives execute its background field). Options are copied into each run's tools; nil means defaults.
func Groups(fs *FSOptions, ex *ExecuteOptions) []registry.Group {
	return []registry.Group{
		{
			Key:   FilesystemKey,
			Names: FilesystemToolNames,
			Requires: registry.Requirements{SandboxOps: []sandbox.Op{
				sandbox.OpList, sandbox.OpRead, sandbox.OpWrite, sandbox.OpEdit, sandbox.OpSearch}},
			Build: func(env registry.Env) ([]*tool.Tool, error) {
				return Filesystem(env.Sandbox, fs), nil
			},
			Instructions: FilesystemInstructions,
		},
		{
			Key:      ExecuteKey,
			Names:    []string{"execute"},
			Requires: registry.Requirements{SandboxOps: []sandbox.Op{sandbox.OpExec}},
			Build: func(env registry.Env) ([]*tool.Tool, error) {
				return []*tool.Tool{Execute(env.Sandbox, withJobs(withPayloads(ex, env), env))}, nil
			},
			Instructions: ExecuteInstructions(ex),
		},
		JobsGroup(maxOutputChars(ex)),
	}
}

// Metas is the metadata of the built-in groups (the seed's
// TOOL_CONFIG_METAS entries).
var Metas = []registry.Meta{
	{Key: FilesystemKey, DisplayName: "Files", Category: "filesystem",
		Description: "List, read, write, edit and search files inside the workspace, bounded at the source."},
	{Key: ExecuteKey, DisplayName: "Shell", Category: "execution",
		Description: "Run shell commands in the workspace with a timeout, live output and a bounded result."},
	JobsMeta,
}
