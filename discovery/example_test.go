package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/tool"
)

func Example() {
	def := func(name, desc string) *tool.Tool {
		return tool.MustDefine(tool.Spec{
			Name: name, Description: desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
			Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
				return tool.Text(name + " ran"), nil
			},
		})
	}
	entries := []discovery.Entry{{Tool: def("read_file", "Read a file.")}} // core
	for _, n := range []string{"create_issue", "close_issue", "list_issues", "create_branch", "merge_pull_request",
		"list_commits", "search_code", "fork_repository", "get_file_contents", "push_files", "add_issue_comment"} {
		entries = append(entries, discovery.Entry{Tool: def("github__"+n, "GitHub: "+n), Server: "github"})
	}

	cat := discovery.NewCatalog(entries, discovery.Gates{}) // once per resolution
	fmt.Println(cat.Decisions()[1].Gate)

	r := cat.NewRun() // once per run
	r.OnActivate(func(names []string) { fmt.Println("list changed:", names) })
	exec := func(c *tool.Call) *tool.Result {
		return r.Dispatch(context.Background(), c, func(ctx context.Context, c *tool.Call) *tool.Result {
			t, _ := r.Tool(c.Name)
			return t.Call(ctx, c)
		})
	}
	fmt.Println(exec(&tool.Call{Name: "github__close_issue"}).AllText())
	exec(&tool.Call{Name: "tool_search", Input: json.RawMessage(`{"query":"close an issue","max_results":1}`)})
	fmt.Println(exec(&tool.Call{Name: "github__close_issue"}).AllText())
	fmt.Println(len(r.Active()), "active;", len(cat.NewRun().Active()), "in a fresh run")
	// Output:
	// server github has 11 tools > 10: deferred
	// Discovery error in github__close_issue: tool "github__close_issue" exists but is not loaded in this run, so the call was not executed (next: call tool_search with {"query": "select:github__close_issue"} to load its schema, then call it again with arguments that match that schema)
	// list changed: [github__close_issue]
	// github__close_issue ran
	// 3 active; 2 in a fresh run
}

// With 40 MCP servers configured and two answered so far (3 tools each),
// the gates count the 38 still connecting (one tool each expected, or
// their counts from the last start): every MCP tool is deferred and
// tool_search is listed before most servers have joined.
func ExampleDecideExpecting() {
	def := func(name string) *tool.Tool {
		return tool.MustDefine(tool.Spec{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) { return tool.Text("ok"), nil }})
	}
	var entries []discovery.Entry
	for _, s := range []string{"a", "b"} {
		for _, n := range []string{"get", "put", "list"} {
			entries = append(entries, discovery.Entry{Tool: def(s + "__" + n), Server: s})
		}
	}
	pending := discovery.Pending{}
	for i := range 38 {
		pending[fmt.Sprintf("s%02d", i)] = 1
	}
	fmt.Println(discovery.DecideExpecting(entries, discovery.Gates{}, pending)[0].Gate)
	fmt.Println(discovery.DecideExpecting(entries, discovery.Gates{}, nil)[0].Exposure)
	cat := discovery.NewCatalogWith(entries, &discovery.Options{Pending: pending})
	fmt.Println(cat.Deferred(), cat.Searchable())
	// Output:
	// 44 MCP tools in all (6 listed, 38 expected from 38 servers still connecting) > 30: every MCP tool deferred
	// direct
	// 6 true
}
