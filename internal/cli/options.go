package cli

import (
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
	}
	ex := &coretools.ExecuteOptions{
		DefaultTimeout: l.ExecDefaultTimeout.D(),
		MaxTimeout:     l.ExecMaxTimeout.D(),
		Grace:          l.ExecGrace.D(),
		Heartbeat:      l.ExecHeartbeat.D(),
		MaxOutputChars: l.ExecMaxOutputChars,
		Env:            l.ExecEnv,
		OutputDir:      dataDir,
	}
	return fs, ex
}
