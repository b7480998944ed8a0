package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/internal/cli"
)

// schemasEnv makes the test binary an MCP server of the tools it names
// (TestHelperSchemaServer): a JSON object of tool name -> input schema.
const schemasEnv = "AIBUDDY_CLI_TEST_SCHEMAS"

// TestHelperSchemaServer is not a test: run as a child process with
// AIBUDDY_CLI_TEST_SCHEMAS set, the test binary serves those tools over
// stdio with the MCP SDK and exits when stdin closes.
func TestHelperSchemaServer(t *testing.T) {
	var schemas map[string]json.RawMessage
	if err := json.Unmarshal([]byte(os.Getenv(schemasEnv)), &schemas); err != nil || schemas == nil {
		t.Skip("helper process for the tests that need an MCP server")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "schemas", Version: "1"}, nil)
	for name, schema := range schemas {
		srv.AddTool(&mcp.Tool{Name: name, Description: "Tool " + name, InputSchema: schema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran with " + string(req.Params.Arguments)}}}, nil
			})
	}
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// Issue 10, item 3: `aibuddy tools` shows a schema nested past
// mcp.maxSchemaDepth and one whose $refs never reach a value as excluded,
// each with its reason; a recursive tree type is listed.
func TestToolsShowsHostileSchemasExcluded(t *testing.T) {
	schemas, _ := json.Marshal(map[string]json.RawMessage{
		"deep":  json.RawMessage(strings.Repeat(`{"type":"object","properties":{"a":`, 300) + `{"type":"string"}` + strings.Repeat(`}}`, 300)),
		"loop":  json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}}}`),
		"tree":  json.RawMessage(`{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/N"}}}}}}`),
		"nulls": json.RawMessage(`{"type":"object","properties":null}`),
	})
	doc, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"up": map[string]any{"command": os.Args[0],
			"args": []string{"-test.run=^TestHelperSchemaServer$"}, "env": map[string]string{schemasEnv: string(schemas)}}},
		"mcp": map[string]any{"initTimeout": "60s", "maxSchemaDepth": 200},
	})
	code, out, errs := runCLI(t, cli.Options{}, "tools", "--json", "--config", writeConfig(t, string(doc)),
		"--workspace", t.TempDir(), "--data-dir", t.TempDir())
	var got struct {
		Tools    []struct{ Name string }
		Excluded []struct{ Tool, Reason, Detail string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	detail := map[string]string{}
	for _, e := range got.Excluded {
		detail[e.Tool] = e.Reason + ": " + e.Detail
	}
	if d := detail["deep"]; !strings.Contains(d, "nested deeper than 200 levels") || !strings.Contains(d, "mcp.maxSchemaDepth") {
		t.Errorf("deep: %q (excluded %v)", d, detail)
	}
	if d := detail["loop"]; !strings.Contains(d, "$ref cycle #/$defs/A -> #/$defs/B -> #/$defs/A") {
		t.Errorf("loop: %q", d)
	}
	listed := map[string]bool{}
	for _, tl := range got.Tools {
		listed[tl.Name] = true
	}
	if !listed["up__tree"] || !listed["up__nulls"] || listed["up__deep"] || listed["up__loop"] {
		t.Errorf("listed %v", listed)
	}
}
