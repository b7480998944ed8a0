package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/internal/cli"
)

// TestToolsExplainsSchemaDialects: `aibuddy tools` says per tool what each
// provider dialect does to its schema (issue 14 item 4, case BH-093): a
// tool whose top-level schema is anyOf is flattened for every route, sent
// non-strict on OpenAI with the reason, and a $ref is inlined for Gemini;
// the text form names the same, and provider.schemaDialect "openai" leaves
// only that chat dialect.
func TestToolsExplainsSchemaDialects(t *testing.T) {
	schemas, _ := json.Marshal(map[string]json.RawMessage{
		"pick": json.RawMessage(`{"type":"object","anyOf":[{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},{"type":"object","properties":{"name":{"type":"string","pattern":"^[a-z]+$"}},"required":["name"]}]}`),
		"tree": json.RawMessage(`{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"object","properties":{"v":{"type":"string"}}}}}`),
	})
	config := func(dialect string) string {
		doc := map[string]any{
			"mcpServers": map[string]any{"up": map[string]any{"command": os.Args[0],
				"args": []string{"-test.run=^TestHelperSchemaServer$"}, "env": map[string]string{schemasEnv: string(schemas)}}},
			"mcp": map[string]any{"initTimeout": "60s"},
		}
		if dialect != "" {
			doc["provider"] = map[string]any{"schemaDialect": dialect}
		}
		b, _ := json.Marshal(doc)
		return writeConfig(t, string(b))
	}
	code, out, errs := runCLI(t, cli.Options{}, "tools", "--json", "--config", config(""), "--workspace", t.TempDir(), "--data-dir", t.TempDir())
	var got struct {
		Tools []struct {
			Name    string
			Schemas []struct {
				Route, Dialect, Reason, Error string
				Strict                        bool
				Changes, Rewrites             []string
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	routes := map[string]map[string]string{} // tool -> route -> summary
	for _, tl := range got.Tools {
		routes[tl.Name] = map[string]string{}
		for _, s := range tl.Schemas {
			routes[tl.Name][s.Route] = strings.Join(append([]string{s.Dialect, map[bool]string{true: "strict", false: "non-strict"}[s.Strict], s.Reason, s.Error}, append(s.Changes, s.Rewrites...)...), " | ")
		}
	}
	if len(routes["read_file"]) != 4 {
		t.Fatalf("read_file explained for %v, want anthropic, openai, openai-chat and openai-chat (gemini)", routes["read_file"])
	}
	pick := routes["up__pick"]
	for _, route := range []string{"anthropic", "openai", "openai-chat", "openai-chat (gemini)"} {
		if !strings.Contains(strings.ToLower(pick[route]), "anyof") {
			t.Errorf("up__pick on %s: %q, want the top-level anyOf's flattening named", route, pick[route])
		}
	}
	if s := pick["openai"]; !strings.HasPrefix(s, "openai | non-strict | ") || strings.Contains(s, "non-strict |  |") {
		t.Errorf("up__pick on openai: %q, want non-strict with a reason", s)
	}
	if s := routes["up__tree"]["openai-chat (gemini)"]; !strings.Contains(s, "$ref") && !strings.Contains(s, "inlin") {
		t.Errorf("up__tree on gemini: %q, want its $ref inlined", s)
	}

	code, text, errs := runCLI(t, cli.Options{}, "tools", "--config", config("openai"), "--workspace", t.TempDir(), "--data-dir", t.TempDir())
	if code != 0 || !strings.Contains(text, "Schemas per provider dialect") || !strings.Contains(text, "  up__pick:\n") ||
		!strings.Contains(text, "openai: non-strict: ") || strings.Contains(text, "(gemini)") {
		t.Errorf("exit %d: %s %s", code, text, errs)
	}
}
