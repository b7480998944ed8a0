package agent

import (
	"slices"
	"sync"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/provider"
)

// toolState is a run's view of its tools: the set, its catalog (gate
// decisions) and the discovery run over that catalog. Options.CurrentSet
// may replace all three between steps; calls still running read them
// under mu.
type toolState struct {
	mu      sync.Mutex
	set     *capability.Set
	catalog *discovery.Catalog
	dr      *discovery.Run
	// searched are the deferred tools activated in this run by tool_search
	// or by the provider's own search (not those active only because a
	// retained call references them): they stay active across a refresh.
	searched  []string
	retaining bool // inside Retain: its activations are not searches
}

// initTools starts the run's discovery over the agent's set and catalog.
func (r *run) initTools() {
	t := &r.tools
	t.set, t.catalog = r.a.opts.Set, r.a.catalog
	t.dr = r.newDiscovery(t.catalog)
}

// newDiscovery returns a fresh discovery run of c that remembers the
// run's activations, with those already made carried over.
func (r *run) newDiscovery(c *discovery.Catalog) *discovery.Run {
	dr := c.NewRun()
	t := &r.tools
	dr.Activate(t.searched...)
	dr.OnActivate(func(names []string) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.retaining || dr != t.dr {
			return
		}
		for _, n := range names {
			if !slices.Contains(t.searched, n) {
				t.searched = append(t.searched, n)
			}
		}
	})
	return dr
}

// refreshTools asks Options.CurrentSet for the set as it is now and, when
// it is another set than the run's, re-resolves the run over it: a new
// catalog (the count gates see the new tool counts), a new discovery run
// with the tool_search activations kept (those whose tools still exist
// and are still deferred; a tool that is now direct needs none). Tools of
// a removed server are gone from the next request; a call the model still
// makes to one is refused at the Discovery stage.
func (r *run) refreshTools() {
	if r.a.opts.CurrentSet == nil {
		return
	}
	next := r.a.opts.CurrentSet()
	t := &r.tools
	t.mu.Lock()
	same := next == nil || next == t.set
	t.mu.Unlock()
	if same {
		return
	}
	c := discovery.NewCatalogWith(discovery.EntriesOf(next), r.a.opts.Discovery)
	dr := r.newDiscovery(c)
	t.mu.Lock()
	t.set, t.catalog, t.dr = next, c, dr
	t.mu.Unlock()
	r.a.opts.Logger.Info("agent: the tool set changed; tools re-resolved for the next step",
		"task", r.taskID, "step", r.step, "tools", len(next.Tools()), "deferred", c.Deferred())
}

// set is the run's current tool set.
func (r *run) set() *capability.Set {
	r.tools.mu.Lock()
	defer r.tools.mu.Unlock()
	return r.tools.set
}

// discovery is the run's current discovery run.
func (r *run) discovery() *discovery.Run {
	r.tools.mu.Lock()
	defer r.tools.mu.Unlock()
	return r.tools.dr
}

// retain is discovery.Run.Retain whose activations are not counted as
// searches (they end when the reference leaves the context).
func (r *run) retain(names []string) {
	t := &r.tools
	t.mu.Lock()
	t.retaining = true
	dr := t.dr
	t.mu.Unlock()
	dr.Retain(names)
	t.mu.Lock()
	t.retaining = false
	t.mu.Unlock()
}

// activateNative activates a deferred tool the provider's own tool search
// loaded (native strategy) when the model calls it.
func (r *run) activateNative(name string) {
	t := &r.tools
	t.mu.Lock()
	dr, c := t.dr, t.catalog
	t.mu.Unlock()
	if dr.IsActive(name) {
		return
	}
	if e, ok := c.Exposure(name); ok && e == discovery.Deferred {
		dr.Activate(name)
	}
}

// present returns the tools array of one request (seed: "Both strategies
// consume the same defer decision; only schema presentation differs").
func (r *run) present(native bool) []provider.Tool {
	t := &r.tools
	t.mu.Lock()
	set, c, dr := t.set, t.catalog, t.dr
	t.mu.Unlock()
	var out []provider.Tool
	if !native {
		for _, t := range dr.Active() {
			out = append(out, provider.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()})
		}
		return out
	}
	for _, d := range c.Decisions() {
		t, ok := set.Tool(d.Tool)
		if !ok {
			continue
		}
		out = append(out, provider.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema(),
			Deferred: d.Exposure == discovery.Deferred})
	}
	return out
}
