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
		fs.DeniedPaths = pol.DeniedPaths
	}
	return fs, ex
}

// Policy maps the settings' approval block onto an approval.Policy (nil
// when approval is off): approval.DefaultPolicy with each configured list
// replacing its default.
func Policy(cfg *config.Config) *approval.Policy {
	a := cfg.Approval
	if a.Off {
		return nil
	}
	p := approval.DefaultPolicy()
	p.Tools = a.ConfirmTools
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
