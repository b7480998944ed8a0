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
// with a nil Tool are skipped.
func Decide(entries []Entry, g Gates) []Decision {
	g = g.withDefaults()
	perServer := map[string]int{}
	total := 0
	for _, e := range entries {
		if e.Tool != nil && e.Server != "" {
			perServer[e.Server]++
			total++
		}
	}
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
