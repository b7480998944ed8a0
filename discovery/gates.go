package discovery

import (
	"fmt"

	"github.com/aibuddy/aibuddy/tool"
)

// Gates are the MCP count gates (seed: "MCP currently uses two count
// gates"). The gates count tools, not context-window tokens. A zero field
// takes its default.
type Gates struct {
	// PerServer is the most tools one MCP server may bring and still be
	// exposed directly. Default 10: a server with 11 tools is deferred.
	PerServer int
	// Total is the most MCP tools, all servers together, that may be
	// exposed directly. Default 30: with 31, every MCP tool is deferred.
	Total int
}

// Default gate values, from the seed's table.
const (
	DefaultPerServer = 10
	DefaultTotal     = 30
)

func (g Gates) withDefaults() Gates {
	if g.PerServer <= 0 {
		g.PerServer = DefaultPerServer
	}
	if g.Total <= 0 {
		g.Total = DefaultTotal
	}
	return g
}

// Exposure is how a tool reaches the model.
type Exposure string

const (
	// Direct: the full schema is in the active set from the first step.
	Direct Exposure = "direct"
	// Deferred: only name and description sit in the deferred index; the
	// schema becomes active after tool_search surfaces the tool.
	Deferred Exposure = "deferred"
)

// Entry is one tool of a run's effective set, as the gates see it.
type Entry struct {
	Tool *tool.Tool
	// Server is the MCP server the tool comes from; "" for a built-in
	// core tool, which is always direct.
	Server string
}

// Rule names which row of the gate table decided an exposure.
type Rule string

const (
	RuleCore      Rule = "core"       // built-in tool: always direct
	RuleWithin    Rule = "within"     // MCP tool within both gates: direct
	RulePerServer Rule = "per_server" // its server is over PerServer: deferred
	RuleTotal     Rule = "total"      // all MCP tools together over Total: deferred
)

// Decision is the exposure of one tool and the gate that decided it, for
// people (`aibuddy tools`) and for the catalog.
type Decision struct {
	Tool     string
	Server   string // "" for a core tool
	Exposure Exposure
	// Gate says in one phrase which rule decided, with the numbers, e.g.
	// "core: always direct", "server github has 12 tools > 10: deferred",
	// "48 MCP tools in all > 30: every MCP tool deferred", "within gates
	// (server memory has 9 tools <= 10; 9 MCP tools in all <= 30)".
	Gate string
	Rule Rule
}

// Decide applies the count gates to entries, exactly the seed's table:
//
//	no server over g.PerServer and at most g.Total MCP tools -> all direct
//	a server over g.PerServer                             -> that server's tools deferred
//	more than g.Total MCP tools in all                     -> every MCP tool deferred
//
// Built-in core tools (Server "") are always direct and do not count. The
// total gate is checked first: when it fires, every MCP tool is deferred
// whatever its server's count. Decisions come back in entry order; entries
// with a nil Tool are skipped. Decide is DecideExpecting with nothing
// pending.
func Decide(entries []Entry, g Gates) []Decision {
	return DecideExpecting(entries, g, nil)
}

// Pending are the MCP servers that are configured but have not answered
// yet (still connecting), each with the number of tools it is expected to
// bring: the count it brought last time (aibuddy keeps the last known count
// per server in the data folder), else an assumed count
// (mcp.expectedToolsPerServer, default 1: a configured server brings at
// least one tool). A server that has connected is not pending: its real
// count is in the entries.
type Pending map[string]int

// Total is the sum of the expected counts.
func (p Pending) Total() int {
	n := 0
	for _, c := range p {
		if c > 0 {
			n += c
		}
	}
	return n
}

// DecideExpecting applies the count gates to the tools that are known
// (entries) plus the tools the pending servers are expected to bring, so
// the exposure is decided on what is configured rather than on who
// answered first (issue 13, "Gates on what is configured"): with 70
// configured servers of which 20 have answered, the total gate already
// counts at least 70 tools and defers every MCP tool, so the host's first
// list holds tool_search instead of 20 direct tools that would move into
// the index one list_changed later. A pending server counts for the total
// gate and for its own per-server gate (see [ExpectDeferral]); it has no
// entries, so it gets no decision here. Rule (a tool-count analogue of
// Claude Code's tool search "auto" mode, which defers once MCP tool
// definitions would pass a share of the context window, counted over every
// configured server rather than those connected so far): the seed's gates,
// over actual counts for connected servers and expected counts for
// pending ones.
func DecideExpecting(entries []Entry, g Gates, pending Pending) []Decision {
	g = g.withDefaults()
	perServer := map[string]int{}
	known := 0
	for _, e := range entries {
		if e.Tool != nil && e.Server != "" {
			perServer[e.Server]++
			known++
		}
	}
	expected := pending.Total()
	total := known + expected
	out := make([]Decision, 0, len(entries))
	for _, e := range entries {
		if e.Tool == nil {
			continue
		}
		d := Decision{Tool: e.Tool.Name(), Server: e.Server}
		n := perServer[e.Server]
		switch {
		case e.Server == "":
			d.Exposure, d.Rule, d.Gate = Direct, RuleCore, "core: always direct"
		case total > g.Total && expected > 0:
			d.Exposure, d.Rule = Deferred, RuleTotal
			d.Gate = fmt.Sprintf("%d MCP tools in all (%d listed, %d expected from %d servers still connecting) > %d: every MCP tool deferred",
				total, known, expected, len(pending), g.Total)
		case total > g.Total:
			d.Exposure, d.Rule = Deferred, RuleTotal
			d.Gate = fmt.Sprintf("%d MCP tools in all > %d: every MCP tool deferred", total, g.Total)
		case n > g.PerServer:
			d.Exposure, d.Rule = Deferred, RulePerServer
			d.Gate = fmt.Sprintf("server %s has %d tools > %d: deferred", e.Server, n, g.PerServer)
		default:
			d.Exposure, d.Rule = Direct, RuleWithin
			d.Gate = fmt.Sprintf("within gates (server %s has %d tools <= %d; %d MCP tools in all <= %d)",
				e.Server, n, g.PerServer, total, g.Total)
		}
		out = append(out, d)
	}
	return out
}

// ExpectDeferral reports whether some pending server's tools are expected
// to be deferred when it joins: the known and expected MCP tools together
// pass g.Total, or one pending server is expected to bring more than
// g.PerServer. Then tool_search is listed from the start, so the host
// holds it before those tools arrive.
func ExpectDeferral(entries []Entry, g Gates, pending Pending) bool {
	g = g.withDefaults()
	if len(pending) == 0 {
		return false
	}
	total := pending.Total()
	for _, e := range entries {
		if e.Tool != nil && e.Server != "" {
			total++
		}
	}
	if total > g.Total {
		return true
	}
	for _, n := range pending {
		if n > g.PerServer {
			return true
		}
	}
	return false
}
