package config

import (
	"fmt"
	"time"
)

// Defaults of the web view's settings (the web block; package web).
const (
	DefaultWebEventBuffer     = 1024             // web.eventBuffer: live events kept
	DefaultWebOutputTailBytes = 16 << 10         // web.outputTailBytes: a running call's output kept for a page load
	DefaultWebSessionTTL      = 12 * time.Hour   // web.sessionTTL: a browser session's life
	DefaultWebPageChars       = 20000            // web.pageChars: one page of a projection
	DefaultWebTasks           = 100              // web.tasks: tasks listed on the records page
	DefaultWebSearchTasks     = 200              // web.searchTasks: most recent tasks a search reads
	DefaultWebKeepAlive       = 15 * time.Second // web.keepAlive: idle interval of the event stream's comments
	DefaultWebRecentCalls     = 100              // web.recentCalls: finished calls the live page keeps
	DefaultWebApprovalTimeout = 10 * time.Minute // web.approvalTimeout: a confirm or question waiting at the browser
)

// Web configures the web view: /ui on `aibuddy mcp --http` and `aibuddy
// ui` (package web). Zero means the default given.
type Web struct {
	// EventBuffer is how many live events (stage reached, output chunk,
	// heartbeat, end) the server keeps: a browser that reconnects with
	// Last-Event-ID within them misses nothing; one further behind (or
	// too slow to read them) gets a "gap" event and reloads the snapshot.
	// Default 1024 events.
	EventBuffer int `json:"eventBuffer,omitempty"`
	// OutputTailBytes is how much of a running call's live output (bytes,
	// the newest) a page load shows. Default 16 KiB.
	OutputTailBytes int `json:"outputTailBytes,omitempty"`
	// SessionTTL is how long a browser's login lasts (the session cookie's
	// Max-Age). Default 12 h.
	SessionTTL Duration `json:"sessionTTL,omitempty"`
	// PageChars is one page of a call's projection (characters) on the
	// call page. Default 20,000.
	PageChars int `json:"pageChars,omitempty"`
	// Tasks is how many of the most recent tasks the records page lists;
	// SearchTasks how many a search by tool and stage reads. Defaults 100
	// and 200.
	Tasks       int `json:"tasks,omitempty"`
	SearchTasks int `json:"searchTasks,omitempty"`
	// KeepAlive is the interval of comment lines on an idle event stream
	// (proxies close silent connections). Default 15 s.
	KeepAlive Duration `json:"keepAlive,omitempty"`
	// RecentCalls is how many finished calls the live page keeps beside
	// the running ones (older ones are on the records pages). Default 100.
	RecentCalls int `json:"recentCalls,omitempty"`
	// ApprovalTimeout bounds how long a confirm or question waits for a
	// browser (approval.via web or both); past it the action is refused at
	// the Authorization stage. Default 10 min.
	ApprovalTimeout Duration `json:"approvalTimeout,omitempty"`
}

// validateWeb checks the web block and approval.via.
func (c *Config) validateWeb() error {
	w := c.Web
	for k, v := range map[string]int64{"web.eventBuffer": int64(w.EventBuffer), "web.outputTailBytes": int64(w.OutputTailBytes),
		"web.sessionTTL": int64(w.SessionTTL), "web.pageChars": int64(w.PageChars), "web.tasks": int64(w.Tasks),
		"web.searchTasks": int64(w.SearchTasks), "web.keepAlive": int64(w.KeepAlive), "web.recentCalls": int64(w.RecentCalls),
		"web.approvalTimeout": int64(w.ApprovalTimeout)} {
		if v < 0 {
			return fmt.Errorf("%s is negative (omit it or use 0 for its default)", k)
		}
	}
	switch c.Approval.Via {
	case "", "host", "web", "both":
	default:
		return fmt.Errorf("approval.via is %q; use \"host\" (the MCP host asks, the default), \"web\" (a browser on /ui) or \"both\"", c.Approval.Via)
	}
	return nil
}

// or returns v, or def when v is 0.
func (w Web) or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Resolved returns w with every zero field set to its default.
func (w Web) Resolved() Web {
	w.EventBuffer = w.or(w.EventBuffer, DefaultWebEventBuffer)
	w.OutputTailBytes = w.or(w.OutputTailBytes, DefaultWebOutputTailBytes)
	w.PageChars = w.or(w.PageChars, DefaultWebPageChars)
	w.Tasks = w.or(w.Tasks, DefaultWebTasks)
	w.SearchTasks = w.or(w.SearchTasks, DefaultWebSearchTasks)
	w.RecentCalls = w.or(w.RecentCalls, DefaultWebRecentCalls)
	if w.SessionTTL == 0 {
		w.SessionTTL = Duration(DefaultWebSessionTTL)
	}
	if w.ApprovalTimeout == 0 {
		w.ApprovalTimeout = Duration(DefaultWebApprovalTimeout)
	}
	if w.KeepAlive == 0 {
		w.KeepAlive = Duration(DefaultWebKeepAlive)
	}
	return w
}
