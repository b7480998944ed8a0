package cli

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/mcpclient"
)

// DefaultListChangedInterval is mcp.listChangedInterval when unset.
const DefaultListChangedInterval = 250 * time.Millisecond

// DefaultExpectedToolsPerServer is mcp.expectedToolsPerServer when unset.
const DefaultExpectedToolsPerServer = 1

// expectations are what the count gates of `aibuddy mcp` expect of the
// servers still connecting (issue 13, "Gates on what is configured, not on
// who answered first"): the count each server brought last time, kept in
// the data folder's mcpclient.ToolCountsFile, else
// mcp.expectedToolsPerServer. It also keeps that file up to date as
// servers connect.
type expectations struct {
	m      *mcpclient.Manager
	path   string
	assume int
	last   map[string]int // as read at start; read-only

	mu    sync.Mutex
	saved map[string]int // what the file holds now
}

// newExpectations reads the last known counts (a file that cannot be read
// is logged and treated as empty: the counts are a hint).
func (r *run) newExpectations() *expectations {
	if r.mcp == nil {
		return nil
	}
	e := &expectations{m: r.mcp, path: filepath.Join(r.dataDir, mcpclient.ToolCountsFile),
		assume: r.cfg.MCP.ExpectedToolsPerServer}
	if e.assume <= 0 {
		e.assume = DefaultExpectedToolsPerServer
	}
	last, err := mcpclient.ReadToolCounts(e.path)
	if err != nil {
		r.logger.Warn("MCP tool counts of the last start are not used; servers still connecting are expected to bring mcp.expectedToolsPerServer tools each",
			"err", err)
	}
	e.last, e.saved = last, last
	return e
}

// pending is mcpserver.Options.Pending.
func (e *expectations) pending() discovery.Pending {
	if e == nil {
		return nil
	}
	p := e.m.Expected(e.last, e.assume)
	if len(p) == 0 {
		return nil
	}
	return discovery.Pending(p)
}

// save writes the counts of the servers connected now into the file when
// they differ from what it holds.
func (e *expectations) save() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	merged, changed := mcpclient.MergeCounts(e.saved, e.m.Counts())
	if !changed {
		return nil
	}
	if err := mcpclient.WriteToolCounts(e.path, merged); err != nil {
		return err
	}
	e.saved = merged
	return nil
}

// watchUpstream refreshes every gateway after upstream changes (a server
// joined, failed, changed its tools or went away), at most once per
// interval: the first change after a quiet time is taken at once, the
// changes that come while a refresh runs or within interval of it are
// taken together in the next one. So a burst of servers joining costs a
// few refreshes (each re-resolves the set and rebuilds the deferred
// index) and the host a few notifications/tools/list_changed, not one per
// server. After each refresh the connected servers' counts are saved for
// the next start. It returns a stop function that waits for the watcher.
func (g *gateways) watchUpstream(ctx context.Context, m *mcpclient.Manager, e *expectations, interval time.Duration) (stop func()) {
	if interval <= 0 {
		interval = DefaultListChangedInterval
	}
	kick := make(chan struct{}, 1)
	kick <- struct{}{} // a change before the subscription, and the first save
	unsubscribe := m.Subscribe(func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		settled := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			g.refresh()
			if err := e.save(); err != nil {
				g.r.logger.Warn("saving the MCP servers' tool counts for the next start", "err", err)
			}
			if !settled && len(e.pending()) == 0 {
				settled = true
				g.r.logger.Info("every MCP server has answered; the tool list is settled")
			}
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		unsubscribe()
		cancel()
		<-done
	}
}
