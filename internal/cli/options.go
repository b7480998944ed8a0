package cli

import (
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/sandbox/confine"
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

// ConfineSettings maps the settings' sandbox block onto execute's
// confinement (sandbox.confinement, network, allowedDomains, denyRead,
// readOnlyPaths, writablePaths) with the workspace's denied paths from
// approval.deniedPaths (its default when omitted; kept when approval.off,
// which turns off confirmation, not confinement).
func ConfineSettings(cfg *config.Config) *confine.Settings {
	sb := cfg.Sandbox
	s := &confine.Settings{Confinement: sb.Confinement, Network: sb.Network, AllowedDomains: sb.AllowedDomains,
		WritablePaths: sb.WritablePaths, DenyPatterns: approval.DefaultPolicy().DeniedPaths}
	if sb.DenyRead != nil {
		s.DenyRead = append([]string{}, *sb.DenyRead...)
	}
	if sb.ReadOnlyPaths != nil {
		s.ReadOnlyPaths = append([]string{}, *sb.ReadOnlyPaths...)
	}
	if d := cfg.Approval.DeniedPaths; d != nil {
		s.DenyPatterns = append([]string{}, *d...)
	}
	return s
}

// ServerConfinement resolves a stdio MCP server's confinement: its own
// "sandbox" entry, else sandbox.mcpServersDefault, else off (an entry that
// leaves out "confinement" means workspace-write on Linux); the other
// rules (denyRead, readOnlyPaths, writablePaths, deniedPaths) are the
// sandbox block's, over the run's workspace.
func ServerConfinement(cfg *config.Config, workspace string) func(mcpclient.ServerConfig) (*confine.Policy, error) {
	return func(sc mcpclient.ServerConfig) (*confine.Policy, error) {
		s := ConfineSettings(cfg)
		s.Confinement, s.Network, s.AllowedDomains = string(confine.Off), "", nil
		if d := cfg.Sandbox.MCPServersDefault; d != nil {
			s.Confinement, s.Network, s.AllowedDomains = d.Confinement, d.Network, d.AllowedDomains
		}
		if sc.Sandbox != nil {
			s.Confinement, s.Network, s.AllowedDomains = sc.Sandbox.Confinement, sc.Sandbox.Network, sc.Sandbox.AllowedDomains
		}
		// An entry without "confinement" means the sandbox's default
		// (workspace-write on Linux): naming a sandbox asks for one.
		return confine.NewPolicy(*s, workspace, "")
	}
}
