package discovery

import (
	"slices"
	"sort"

	"github.com/aibuddy/aibuddy/tool"
)

// ToolSearchName is the wire name of the search tool. The catalog reserves
// it: an entry with this name is ignored.
const ToolSearchName = "tool_search"

// Options configure a Catalog. The zero value (or nil) means every default.
type Options struct {
	// Gates are the count gates; zero fields take the seed's defaults.
	Gates Gates
	// DefaultResults is how many candidates tool_search returns when the
	// model gives no max_results. Default 5.
	DefaultResults int
	// MaxResults caps max_results. Default 10.
	MaxResults int
	// MaxOutput caps the text of one tool_search answer, in bytes. Default
	// 20,000. Candidates that would pass it are left out (and not
	// activated), and the answer says how many; the first candidate is
	// always given whole, because a schema cut short is unusable.
	MaxOutput int
	// Pending are the MCP servers still connecting with the tools each is
	// expected to bring (see [Pending]); nil when every server has answered.
	// The gates count them ([DecideExpecting]), and tool_search is listed
	// while their tools are expected to be deferred ([ExpectDeferral]),
	// before any is. Unlike the fields above it describes one moment, so
	// a host builds a new catalog as servers join.
	Pending Pending
}

// Defaults of [Options].
const (
	DefaultResults   = 5
	DefaultMaxResult = 10
	DefaultMaxOutput = 20000
)

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	v.Gates = v.Gates.withDefaults()
	if v.DefaultResults <= 0 {
		v.DefaultResults = DefaultResults
	}
	if v.MaxResults <= 0 {
		v.MaxResults = DefaultMaxResult
	}
	if v.DefaultResults > v.MaxResults {
		v.DefaultResults = v.MaxResults
	}
	if v.MaxOutput <= 0 {
		v.MaxOutput = DefaultMaxOutput
	}
	return v
}

// Catalog is the narrowing of one resolved tool set (seed: "The catalog
// narrows progressively into the active tool set"): the entries, the gate
// decision for each, and the deferred index. It is built once per
// resolution and is read-only afterwards, so any number of runs may share
// it; the state of one run lives in a [Run].
type Catalog struct {
	opts      Options
	entries   []Entry
	decisions []Decision
	byName    map[string]int // name -> position in entries
	deferred  []bool         // by position in entries
	nDeferred int
	servers   map[string]int // server -> deferred tools from it
	docs      []IndexEntry   // the deferred index, in entry order
	toolOf    []int          // index doc -> position in entries
	index     *index
	unusable  map[string]error // direct tools whose schema did not compile
	expecting bool             // pending servers' tools are expected to be deferred
	pending   Pending
}

// NewCatalog applies the gates g to entries and indexes the deferred
// tools. Direct tools have their input schemas compiled here (a tool
// defined with tool.Spec.CompileOnUse compiles now); one whose schema does
// not compile is never active, and a call to it is the tool's
// Discovery-stage error. Deferred tools compile when they are activated. Tool names must be unique (capability.Resolve and the MCP client
// guarantee it); a later entry with a name already seen, an entry with a
// nil Tool and an entry named [ToolSearchName] are ignored.
func NewCatalog(entries []Entry, g Gates) *Catalog {
	return NewCatalogWith(entries, &Options{Gates: g})
}

// NewCatalogWith is NewCatalog with every setting; nil opts means defaults.
func NewCatalogWith(entries []Entry, opts *Options) *Catalog {
	c := &Catalog{opts: opts.withDefaults(), byName: map[string]int{}, servers: map[string]int{}}
	for _, e := range entries {
		if e.Tool == nil || e.Tool.Name() == ToolSearchName {
			continue
		}
		if _, dup := c.byName[e.Tool.Name()]; dup {
			continue
		}
		c.byName[e.Tool.Name()] = len(c.entries)
		c.entries = append(c.entries, e)
	}
	c.decisions = DecideExpecting(c.entries, c.opts.Gates, c.opts.Pending)
	c.expecting = ExpectDeferral(c.entries, c.opts.Gates, c.opts.Pending)
	c.pending = c.opts.Pending
	c.deferred = make([]bool, len(c.entries))
	c.unusable = map[string]error{}
	for i, d := range c.decisions {
		if d.Exposure != Deferred {
			// A direct tool is listed from the first step: its schema is
			// compiled now (deferred ones at activation), and one that
			// does not compile is never listed.
			if err := c.entries[i].Tool.Compile(); err != nil {
				c.unusable[d.Tool] = err
			}
			continue
		}
		e := c.entries[i]
		c.deferred[i] = true
		c.nDeferred++
		c.servers[e.Server]++
		c.docs = append(c.docs, IndexEntry{
			Name:        e.Tool.Name(),
			Description: e.Tool.Description(),
			Params:      paramNames(e.Tool),
		})
		c.toolOf = append(c.toolOf, i)
	}
	c.index = newIndex(c.docs, defaultRank())
	return c
}

// Decisions returns the exposure of every tool with the gate that decided
// it, in entry order.
func (c *Catalog) Decisions() []Decision { return slices.Clone(c.decisions) }

// Index returns the deferred index: one entry per deferred tool (name,
// description, parameter names), in entry order. Direct and core tools are
// not in it.
func (c *Catalog) Index() []IndexEntry {
	out := make([]IndexEntry, len(c.docs))
	for i, d := range c.docs {
		d.Params = slices.Clone(d.Params)
		out[i] = d
	}
	return out
}

// Unusable reports the direct tools whose input schema did not compile
// when the catalog was built, with the *tool.DefinitionError of each.
// They are never active.
func (c *Catalog) Unusable() map[string]error {
	out := make(map[string]error, len(c.unusable))
	for k, v := range c.unusable {
		out[k] = v
	}
	return out
}

// Deferred reports how many tools are deferred.
func (c *Catalog) Deferred() int { return c.nDeferred }

// Searchable reports whether tool_search is listed: some tool is
// deferred, or the tools of servers still connecting are expected to be
// (Options.Pending).
func (c *Catalog) Searchable() bool { return c.nDeferred > 0 || c.expecting }

// Expecting reports how many servers are still connecting and how many
// tools they are expected to bring, as Options.Pending gave them.
func (c *Catalog) Expecting() (servers, tools int) { return len(c.pending), c.pending.Total() }

// Exposure returns how the named tool is exposed; false when the catalog
// has no such tool.
func (c *Catalog) Exposure(name string) (Exposure, bool) {
	i, ok := c.byName[name]
	if !ok {
		return "", false
	}
	return c.decisions[i].Exposure, true
}

// Search ranks the deferred tools for a natural-language query and returns
// at most k of them, best first; it is the ranking tool_search uses. Tools
// that share no term with the query are never returned, so the answer can
// be empty. k <= 0 returns nil.
//
// Ranking is BM25F over three fields of each deferred tool: the words of
// its name (split at case and separator boundaries: camelCase, snake_case,
// kebab-case, "<server>__<tool>") and their adjacent pairs, its
// description, and its parameter names; every word is reduced to its
// Snowball English stem and English stop words are dropped. A query of
// several sentences is also scored sentence by sentence, so each request
// in it surfaces its own tool. A query that is exactly a tool's name ranks
// that tool first. Only the first 8 KiB of a query are read. Safe for
// concurrent use.
func (c *Catalog) Search(query string, k int) []Hit {
	return c.index.search(query, k)
}

// serverCounts lists the servers of deferred tools with their counts,
// sorted by server name.
func (c *Catalog) serverCounts() []struct {
	Server string
	N      int
} {
	var out []struct {
		Server string
		N      int
	}
	for s, n := range c.servers {
		out = append(out, struct {
			Server string
			N      int
		}{s, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out
}

func (c *Catalog) tool(name string) (*tool.Tool, bool) {
	i, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return c.entries[i].Tool, true
}

func (c *Catalog) isDeferred(name string) bool {
	i, ok := c.byName[name]
	return ok && c.deferred[i]
}
