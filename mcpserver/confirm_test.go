package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// A high-impact action over MCP is put to the user through elicitation and
// runs only when approved; a host that cannot ask gets a refusal and
// nothing runs (seed: confirm; case BH-059 for commands naming .env).
func TestConfirmThroughElicitation(t *testing.T) {
	ws := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=abc123\n"), 0o600))
	sb, err := localsandbox.New(ws, nil)
	must(err)
	defer sb.Close()
	reg := registry.New(coretools.Groups(nil, nil), coretools.Metas, nil)
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb})
	must(err)
	policy := approval.DefaultPolicy()

	connect := func(answer func(msg string) *mcp.ElicitResult) *mcp.ClientSession {
		var copts *mcp.ClientOptions
		if answer != nil {
			copts = &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return answer(req.Params.Message), nil
			}}
		}
		st, ct := mcp.NewInMemoryTransports()
		srv := mcpserver.New(set, &mcpserver.Options{Policy: policy, Confirmer: mcpserver.ElicitConfirmer{}})
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, copts).Connect(context.Background(), ct, nil)
		must(err)
		return cs
	}
	exec := func(cs *mcp.ClientSession, command string) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": command}})
		must(err)
		return res
	}
	textOf := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	var asked []string
	reject := connect(func(msg string) *mcp.ElicitResult {
		asked = append(asked, msg)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}
	})
	defer reject.Close()
	for _, cmd := range []string{"cat .env", "grep KEY .env", "sed -n 1p .env", "rm -rf victim"} {
		must(os.MkdirAll(filepath.Join(ws, "victim"), 0o755))
		res := exec(reject, cmd)
		if !res.IsError || res.Meta[mcpserver.MetaStage] != "authorization" || strings.Contains(textOf(res), "abc123") {
			t.Errorf("%s rejected: stage %v: %s", cmd, res.Meta[mcpserver.MetaStage], textOf(res))
		}
		if _, err := os.Stat(filepath.Join(ws, "victim")); err != nil {
			t.Errorf("%s ran although rejected", cmd)
		}
	}
	if len(asked) != 4 || !strings.Contains(asked[0], "cat .env") {
		t.Errorf("asked %d times: %q", len(asked), asked)
	}

	approve := connect(func(string) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	})
	defer approve.Close()
	if res := exec(approve, "rm -rf victim"); res.IsError {
		t.Errorf("approved rm: %s", textOf(res))
	}
	if _, err := os.Stat(filepath.Join(ws, "victim")); !os.IsNotExist(err) {
		t.Error("approved rm -rf did not run")
	}
	if res := exec(approve, "echo harmless"); res.IsError || !strings.Contains(textOf(res), "harmless") {
		t.Errorf("a command outside the policy must run without asking: %s", textOf(res))
	}

	cannotAsk := connect(nil)
	defer cannotAsk.Close()
	must(os.MkdirAll(filepath.Join(ws, "victim"), 0o755))
	res := exec(cannotAsk, "rm -rf victim")
	if !res.IsError || res.Meta[mcpserver.MetaStage] != "authorization" || !strings.Contains(textOf(res), "elicitation") {
		t.Errorf("host without elicitation: %v %s", res.Meta[mcpserver.MetaStage], textOf(res))
	}
	if _, err := os.Stat(filepath.Join(ws, "victim")); err != nil {
		t.Error("rm -rf ran without anyone approving it")
	}
}
