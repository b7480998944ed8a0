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
	"github.com/aibuddy/aibuddy/pipeline"
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
		srv := mcpserver.New(set, &mcpserver.Options{Pipeline: pipeline.New(&pipeline.Options{Policy: policy, Confirmer: mcpserver.ElicitConfirmer{}})})
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

// Every refusal over MCP is one message: one stage, what decided it, one
// next step; no error quoted inside another ("Authorization error: ...
// (Authorization error: ...)"), and a dismissed or declined request is not
// reported as words the user said (it read "they said: the user canceld
// the request").
func TestRefusalsAreOneMessage(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=abc123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	reg := registry.New(append(coretools.Groups(nil, nil), approval.Group()), append(coretools.Metas, approval.Meta), nil)
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb,
		Services: map[string]any{approval.ServiceUserInput: approval.Asker(mcpserver.ElicitAsker{})}})
	if err != nil {
		t.Fatal(err)
	}
	connect := func(action string) *mcp.ClientSession {
		var copts *mcp.ClientOptions
		if action != "" {
			copts = &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: action}, nil
			}}
		}
		st, ct := mcp.NewInMemoryTransports()
		srv := mcpserver.New(set, &mcpserver.Options{Pipeline: pipeline.New(&pipeline.Options{Policy: approval.DefaultPolicy(), Confirmer: mcpserver.ElicitConfirmer{}})})
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, copts).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	hosts := map[string]*mcp.ClientSession{"no elicitation": connect(""), "decline": connect("decline"), "cancel": connect("cancel")}
	calls := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"execute", map[string]any{"command": "rm -rf build"}, []string{"not run"}},
		{"execute", map[string]any{"command": "cat .env"}, []string{"not run"}},
		{"read_file", map[string]any{"path": ".env"}, []string{".env"}},
		{"read_file", map[string]any{"path": "../outside"}, []string{"outside the workspace"}},
		{"ask_user_question", map[string]any{"question": "which one?"}, nil},
	}
	for host, cs := range hosts {
		for _, c := range calls {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, ct := range res.Content {
				if tc, ok := ct.(*mcp.TextContent); ok {
					b.WriteString(tc.Text)
				}
			}
			got := b.String()
			if c.name == "ask_user_question" && host != "no elicitation" {
				if res.IsError || !strings.Contains(got, "declined") {
					t.Errorf("%s, ask_user_question: %s", host, got)
				}
				continue
			}
			if !res.IsError || res.Meta[mcpserver.MetaStage] != "authorization" {
				t.Errorf("%s, %s %v: not an Authorization refusal: %s", host, c.name, c.args, got)
				continue
			}
			if n := strings.Count(got, " error"); n != 1 {
				t.Errorf("%s, %s %v: %d errors in one message: %s", host, c.name, c.args, n, got)
			}
			if n := strings.Count(got, "(next:"); n != 1 {
				t.Errorf("%s, %s %v: %d next steps: %s", host, c.name, c.args, n, got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s, %s %v: %q lacks %q", host, c.name, c.args, got, w)
				}
			}
			for _, bad := range []string{"canceld", "they said", "abc123"} {
				if strings.Contains(got, bad) {
					t.Errorf("%s, %s %v: %q holds %q", host, c.name, c.args, got, bad)
				}
			}
		}
	}
}
