package discovery_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/tool"
)

// TestDecideExpectingCountsPendingServers: the gates count the tools that
// servers still connecting are expected to bring, so 20 known tools with
// 50 servers pending (one tool each expected) are deferred from the start,
// while the same 20 tools with 5 pending stay direct.
func TestDecideExpectingCountsPendingServers(t *testing.T) {
	entries := append(core(t, "read_file"), append(server(t, "a", 10), server(t, "b", 10)...)...)
	pending := discovery.Pending{}
	for i := range 50 {
		pending[string(rune('c'+i%20))+strings.Repeat("x", i/20)] = 1
	}
	ds := discovery.DecideExpecting(entries, discovery.Gates{}, pending)
	got := exposures(ds)
	if got["a"][discovery.Deferred] != 10 || got["b"][discovery.Deferred] != 10 || got["(core)"][discovery.Direct] != 1 {
		t.Fatalf("with 50 servers pending: %v, want a and b deferred, core direct", got)
	}
	if g := ds[1].Gate; !strings.Contains(g, "70 MCP tools in all (20 listed, 50 expected from 50 servers still connecting) > 30") {
		t.Errorf("gate text %q does not give the counts", g)
	}
	if !discovery.ExpectDeferral(entries, discovery.Gates{}, pending) {
		t.Error("ExpectDeferral false with 70 expected tools over a total gate of 30")
	}
	few := discovery.Pending{"c": 1, "d": 1, "e": 1, "f": 1, "g": 1}
	got = exposures(discovery.DecideExpecting(entries, discovery.Gates{}, few))
	if got["a"][discovery.Direct] != 10 || got["b"][discovery.Direct] != 10 {
		t.Errorf("with 5 servers pending (25 tools in all): %v, want a and b direct", got)
	}
	if discovery.ExpectDeferral(entries, discovery.Gates{}, few) {
		t.Error("ExpectDeferral true with 25 expected tools")
	}
	// One pending server known (from last time) to bring 12 tools: its
	// per-server gate fires when it joins, so tool_search is expected.
	if !discovery.ExpectDeferral(entries, discovery.Gates{}, discovery.Pending{"big": 12}) {
		t.Error("ExpectDeferral false for a pending server expected to bring 12 tools > 10")
	}
	if discovery.ExpectDeferral(entries, discovery.Gates{}, nil) {
		t.Error("ExpectDeferral true with nothing pending")
	}
}

// TestToolSearchListedBeforeAnyToolIsDeferred: with deferral expected and
// nothing deferred yet, tool_search is active, its description says how
// many servers are still connecting, and a search says nothing is
// deferred yet; a catalog with those servers joined states their count.
func TestToolSearchListedBeforeAnyToolIsDeferred(t *testing.T) {
	pending := discovery.Pending{}
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		pending[s] = 9
	}
	cat := discovery.NewCatalogWith(core(t, "read_file"), &discovery.Options{Pending: pending})
	if cat.Deferred() != 0 || !cat.Searchable() {
		t.Fatalf("deferred %d, searchable %v: want 0 and true", cat.Deferred(), cat.Searchable())
	}
	r := cat.NewRun()
	var names []string
	for _, tl := range r.Active() {
		names = append(names, tl.Name())
	}
	if !slices.Equal(names, []string{"read_file", discovery.ToolSearchName}) {
		t.Fatalf("active %v, want read_file and tool_search", names)
	}
	desc := r.ToolSearch().Description()
	if !strings.Contains(desc, "Search the 0 tools") || !strings.Contains(desc, "4 more MCP server(s) are still connecting") {
		t.Errorf("description %q does not state 0 deferred and 4 servers connecting", desc)
	}
	res := r.Dispatch(context.Background(), &tool.Call{Name: discovery.ToolSearchName, Input: json.RawMessage(`{"query":"anything"}`)}, nil)
	if res.IsError || !strings.Contains(res.AllText(), "4 MCP server(s) are still connecting") {
		t.Errorf("search before any server joined: %s", res.AllText())
	}

	var joined []discovery.Entry
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		joined = append(joined, server(t, s, 9)...)
	}
	full := discovery.NewCatalogWith(append(core(t, "read_file"), joined...), nil)
	if full.Deferred() != 36 {
		t.Fatalf("deferred %d, want 36", full.Deferred())
	}
	desc = full.NewRun().ToolSearch().Description()
	if !strings.Contains(desc, "Search the 36 tools") || strings.Contains(desc, "still connecting") {
		t.Errorf("settled description %q", desc)
	}
}
