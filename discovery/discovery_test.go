package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/tool"
)

// mk defines a real tool whose handler counts its calls.
func mk(t testing.TB, name, desc string, params ...string) (*tool.Tool, *atomic.Int32) {
	t.Helper()
	props := map[string]any{}
	for _, p := range params {
		props[p] = map[string]any{"type": "string", "description": "the " + p}
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	var n atomic.Int32
	tl, err := tool.Define(tool.Spec{
		Name: name, Description: desc, InputSchema: schema,
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			n.Add(1)
			return tool.Text("ran " + name), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tl, &n
}

// server returns n generic tools of one MCP server, named <server>__tool<i>.
func server(t testing.TB, name string, n int) []discovery.Entry {
	var out []discovery.Entry
	for i := range n {
		tl, _ := mk(t, fmt.Sprintf("%s__tool%d", name, i), fmt.Sprintf("Tool %d of %s", i, name))
		out = append(out, discovery.Entry{Tool: tl, Server: name})
	}
	return out
}

func core(t testing.TB, names ...string) []discovery.Entry {
	var out []discovery.Entry
	for _, n := range names {
		tl, _ := mk(t, n, "core tool "+n)
		out = append(out, discovery.Entry{Tool: tl})
	}
	return out
}

func exposures(ds []discovery.Decision) map[string]map[discovery.Exposure]int {
	out := map[string]map[discovery.Exposure]int{}
	for _, d := range ds {
		k := d.Server
		if k == "" {
			k = "(core)"
		}
		if out[k] == nil {
			out[k] = map[discovery.Exposure]int{}
		}
		out[k][d.Exposure]++
	}
	return out
}

func TestDecideGates(t *testing.T) {
	D, F := discovery.Direct, discovery.Deferred
	type want map[string]map[discovery.Exposure]int
	cases := []struct {
		name    string
		servers map[string]int
		gates   discovery.Gates
		want    want
		rule    discovery.Rule // rule of the first MCP decision
		gate    string         // substring of the first MCP decision's Gate
	}{
		{"memory alone: all direct", map[string]int{"memory": 9}, discovery.Gates{},
			want{"(core)": {D: 2}, "memory": {D: 9}}, discovery.RuleWithin, "within gates"},
		{"10 on one server is within", map[string]int{"a": 10}, discovery.Gates{},
			want{"(core)": {D: 2}, "a": {D: 10}}, discovery.RuleWithin, "has 10 tools <= 10"},
		{"11 on one server defers only it", map[string]int{"a": 11, "b": 9}, discovery.Gates{},
			want{"(core)": {D: 2}, "a": {F: 11}, "b": {D: 9}}, discovery.RulePerServer, "server a has 11 tools > 10: deferred"},
		{"memory + everything", map[string]int{"everything": 13, "memory": 9}, discovery.Gates{},
			want{"(core)": {D: 2}, "everything": {F: 13}, "memory": {D: 9}}, discovery.RulePerServer, "server everything has 13 tools > 10"},
		{"30 in all is within", map[string]int{"a": 10, "b": 10, "c": 10}, discovery.Gates{},
			want{"(core)": {D: 2}, "a": {D: 10}, "b": {D: 10}, "c": {D: 10}}, discovery.RuleWithin, "30 MCP tools in all <= 30"},
		{"31 in all defers every MCP tool", map[string]int{"a": 10, "b": 10, "c": 11}, discovery.Gates{},
			want{"(core)": {D: 2}, "a": {F: 10}, "b": {F: 10}, "c": {F: 11}}, discovery.RuleTotal, "31 MCP tools in all > 30: every MCP tool deferred"},
		{"all three seed servers", map[string]int{"memory": 9, "everything": 13, "filesystem": 14}, discovery.Gates{},
			want{"(core)": {D: 2}, "memory": {F: 9}, "everything": {F: 13}, "filesystem": {F: 14}}, discovery.RuleTotal, "36 MCP tools in all > 30"},
		{"configured per-server gate", map[string]int{"a": 4, "b": 3}, discovery.Gates{PerServer: 3},
			want{"(core)": {D: 2}, "a": {F: 4}, "b": {D: 3}}, discovery.RulePerServer, "server a has 4 tools > 3"},
		{"configured total gate", map[string]int{"a": 3, "b": 3}, discovery.Gates{Total: 5},
			want{"(core)": {D: 2}, "a": {F: 3}, "b": {F: 3}}, discovery.RuleTotal, "6 MCP tools in all > 5"},
		{"configured total gate at its boundary", map[string]int{"a": 3, "b": 2}, discovery.Gates{Total: 5},
			want{"(core)": {D: 2}, "a": {D: 3}, "b": {D: 2}}, discovery.RuleWithin, "5 MCP tools in all <= 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries := core(t, "read_file", "execute")
			names := make([]string, 0, len(tc.servers))
			for s := range tc.servers {
				names = append(names, s)
			}
			slices.Sort(names)
			for _, s := range names {
				entries = append(entries, server(t, s, tc.servers[s])...)
			}
			ds := discovery.Decide(entries, tc.gates)
			got := exposures(ds)
			if fmt.Sprint(got) != fmt.Sprint(map[string]map[discovery.Exposure]int(tc.want)) {
				t.Errorf("exposures = %v, want %v", got, tc.want)
			}
			if ds[0].Rule != discovery.RuleCore || ds[0].Gate != "core: always direct" {
				t.Errorf("core decision = %+v", ds[0])
			}
			var first discovery.Decision
			for _, d := range ds {
				if d.Server == names[0] {
					first = d
					break
				}
			}
			if first.Rule != tc.rule || !strings.Contains(first.Gate, tc.gate) {
				t.Errorf("decision for %s = %+v, want rule %s and gate containing %q", names[0], first, tc.rule, tc.gate)
			}
		})
	}
}

// fixture: core read_file, a small direct server, a large deferred one.
type fixture struct {
	cat     *discovery.Catalog
	calls   map[string]*atomic.Int32
	entries []discovery.Entry
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{calls: map[string]*atomic.Int32{}}
	add := func(server, name, desc string, params ...string) {
		tl, n := mk(t, name, desc, params...)
		f.calls[name] = n
		f.entries = append(f.entries, discovery.Entry{Tool: tl, Server: server})
	}
	add("", "read_file", "Read a file from the workspace.", "path")
	add("memory", "memory__create_entities", "Create entities in the knowledge graph.", "entities")
	add("github", "github__create_issue", "Create a new issue in a GitHub repository.", "owner", "repo", "title", "body")
	add("github", "github__list_pull_requests", "List pull requests of a repository.", "owner", "repo", "state")
	add("github", "github__get_file_contents", "Get the contents of a file or directory from a repository.", "owner", "repo", "path")
	add("github", "github__search_code", "Search for code across GitHub repositories.", "query")
	add("github", "github__merge_pull_request", "Merge a pull request.", "owner", "repo", "pull_number")
	add("github", "github__create_branch", "Create a new branch in a repository.", "owner", "repo", "branch")
	add("github", "github__fork_repository", "Fork a repository to your account.", "owner", "repo")
	add("github", "github__add_issue_comment", "Add a comment to an existing issue.", "owner", "repo", "issue_number", "body")
	add("github", "github__list_commits", "List the commits of a branch.", "owner", "repo", "sha")
	add("github", "github__push_files", "Push several files in one commit.", "owner", "repo", "files")
	add("github", "github__create_repository", "Create a new GitHub repository.", "name", "private")
	f.cat = discovery.NewCatalog(f.entries, discovery.Gates{})
	return f
}

func call(name, input string) *tool.Call {
	return &tool.Call{ID: "call_" + name, Name: name, Input: json.RawMessage(input)}
}

func run(r *discovery.Run, ctx context.Context, c *tool.Call) *tool.Result {
	return r.Dispatch(ctx, c, func(ctx context.Context, c *tool.Call) *tool.Result {
		t, ok := r.Tool(c.Name)
		if !ok {
			panic("Dispatch forwarded an inactive tool " + c.Name)
		}
		return t.Call(ctx, c)
	})
}

func names(ts []*tool.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return out
}

func TestIndexHoldsOnlyDeferredNamesAndDescriptions(t *testing.T) {
	f := newFixture(t)
	idx := f.cat.Index()
	if len(idx) != 11 || f.cat.Deferred() != 11 {
		t.Fatalf("index has %d entries (Deferred %d), want the 11 github tools", len(idx), f.cat.Deferred())
	}
	for _, e := range idx {
		if !strings.HasPrefix(e.Name, "github__") {
			t.Errorf("index holds %s, which is not deferred", e.Name)
		}
		tl, _ := f.catTool(e.Name)
		if e.Description != tl.Description() {
			t.Errorf("%s: description %q, want %q", e.Name, e.Description, tl.Description())
		}
	}
	if got := idx[0]; got.Name != "github__create_issue" || !slices.Equal(got.Params, []string{"body", "owner", "repo", "title"}) {
		t.Errorf("first entry = %+v", got)
	}
	for _, n := range []string{"read_file", "memory__create_entities"} {
		if e, ok := f.cat.Exposure(n); !ok || e != discovery.Direct {
			t.Errorf("%s exposure = %q, %v; want direct", n, e, ok)
		}
	}
	// Direct tools are not searchable: a query for one finds nothing.
	if hits := f.cat.Search("knowledge graph entities", 5); len(hits) != 0 {
		t.Errorf("search for a direct tool returned %v", hits)
	}
}

func (f *fixture) catTool(name string) (*tool.Tool, bool) {
	for _, e := range f.entries {
		if e.Tool.Name() == name {
			return e.Tool, true
		}
	}
	return nil, false
}

func TestSearchRanksObviousMatchFirst(t *testing.T) {
	f := newFixture(t)
	for q, want := range map[string]string{
		"new issue in a repository":   "github__create_issue",
		"create issue":                "github__create_issue",
		"merge a PR":                  "github__merge_pull_request",
		"merging pull requests":       "github__merge_pull_request",
		"list the commits":            "github__list_commits",
		"comment on an issue":         "github__add_issue_comment",
		"github__fork_repository":     "github__fork_repository",
		"GITHUB__PUSH_FILES":          "github__push_files",
		"what is the issue number?":   "github__add_issue_comment",
		"read file contents from git": "github__get_file_contents",
	} {
		hits := f.cat.Search(q, 3)
		if len(hits) == 0 || hits[0].Name != want {
			t.Errorf("Search(%q) = %v, want %s first", q, hits, want)
		}
	}
	if hits := f.cat.Search("bake a sourdough loaf", 5); len(hits) != 0 {
		t.Errorf("unrelated query matched %v", hits)
	}
	if hits := f.cat.Search("repository", 2); len(hits) != 2 || hits[0].Score < hits[1].Score {
		t.Errorf("k not respected or not sorted: %v", hits)
	}
}

func TestSplitWordsThroughSearch(t *testing.T) {
	// Names split at case and separator boundaries: each style is found
	// by its plain words.
	var entries []discovery.Entry
	for _, n := range []string{"getWeatherForecast", "send_slack_message", "resize-image", "srv__HTMLToMarkdown", "calcCO2Emissions"} {
		tl, _ := mk(t, n, "a tool")
		entries = append(entries, discovery.Entry{Tool: tl, Server: "s"})
	}
	cat := discovery.NewCatalog(entries, discovery.Gates{PerServer: 1})
	for q, want := range map[string]string{
		"weather forecast":         "getWeatherForecast",
		"slack message":            "send_slack_message",
		"resize an image":          "resize-image",
		"convert html to markdown": "srv__HTMLToMarkdown",
		"co2 emissions":            "calcCO2Emissions",
	} {
		if hits := cat.Search(q, 1); len(hits) != 1 || hits[0].Name != want {
			t.Errorf("Search(%q) = %v, want %s", q, hits, want)
		}
	}
}

func TestToolSearchSelectExact(t *testing.T) {
	f := newFixture(t)
	r := f.cat.NewRun()
	res := run(r, context.Background(), call("tool_search", `{"query":"select:github__push_files, github__list_commits,nope,read_file"}`))
	if res.IsError {
		t.Fatal(res.AllText())
	}
	text := res.AllText()
	for _, s := range []string{
		"## github__push_files", "## github__list_commits",
		`"properties":{"files":`, // the full schema, compacted
		`No tool is named "nope"`, "read_file is already loaded",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("answer lacks %q:\n%s", s, text)
		}
	}
	if got := res.Evidence["activated"]; !slices.Equal(got.([]string), []string{"github__push_files", "github__list_commits"}) {
		t.Errorf("activated = %v", got)
	}
	if !r.IsActive("github__push_files") || !r.IsActive("github__list_commits") || r.IsActive("github__create_issue") {
		t.Errorf("active = %v", names(r.Active()))
	}
}

func TestToolSearchNaturalLanguageActivatesAndReturnsSchemas(t *testing.T) {
	f := newFixture(t)
	r := f.cat.NewRun()
	res := run(r, context.Background(), call("tool_search", `{"query":"open a new issue","max_results":2}`))
	text := res.AllText()
	if !strings.Contains(text, "## github__create_issue\nCreate a new issue in a GitHub repository.\nInput schema: {") {
		t.Fatalf("answer:\n%s", text)
	}
	if n := strings.Count(text, "\n## "); n != 2 {
		t.Errorf("max_results 2 gave %d tools:\n%s", n, text)
	}
	res = run(r, context.Background(), call("github__create_issue", `{"owner":"o","repo":"r","title":"t"}`))
	if res.IsError || res.AllText() != "ran github__create_issue" {
		t.Errorf("call after search = %v %q", res.IsError, res.AllText())
	}
}

func TestToolSearchSaysNothingMatched(t *testing.T) {
	f := newFixture(t)
	r := f.cat.NewRun()
	res := run(r, context.Background(), call("tool_search", `{"query":"bake sourdough"}`))
	if res.IsError || !strings.Contains(res.AllText(), `No deferred tool matched "bake sourdough", so nothing was loaded`) {
		t.Errorf("answer = %v %q", res.IsError, res.AllText())
	}
	if len(r.Active()) != 3 { // read_file, memory__create_entities, tool_search
		t.Errorf("active = %v", names(r.Active()))
	}
	res = run(r, context.Background(), call("tool_search", `{"query":""}`))
	if !res.IsError || res.Stage != tool.Parameters {
		t.Errorf("empty query = %+v", res)
	}
}

func TestToolSearchOutputBounded(t *testing.T) {
	f := newFixture(t)
	cat := discovery.NewCatalogWith(f.entries, &discovery.Options{MaxOutput: 400, MaxResults: 3})
	r := cat.NewRun()
	res := run(r, context.Background(), call("tool_search", `{"query":"repository","max_results":50}`))
	text := res.AllText()
	if n := strings.Count(text, "\n## "); n < 1 || n >= 3 {
		t.Errorf("%d tools shown in a 400-byte answer:\n%s", n, text)
	}
	if !strings.Contains(text, "left out by tool_search's 400-byte answer limit and not loaded") ||
		!strings.Contains(text, "max_results was capped at 3") {
		t.Errorf("answer does not say it was capped:\n%s", text)
	}
	act := res.Evidence["activated"].([]string)
	for _, n := range act {
		if !strings.Contains(text, "## "+n+"\n") {
			t.Errorf("%s activated but not shown", n)
		}
	}
	if got := len(r.Active()); got != 3+len(act) {
		t.Errorf("active %v, want only the shown tools added", names(r.Active()))
	}
}

func TestActivationPersistsInRunNotAcrossRuns(t *testing.T) {
	f := newFixture(t)
	r1 := f.cat.NewRun()
	if got := names(r1.Active()); !slices.Equal(got, []string{"read_file", "memory__create_entities", "tool_search"}) {
		t.Fatalf("initial active = %v", got)
	}
	if got := r1.Activate("github__fork_repository", "github__create_branch", "unknown", "read_file"); !slices.Equal(got, []string{"github__fork_repository", "github__create_branch"}) {
		t.Errorf("Activate = %v", got)
	}
	if got := r1.Activate("github__fork_repository"); len(got) != 0 {
		t.Errorf("second Activate = %v, want nothing new", got)
	}
	// Stable order: catalog order for the activated part, whatever the
	// activation order.
	want := []string{"read_file", "memory__create_entities", "tool_search", "github__create_branch", "github__fork_repository"}
	for step := 0; step < 3; step++ {
		if got := names(r1.Active()); !slices.Equal(got, want) {
			t.Errorf("step %d active = %v, want %v", step, got, want)
		}
		r1.Retain(nil) // compaction dropping every reference keeps searched tools
	}
	r2 := f.cat.NewRun()
	if r2.IsActive("github__fork_repository") || len(r2.Active()) != 3 {
		t.Errorf("a new run inherited activation: %v", names(r2.Active()))
	}
}

func TestRetainReactivatesUntilReferenceLeaves(t *testing.T) {
	f := newFixture(t)
	r := f.cat.NewRun()
	var fired [][]string
	r.OnActivate(func(n []string) { fired = append(fired, n) })

	// The retained history of an earlier run references a deferred tool.
	r.Retain([]string{"github__create_issue", "read_file", "nope", "github__create_issue"})
	if !r.IsActive("github__create_issue") {
		t.Fatal("retained reference did not reactivate")
	}
	res := run(r, context.Background(), call("github__create_issue", `{"title":"x"}`))
	if res.IsError {
		t.Errorf("call to reactivated tool: %s", res.AllText())
	}
	// Still referenced: still active, nothing fires again.
	r.Retain([]string{"github__create_issue"})
	// A tool found by search stays; one active only by reference goes.
	r.Activate("github__list_commits")
	r.Retain([]string{"github__list_commits"})
	r.Retain(nil)
	if r.IsActive("github__create_issue") {
		t.Error("tool stayed active after its reference left context")
	}
	if !r.IsActive("github__list_commits") {
		t.Error("searched tool lost activation when its reference left context")
	}
	res = run(r, context.Background(), call("github__create_issue", `{}`))
	if !res.IsError || res.Stage != tool.Discovery {
		t.Errorf("call after reference left = %+v", res)
	}
	if f.calls["github__create_issue"].Load() != 1 {
		t.Errorf("handler ran %d times, want 1", f.calls["github__create_issue"].Load())
	}
	// Referenced again: active again, fires again.
	r.Retain([]string{"github__create_issue"})
	if want := "[[github__create_issue] [github__list_commits] [github__create_issue]]"; fmt.Sprint(fired) != want {
		t.Errorf("OnActivate fired %v, want %v", fired, want)
	}
}

func TestDispatchRefusesInactiveTools(t *testing.T) {
	f := newFixture(t)
	r := f.cat.NewRun()
	ctx := context.Background()
	forwarded := 0
	next := func(ctx context.Context, c *tool.Call) *tool.Result {
		forwarded++
		tl, _ := r.Tool(c.Name)
		return tl.Call(ctx, c)
	}

	res := r.Dispatch(ctx, call("github__merge_pull_request", `{"owner":"o","repo":"r","pull_number":"1"}`), next)
	if !res.IsError || res.Stage != tool.Discovery {
		t.Fatalf("deferred call = %+v", res)
	}
	for _, s := range []string{"Discovery error in github__merge_pull_request", "not loaded", "not executed", `tool_search with {"query": "select:github__merge_pull_request"}`} {
		if !strings.Contains(res.AllText(), s) {
			t.Errorf("message lacks %q: %s", s, res.AllText())
		}
	}
	res = r.Dispatch(ctx, call("delete_everything", `{}`), next)
	if !res.IsError || res.Stage != tool.Discovery || !strings.Contains(res.AllText(), `no tool named "delete_everything" exists in this run`) ||
		!strings.Contains(res.AllText(), "tool_search") {
		t.Errorf("unknown call = %+v %s", res, res.AllText())
	}
	if forwarded != 0 || f.calls["github__merge_pull_request"].Load() != 0 {
		t.Fatalf("an inactive tool was executed (forwarded %d)", forwarded)
	}
	// Active tools go through next; tool_search is answered by the run.
	if res := r.Dispatch(ctx, call("read_file", `{"path":"a"}`), next); res.IsError || forwarded != 1 {
		t.Errorf("core call = %+v, forwarded %d", res, forwarded)
	}
	if res := r.Dispatch(ctx, call("tool_search", `{"query":"merge pull request"}`), next); res.IsError || forwarded != 1 {
		t.Errorf("tool_search = %+v, forwarded %d", res, forwarded)
	}
	if res := r.Dispatch(ctx, call("github__merge_pull_request", `{"owner":"o","repo":"r","pull_number":"1"}`), next); res.IsError || forwarded != 2 {
		t.Errorf("call after search = %s, forwarded %d", res.AllText(), forwarded)
	}

	// With nothing deferred there is no tool_search and the hint says so.
	small := discovery.NewCatalog(f.entries[:2], discovery.Gates{}).NewRun()
	if small.IsActive("tool_search") || slices.Contains(names(small.Active()), "tool_search") {
		t.Error("tool_search offered with nothing deferred")
	}
	res = small.Dispatch(ctx, call("tool_search", `{"query":"x"}`), next)
	if !res.IsError || res.Stage != tool.Discovery || strings.Contains(res.AllText(), "describe the action") {
		t.Errorf("tool_search without deferral = %s", res.AllText())
	}
}

// A name the run does not hold but a host knows as departed (SetDeparted)
// gets an error naming the server: removed at a refresh (Discovery), or
// the server not connected (Execution); nothing is executed. Other unknown names
// keep the plain answer.
func TestDispatchExplainsDepartedTools(t *testing.T) {
	f := newFixture(t)
	r := f.cat.NewRun()
	r.SetDeparted(func(name string) (discovery.Departure, bool) {
		switch name {
		case "github__old_tool":
			return discovery.Departure{Server: "github"}, true
		case "memory__read_graph":
			return discovery.Departure{Server: "memory", Down: "failed: exited with status 1"}, true
		}
		return discovery.Departure{}, false
	})
	ctx := context.Background()
	next := func(context.Context, *tool.Call) *tool.Result {
		t.Fatal("a departed tool was executed")
		return nil
	}
	for name, want := range map[string][]string{
		"github__old_tool":   {`tool "github__old_tool" is no longer offered by MCP server github (removed at refresh)`, "call tool_search again"},
		"memory__read_graph": {"MCP server memory is failed: exited with status 1", "check MCP server memory"},
		"nobody__x":          {`no tool named "nobody__x" exists in this run`},
	} {
		res := r.Dispatch(ctx, call(name, `{}`), next)
		// A tool whose server is down failed at Execution (the server
		// that runs it); a dropped or unknown name at Discovery.
		stage := tool.Discovery
		if name == "memory__read_graph" {
			stage = tool.Execution
		}
		if !res.IsError || res.Stage != stage {
			t.Errorf("%s: stage %s, want %s: %+v", name, res.Stage, stage, res)
		}
		for _, w := range want {
			if !strings.Contains(res.AllText(), w) {
				t.Errorf("%s: %q lacks %q", name, res.AllText(), w)
			}
		}
	}
	res := r.Dispatch(ctx, call("tool_search", `{"query":"select:github__old_tool"}`), next)
	if res.IsError || !strings.Contains(res.AllText(), "no longer offered by MCP server github") {
		t.Errorf("select: of a departed tool: %s", res.AllText())
	}
}

func TestOnActivateFiresForSearch(t *testing.T) {
	f := newFixture(t)
	r := f.cat.NewRun()
	var got []string
	var count int
	r.OnActivate(func(n []string) { count++; got = append(got, n...) })
	run(r, context.Background(), call("tool_search", `{"query":"select:github__search_code"}`))
	run(r, context.Background(), call("tool_search", `{"query":"select:github__search_code"}`)) // nothing new
	if count != 1 || !slices.Equal(got, []string{"github__search_code"}) {
		t.Errorf("OnActivate fired %d times with %v", count, got)
	}
}

// A handful of real Seal-Tools entries (Apache-2.0, shared/data/seal-tools)
// with queries from its dev set.
func TestRetrievalOnSealToolsSample(t *testing.T) {
	sample := []struct{ name, desc string }{
		{"analyzeEvidence", "Analyze the chemical evidence collected from a crime scene"},
		{"getTeamStats", "Retrieve statistics about a football team"},
		{"getAvailableRooms", "Retrieve available rooms information"},
		{"getSocialMediaEngagement", "Retrieve the engagement metrics of a specific social media post"},
		{"getAirQuality", "Retrieve the air quality information"},
		{"getWaterQuality", "Retrieve water quality information"},
		{"getCustomsInfo", "Retrieve customs and trade compliance information"},
		{"getDrugSideEffects", "Retrieve the side effects of a specific drug"},
		{"getPharmaceuticalDistribution", "Retrieve pharmaceutical distribution information"},
		{"sendSatelliteMessage", "Send a message via satellite communication"},
		{"getHealthWorkforce", "Retrieve information about the health workforce in a specific location"},
		{"getDrugPrice", "Retrieve the price of a specific drug"},
	}
	var entries []discovery.Entry
	for _, s := range sample {
		tl, _ := mk(t, s.name, s.desc, "location")
		entries = append(entries, discovery.Entry{Tool: tl, Server: "seal"})
	}
	cat := discovery.NewCatalog(entries, discovery.Gates{})
	for q, want := range map[string][]string{
		"Retrieve information about the number of nurses in a specific country.":               {"getHealthWorkforce"},
		`Tell me the engagement metrics for the Facebook post with the ID "rOBhSVKGVKe.`:       {"getSocialMediaEngagement"},
		`Tell the satellite to send the message "Don't forget to feed the cat.`:                {"sendSatelliteMessage"},
		"Tell me the water quality of the lake.":                                               {"getWaterQuality"},
		"Track the distribution of Aspirin. Then tell me its side effects. Finally its price.": {"getPharmaceuticalDistribution", "getDrugSideEffects", "getDrugPrice"},
	} {
		var got []string
		for _, h := range cat.Search(q, len(want)+1) {
			got = append(got, h.Name)
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("Search(%q) = %v, missing %s", q, got, w)
			}
		}
	}
}

// FuzzSearch: any query, natural language or select:, is answered without
// a panic, within k, and tool_search never errors on a non-empty query.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"create issue", "select:github__push_files,x", "", "ÄÖ__ß.  e.g. 3.5;; \n", "HTMLParser co2Level", "select:"} {
		f.Add(s, 3)
	}
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, q string, k int) {
		k = k % 20
		if hits := fx.cat.Search(q, k); len(hits) > max(k, 0) {
			t.Fatalf("Search(%q, %d) returned %d hits", q, k, len(hits))
		}
		in, _ := json.Marshal(map[string]any{"query": q})
		res := fx.cat.NewRun().ToolSearch().Call(context.Background(), &tool.Call{Name: "tool_search", Input: in})
		if res.IsError && strings.TrimSpace(q) != "" {
			t.Fatalf("tool_search(%q) failed: %s", q, res.AllText())
		}
	})
}

func TestRunConcurrentUse(t *testing.T) {
	f := newFixture(t)
	r := f.cat.NewRun()
	r.OnActivate(func([]string) {})
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range 50 {
				switch (i + j) % 4 {
				case 0:
					run(r, context.Background(), call("tool_search", `{"query":"pull request"}`))
				case 1:
					r.Retain([]string{"github__create_issue"})
				case 2:
					_ = r.Active()
				case 3:
					run(r, context.Background(), call("read_file", `{}`))
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// lazy defines a tool the way the MCP client does (tool.Spec.CompileOnUse)
// with the given schema.
func lazy(t testing.TB, name, desc, schema string) (*tool.Tool, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	tl, err := tool.Define(tool.Spec{Name: name, Description: desc, InputSchema: json.RawMessage(schema), CompileOnUse: true,
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) {
			n.Add(1)
			return tool.Text("ran " + name), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return tl, &n
}

// Issue 10: deferred tools are compiled when they are activated, direct
// tools when the catalog is built; a schema that does not compile is never
// listed or loaded, and calls to it are Discovery-stage errors saying why.
func TestCompileAtActivation(t *testing.T) {
	const broken = `{"type":"object","properties":{"q":{"type":"string","minLength":-1}}}`
	const fine = `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`
	var entries []discovery.Entry
	var deferredTools []*tool.Tool
	for i := range 12 {
		tl, _ := lazy(t, fmt.Sprintf("big__weather_%d", i), fmt.Sprintf("Weather report number %d for a city", i), fine)
		entries = append(entries, discovery.Entry{Tool: tl, Server: "big"})
		deferredTools = append(deferredTools, tl)
	}
	badDeferred, badDeferredRuns := lazy(t, "big__weather_broken", "Weather report broken for a city", broken)
	entries = append(entries, discovery.Entry{Tool: badDeferred, Server: "big"})
	direct, _ := lazy(t, "small__ping", "Ping a host", fine)
	badDirect, badDirectRuns := lazy(t, "small__pong", "Pong a host", broken)
	entries = append(entries, discovery.Entry{Tool: direct, Server: "small"}, discovery.Entry{Tool: badDirect, Server: "small"})

	c := discovery.NewCatalog(entries, discovery.Gates{})
	if c.Deferred() != 13 {
		t.Fatalf("Deferred = %d, want 13", c.Deferred())
	}
	for _, tl := range deferredTools {
		if done, _ := tl.Compiled(); done {
			t.Fatalf("%s: a deferred tool was compiled before its activation", tl.Name())
		}
	}
	if done, err := direct.Compiled(); !done || err != nil {
		t.Errorf("direct tool not compiled with the catalog: %v %v", done, err)
	}
	if _, bad := c.Unusable()["small__pong"]; !bad || len(c.Unusable()) != 1 {
		t.Errorf("Unusable = %v, want small__pong", c.Unusable())
	}
	r := c.NewRun()
	for _, tl := range r.Active() {
		if tl.Name() == "small__pong" {
			t.Error("a direct tool whose schema does not compile is listed")
		}
	}
	res := r.Dispatch(context.Background(), &tool.Call{Name: "small__pong", Input: json.RawMessage(`{"q":"x"}`)},
		func(ctx context.Context, call *tool.Call) *tool.Result { return badDirect.Call(ctx, call) })
	if res.Stage != tool.Discovery || !strings.Contains(res.AllText(), "minLength") || badDirectRuns.Load() != 0 {
		t.Errorf("call of the unusable direct tool: %+v", res)
	}

	// tool_search compiles what it loads: the good one is loaded and
	// callable, the broken one named with its reason and not loaded.
	out := r.ToolSearch().Call(context.Background(), &tool.Call{Name: discovery.ToolSearchName,
		Input: json.RawMessage(`{"query":"select:big__weather_3,big__weather_broken"}`)})
	txt := out.AllText()
	if out.IsError || !strings.Contains(txt, "big__weather_broken cannot be loaded: its input schema was rejected (") ||
		!strings.Contains(txt, "minLength") || !strings.Contains(txt, "Loaded 1 tool(s)") {
		t.Fatalf("tool_search: %s", txt)
	}
	if done, err := deferredTools[3].Compiled(); !done || err != nil {
		t.Errorf("activated tool not compiled: %v %v", done, err)
	}
	if done, _ := deferredTools[4].Compiled(); done {
		t.Error("a tool that was not activated was compiled")
	}
	if !r.IsActive("big__weather_3") || r.IsActive("big__weather_broken") {
		t.Errorf("active: weather_3 %v, broken %v", r.IsActive("big__weather_3"), r.IsActive("big__weather_broken"))
	}
	res = r.Dispatch(context.Background(), &tool.Call{Name: "big__weather_broken", Input: json.RawMessage(`{"q":"x"}`)},
		func(ctx context.Context, call *tool.Call) *tool.Result { return badDeferred.Call(ctx, call) })
	if res.Stage != tool.Discovery || !strings.Contains(res.AllText(), "cannot be used") || badDeferredRuns.Load() != 0 {
		t.Errorf("call of the broken deferred tool: %+v", res)
	}
	// Activate and Retain skip it as well.
	if got := r.Activate("big__weather_broken", "big__weather_5"); !slices.Equal(got, []string{"big__weather_5"}) {
		t.Errorf("Activate = %v", got)
	}
	r.Retain([]string{"big__weather_broken"})
	if r.IsActive("big__weather_broken") {
		t.Error("Retain activated a tool whose schema does not compile")
	}
}

func TestToolSearchOnlyUnusableMatches(t *testing.T) {
	var entries []discovery.Entry
	for i := range 11 {
		tl, _ := lazy(t, fmt.Sprintf("big__t%d", i), "Broken weather tool", `{"type":"object","properties":{"q":{"maxItems":-2}}}`)
		entries = append(entries, discovery.Entry{Tool: tl, Server: "big"})
	}
	r := discovery.NewCatalog(entries, discovery.Gates{}).NewRun()
	out := r.ToolSearch().Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"query":"select:big__t1"}`)})
	if txt := out.AllText(); out.IsError || !strings.Contains(txt, "big__t1 cannot be loaded") || !strings.Contains(txt, "Nothing was loaded") {
		t.Errorf("tool_search: %s", txt)
	}
}
