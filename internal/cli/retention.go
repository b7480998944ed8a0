package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// DefaultDataRetention is how long records and full outputs are kept when
// the settings' dataRetention is unset: 30 days.
const DefaultDataRetention = 30 * 24 * time.Hour

// pruneStamp (in the data folder) records the last retention scan;
// pruneEvery is how often one runs.
const (
	pruneStamp = ".retention-checked"
	pruneEvery = 24 * time.Hour
)

// pruneData applies the data folder's retention at start-up (at most once
// per pruneEvery): every task
// (run or MCP session) whose newest call started more than retention ago
// loses its records ([store.Pruner]), its full command outputs
// (outputs/<taskId>/) and its offloaded calls (compacted_outputs/<taskId>/);
// entries of those two folders last changed before the cutoff go too (an
// output of a call without a record, the flat layout of older builds).
// Failures are logged, never fatal: retention must not stop a run.
func pruneData(ctx context.Context, st store.Store, dataDir string, retention time.Duration, logger *slog.Logger) {
	if retention <= 0 {
		retention = DefaultDataRetention
	}
	// Every start of every command comes here (aibuddy call in a script
	// too): the scan runs at most once per pruneEvery, marked by a stamp.
	stamp := filepath.Join(dataDir, pruneStamp)
	if fi, err := os.Stat(stamp); err == nil && time.Since(fi.ModTime()) < pruneEvery {
		return
	}
	if f, err := os.Create(stamp); err == nil {
		f.Close()
	}
	cutoff := time.Now().Add(-retention)
	var tasks []string
	if p, ok := st.(store.Pruner); ok {
		var err error
		if tasks, err = p.PruneBefore(ctx, cutoff); err != nil {
			logger.Warn("data retention: pruning old records failed", "err", err)
		}
	}
	dirs := []string{outputsDir(dataDir), filepath.Join(dataDir, compact.OffloadDir)}
	removed := 0
	for _, dir := range dirs {
		for _, task := range tasks {
			p := filepath.Join(dir, tool.SafeFileName(task))
			if _, err := os.Lstat(p); err == nil {
				if err := os.RemoveAll(p); err != nil {
					logger.Warn("data retention: removing failed", "path", p, "err", err)
				} else {
					removed++
				}
			}
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			info, err := e.Info()
			if err != nil || !info.ModTime().Before(cutoff) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if err := os.RemoveAll(p); err != nil {
				logger.Warn("data retention: removing failed", "path", p, "err", err)
			} else {
				removed++
			}
		}
	}
	if len(tasks) > 0 || removed > 0 {
		logger.Info("data retention: pruned", "tasks", len(tasks), "paths", removed, "olderThan", retention)
	}
}
