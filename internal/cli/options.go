package cli

import (
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/coretools"
)

// ToolOptions maps the settings' limits onto the built-in tools' options.
// Zero values keep each tool's own default. dataDir, when set, is where
// execute keeps full command output.
func ToolOptions(cfg *config.Config, dataDir string) (*coretools.FSOptions, *coretools.ExecuteOptions) {
	l := cfg.Limits
	fs := &coretools.FSOptions{
		LsMaxEntries:       l.LsMaxEntries,
		LsMaxDepth:         l.LsMaxDepth,
		ReadMaxLines:       l.ReadMaxLines,
		ReadMaxLineChars:   l.ReadMaxLineChars,
		ReadMaxBytes:       l.ReadMaxBytes,
		ReadMaxImageBytes:  l.ReadMaxImageBytes,
		SearchMaxResults:   l.SearchMaxResults,
		SearchMaxLineChars: l.SearchMaxLineChars,
		SearchTimeout:      l.SearchTimeout.D(),
		// The file tools stay within the result bound, so it never cuts
		// a read_file window (or an ls/glob/grep listing) in its middle.
		MaxOutputChars: l.ResultMaxChars,
	}
	ex := &coretools.ExecuteOptions{
		DefaultTimeout:     l.ExecDefaultTimeout.D(),
		MaxTimeout:         l.ExecMaxTimeout.D(),
		Grace:              l.ExecGrace.D(),
		Heartbeat:          l.ExecHeartbeat.D(),
		MaxOutputChars:     l.ExecMaxOutputChars,
		MaxOutputFileBytes: l.ExecMaxOutputFileBytes,
		Env:                l.ExecEnv,
		OutputDir:          dataDir,
	}
	if pol := Policy(cfg); pol != nil {
		// The file tools check the same deny rules again on the object
		// they open (one matcher: package permissions).
		fs.DeniedPaths = pol.DeniedPaths
		fs.Permissions = pol.Permissions
		fs.SettingsDir = cfg.Dir
	}
	return fs, ex
}

// Policy maps the settings' approval and permissions blocks onto an
// approval.Policy (nil when approval is off): PolicyFor without a known
// workspace (relative rules are relative to the current folder).
func Policy(cfg *config.Config) *approval.Policy { return PolicyFor(cfg, "") }

// PolicyFor maps the settings onto the approval.Policy of a run in
// workspace (nil when approval.off). Today's keys become rules of the
// permission engine (package permissions documents the mapping):
//
//   - approval.confirmTools: ask rules on those tool names;
//   - approval.confirmCommands: ask rules (RE2) on each command; default
//     approval.DefaultCommandPatterns, but with a permissions block only
//     when set (the block's defaultMode decides unmatched commands);
//   - approval.deniedPaths: deny rules for Read and Edit; default
//     approval.DefaultDeniedPaths, with or without a block;
//   - approval.confirmDestructiveMCP (default true, with a block only when
//     set) and approval.confirmUnannotatedMCP: ask rules on MCP
//     annotations;
//   - permissions: the Claude Code-style block, with "/path" rules
//     relative to the settings file's folder.
func PolicyFor(cfg *config.Config, workspace string) *approval.Policy {
	a := cfg.Approval
	if a.Off {
		return nil
	}
	p := approval.DefaultPolicy()
	p.Permissions = cfg.Permissions
	p.Workspace, p.SettingsDir = workspace, cfg.Dir
	block := cfg.Permissions != nil
	p.Tools = a.ConfirmTools
	if block {
		p.CommandPatterns, p.Destructive = nil, false
	}
	if a.ConfirmCommands != nil {
		p.CommandPatterns = *a.ConfirmCommands
	}
	if a.DeniedPaths != nil {
		p.DeniedPaths = *a.DeniedPaths
	}
	if a.ConfirmDestructiveMCP != nil {
		p.Destructive = *a.ConfirmDestructiveMCP
	}
	p.Unannotated = a.ConfirmUnannotatedMCP
	return p
}
