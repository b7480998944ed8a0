package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

// The run's ask_user_question service decides how upstream questions are
// asked (none: not at all), and every answer reaches the call's pipeline
// as a completed exchange, which aibuddy run turns into user-role text.
func TestElicitorForReportsAnswers(t *testing.T) {
	if elicitorFor(nil) != nil {
		t.Error("a run without anyone to ask has an Elicitor")
	}
	if elicitorFor(approval.Asker(mcpserver.ElicitAsker{})) == nil {
		t.Error("aibuddy mcp has no Elicitor")
	}
	person := approval.AskerFunc(func(context.Context, approval.Question) (approval.Answer, error) {
		return approval.Answer{Text: "yes"}, nil
	})
	ask := elicitorFor(approval.Asker(person))
	upstream := tool.MustDefine(tool.Spec{Name: "fx__apply_change", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			res, err := ask(ctx, mcpclient.Elicitation{Server: "fx", Tool: "apply_change", Call: c, Round: 1,
				Params: &mcp.ElicitParams{Message: "confirm deploy to staging?", RequestedSchema: map[string]any{
					"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}}}})
			if err != nil {
				return nil, err
			}
			return tool.Text(res.Action), nil
		}})
	set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{MCP: []capability.MCPServer{
		{Name: "fx", Connected: true, Tools: []*tool.Tool{upstream}}}})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	h := pipeline.New(nil).Handler(pipeline.Run{TaskID: "t", Tools: pipeline.Fixed(set, nil),
		OnDecision: func(_ context.Context, ex approval.Exchange) { texts = append(texts, ex.Text()) }})
	res := h(context.Background(), &tool.Call{ID: "c1", Name: "fx__apply_change", Input: json.RawMessage(`{}`)})
	if res.IsError || res.AllText() != "accept" {
		t.Fatalf("call: %s", res.AllText())
	}
	want := "Approved: fx__apply_change question of MCP server fx (MCP server fx): confirm deploy to staging?\nThe user said: answered {\"confirm\":true}"
	if len(texts) != 1 || texts[0] != want {
		t.Errorf("exchanges %q, want %q", texts, want)
	}
}
