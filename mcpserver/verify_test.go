package mcpserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// The gateway runs the Verification stage, for a tool called by its name
// and for one reached through call_tool (the proxy is unwrapped before
// Discovery, so the named tool gets every stage), and the host sees the
// outcome in _meta as the record keeps it.
func TestGatewayVerifiesEveryCall(t *testing.T) {
	ws := t.TempDir()
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	// A liar whose result contradicts its declared check, and an upstream
	// server big enough to be deferred, so call_tool is listed.
	liar := tool.MustDefine(tool.Spec{Name: "liar", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("done"), nil },
		Verify: func(*tool.Call, *tool.Result) tool.Verdict {
			return tool.Verdict{Checked: "liar: nothing", Problem: "the effect is not there"}
		}})
	groups := append(coretools.Groups(nil, nil), registry.Group{Key: "liar", Names: []string{"liar"},
		Build: func(registry.Env) ([]*tool.Tool, error) { return []*tool.Tool{liar}, nil }})
	reg := registry.New(groups, append(append([]registry.Meta(nil), coretools.Metas...), registry.Meta{Key: "liar"}), nil)
	var names []string
	for i := range 12 {
		names = append(names, "t"+string(rune('a'+i)))
	}
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb,
		MCP: []capability.MCPServer{{Name: "big", Connected: true, Tools: mcpTools("big", names...)}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := mcpserver.New(set, &mcpserver.Options{Pipeline: pipeline.New(&pipeline.Options{Store: st}), TaskID: "session-1"})
	sst, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), sst, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	call := func(name string, args any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := res.Meta[mcpserver.MetaEvidence].(map[string]any)
		id, _ := res.Meta[mcpserver.MetaToolCallID].(string)
		rec, err := st.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := result.Decode(rec.Output)
		if rec.TaskID != "session-1" || rec.Tool != name || w.Evidence[tool.EvidenceVerified] != ev[string(tool.EvidenceVerified)] ||
			rec.Stage != string(w.Stage) {
			t.Errorf("%s: record %+v %v does not say what the host was shown (%v)", name, rec, w.Evidence, ev)
		}
		return res, ev
	}
	for _, via := range []string{"direct", "call_tool"} {
		write := map[string]any{"path": via + ".txt", "content": "x"}
		name, args := "write_file", any(write)
		if via == "call_tool" {
			name, args = mcpserver.CallToolName, map[string]any{"name": "write_file", "arguments": write}
		}
		if res, ev := call(name, args); res.IsError || ev[string(tool.EvidenceVerified)] != true {
			t.Errorf("%s write_file: %v %v", via, res.IsError, ev)
		}
		name, args = "liar", any(map[string]any{})
		if via == "call_tool" {
			name, args = mcpserver.CallToolName, map[string]any{"name": "liar", "arguments": map[string]any{}}
		}
		res, ev := call(name, args)
		if !res.IsError || res.Meta[mcpserver.MetaStage] != string(tool.Verification) || ev[string(tool.EvidenceVerified)] != false ||
			!strings.Contains(text0(res), "the effect is not there") {
			t.Errorf("%s liar: want a Verification error, got %v %v %s", via, res.Meta[mcpserver.MetaStage], ev, text0(res))
		}
	}
	// call_tool's own input is checked before anything is dispatched.
	res, _ := call(mcpserver.CallToolName, map[string]any{"arguments": map[string]any{}})
	if res.Meta[mcpserver.MetaStage] != string(tool.Parameters) {
		t.Errorf("call_tool without a name: %v %s", res.Meta, text0(res))
	}
}

func text0(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
