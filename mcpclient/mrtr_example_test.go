package mcpclient_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/mcpclient"
)

// A server's form put to a person as aibuddy run does (there through
// approval.Terminal): one question per field, the answer converted to the
// field's type.
func ExampleFormElicitor() {
	person := approval.AskerFunc(func(_ context.Context, q approval.Question) (approval.Answer, error) {
		fmt.Println(q.Text)
		fmt.Println(strings.Join(q.Options, " / "))
		return approval.Answer{Text: "yes"}, nil
	})
	ask := mcpclient.FormElicitor(person)
	res, err := ask(context.Background(), mcpclient.Elicitation{Server: "deploy", Tool: "apply_change",
		Params: &mcp.ElicitParams{Message: "confirm deploy to staging?", RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"confirm": map[string]any{"type": "boolean", "title": "Confirm"}},
			"required":   []any{"confirm"},
		}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Action, res.Content["confirm"])
	// Output:
	// MCP server deploy asks (during apply_change): confirm deploy to staging?
	// Confirm
	// yes / no
	// accept true
}
