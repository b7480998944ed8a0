package mcpclient_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// toolsJSON renders tools/list entries: name -> inputSchema (raw JSON).
func toolsJSON(schemas map[string]string) string {
	var parts []string
	for name, schema := range schemas {
		parts = append(parts, fmt.Sprintf(`{"name":%q,"description":"tool %s","inputSchema":%s}`, name, name, schema))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func quarantineReasons(st mcpclient.ServerStatus) map[string]string {
	out := map[string]string{}
	for _, q := range st.Quarantined {
		out[q.Tool] = q.Reason
	}
	return out
}

// Issue 10: intake checks schemas without compiling them; each tool
// compiles at its first use. A schema only the compiler rejects is then
// quarantined with the reason, and the tool leaves Tools; with
// CompileSchemas (aibuddy tools) it is quarantined at intake.
func TestIntakeCompilesOnFirstUse(t *testing.T) {
	schemas := map[string]string{"broken": `{"type":"object","properties":{"q":{"type":"string","minLength":-1}}}`}
	for i := range 20 {
		schemas[fmt.Sprintf("t%02d", i)] = `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`
	}
	m := connect(t, nil, scriptedServer("lazy", "scripted", toolsJSON(schemas)))
	st := status(t, m, "lazy")
	if st.ToolsLoaded != 21 || len(st.Quarantined) != 0 {
		t.Fatalf("after intake: %s %v", st.Summary(), st.Quarantined)
	}
	for _, tl := range m.Tools()["lazy"] {
		if done, _ := tl.Compiled(); done {
			t.Fatalf("%s was compiled at intake", tl.Name())
		}
	}
	good := findTool(t, m, "lazy", "lazy__t07")
	if r := call(t, good, `{}`); r.Stage != tool.Parameters || !strings.Contains(r.AllText(), "q is required") {
		t.Errorf("good tool, missing q: %+v", r)
	}
	if r := call(t, good, `{"q":"x"}`); r.IsError || r.AllText() != `called t07 with {"q":"x"}` {
		t.Errorf("good tool: %+v", r)
	}
	if done, _ := findTool(t, m, "lazy", "lazy__t08").Compiled(); done {
		t.Error("calling one tool compiled another")
	}

	broken := findTool(t, m, "lazy", "lazy__broken")
	r := call(t, broken, `{"q":"x"}`)
	if r.Stage != tool.Discovery || !strings.Contains(r.AllText(), "/properties/q/minLength") {
		t.Errorf("broken tool: %+v", r)
	}
	st = status(t, m, "lazy")
	reason := quarantineReasons(st)["broken"]
	if st.ToolsLoaded != 20 || !strings.Contains(reason, `server "lazy" tool "broken": input schema rejected when the tool was first used`) ||
		!strings.Contains(reason, "minLength") {
		t.Errorf("after the first call: %s; reason %q", st.Summary(), reason)
	}
	for _, tl := range m.Tools()["lazy"] {
		if tl.Name() == "lazy__broken" {
			t.Error("Tools still holds the tool whose schema did not compile")
		}
	}

	eager := connect(t, &mcpclient.Options{CompileSchemas: true}, scriptedServer("eager", "scripted", toolsJSON(schemas)))
	st = status(t, eager, "eager")
	if reason := quarantineReasons(st)["broken"]; st.ToolsLoaded != 20 || !strings.Contains(reason, "/properties/q/minLength") {
		t.Errorf("CompileSchemas: %s; reason %q", st.Summary(), reason)
	}
}

// The intake path stays linear: it never hands a schema to the compiler
// (the compiler's cost is what held start-up for seconds), so a tools/list
// of schemas that pass intake leaves every tool uncompiled.
func TestIntakeNeverCompiles(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 300 {
		if i > 0 {
			b.WriteString(",")
		}
		s, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
			"a": map[string]any{"$ref": "#/$defs/A"}, "n": map[string]any{"type": "integer", "minimum": 1}},
			"$defs": map[string]any{"A": map[string]any{"type": "object", "properties": map[string]any{
				"kids": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/A"}}}}}})
		fmt.Fprintf(&b, `{"name":"t%d","inputSchema":%s}`, i, s)
	}
	b.WriteString("]")
	m := connect(t, nil, scriptedServer("many", "scripted", b.String()))
	tools := m.Tools()["many"]
	if len(tools) != 300 {
		t.Fatalf("%d tools loaded: %s", len(tools), status(t, m, "many").Summary())
	}
	for _, tl := range tools {
		if done, _ := tl.Compiled(); done {
			t.Fatalf("%s compiled at intake", tl.Name())
		}
	}
}
