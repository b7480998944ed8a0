package mcpclient_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// Issue 10, item 2: "properties": null (a tool without parameters, as some
// generators write it) and the other keywords null can only mean absent in
// are removed and recorded as repairs, not quarantined; null stays where it
// is a value (default, const).
func TestNullKeywordsMeanAbsent(t *testing.T) {
	schemas := map[string]string{
		"no_params":  `{"type":"object","properties":null}`,
		"null_type":  `{"type":null,"properties":null,"required":null}`,
		"nested":     `{"type":"object","properties":{"opts":{"type":"object","properties":null,"description":null}},"required":["opts"]}`,
		"null_value": `{"type":"object","properties":{"v":{"type":["string","null"],"default":null}}}`,
	}
	m := connect(t, nil, scriptedServer("nulls", "scripted", toolsJSON(schemas)))
	st := status(t, m, "nulls")
	if st.ToolsLoaded != 4 || len(st.Quarantined) != 0 {
		t.Fatalf("%s; quarantined %v", st.Summary(), st.Quarantined)
	}
	repairs := map[string][]string{}
	for _, r := range st.Repairs {
		repairs[r.Tool] = append(repairs[r.Tool], r.What)
	}
	want := map[string][]string{
		"no_params": {`removed "properties": null at the top level (null there means absent)`},
		"null_type": {`added the missing top-level "type": "object"`,
			`removed "properties": null at the top level (null there means absent)`,
			`removed "required": null at the top level (null there means absent)`,
			`removed "type": null at the top level (null there means absent)`},
		"nested": {`removed "description": null at /properties/opts (null there means absent)`,
			`removed "properties": null at /properties/opts (null there means absent)`},
	}
	for name, w := range want {
		if strings.Join(repairs[name], "\n") != strings.Join(w, "\n") {
			t.Errorf("%s repairs:\n%s\nwant:\n%s", name, strings.Join(repairs[name], "\n"), strings.Join(w, "\n"))
		}
	}
	if len(repairs["null_value"]) != 0 {
		t.Errorf("null as a value was repaired: %v", repairs["null_value"])
	}
	if s := string(findTool(t, m, "nulls", "nulls__null_value").InputSchema()); !strings.Contains(s, `"default":null`) {
		t.Errorf("default null lost: %s", s)
	}
	// The repaired tools are callable and mean what the server meant.
	if r := call(t, findTool(t, m, "nulls", "nulls__no_params"), `{}`); r.IsError || r.AllText() != "called no_params with {}" {
		t.Errorf("no_params: %+v", r)
	}
	if r := call(t, findTool(t, m, "nulls", "nulls__nested"), `{}`); r.Stage != tool.Parameters || !strings.Contains(r.AllText(), "opts is required") {
		t.Errorf("nested without opts: %+v", r)
	}
	if r := call(t, findTool(t, m, "nulls", "nulls__nested"), `{"opts":{"any":1}}`); r.IsError {
		t.Errorf("nested: %+v", r)
	}
}

// nested is a schema whose property "a" nests n object levels deep.
func nested(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// Issue 10, item 3: one upstream schema nested 2,000 levels deep took the
// compiler minutes (and the whole aibuddy mcp with it); schemas whose
// $refs loop without ever reaching a value were listed and failed on every
// call. Both are quarantined at intake with the reason, through a real
// connection, while a legal recursive schema (a tree in $defs) loads and
// validates nested values; every tool that loads is callable.
func TestHostileSchemasQuarantined(t *testing.T) {
	schemas := map[string]string{
		"deep":       nested(2000),
		"fine_depth": nested(40),
		"self_root":  `{"type":"object","$ref":"#"}`,
		"self_prop":  `{"type":"object","properties":{"a":{"$ref":"#/properties/a"}}}`,
		"ping_pong": `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},
		  "$defs":{"A":{"$ref":"#/$defs/B"},"B":{"allOf":[{"$ref":"#/$defs/A"}]}}}`,
		"tree": `{"type":"object","properties":{"root":{"$ref":"#/$defs/Node"}},"required":["root"],
		  "$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},
		    "kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["name"]}}}`,
		"linked": `{"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"integer"}}}`,
		"ok":     `{"type":"object","properties":{"x":{"type":"string"}}}`,
	}
	m := connect(t, nil, scriptedServer("hostile", "scripted", toolsJSON(schemas)))
	st := status(t, m, "hostile")
	if st.State != mcpclient.StateConnected {
		t.Fatalf("%s: %s", st.State, st.Error)
	}
	reasons := quarantineReasons(st)
	for name, want := range map[string]string{
		"deep":      "nested deeper than 128 levels of JSON objects and arrays",
		"self_root": "$ref cycle # -> #",
		"self_prop": "$ref cycle #/properties/a -> #/properties/a",
		"ping_pong": "$ref cycle #/$defs/A -> #/$defs/B -> #/$defs/B/allOf/0 -> #/$defs/A",
	} {
		r := reasons[name]
		if !strings.Contains(r, fmt.Sprintf(`server "hostile" tool %q`, name)) || !strings.Contains(r, want) {
			t.Errorf("%s: reason %q, want %q", name, r, want)
		}
	}
	if r := reasons["deep"]; !strings.Contains(r, "mcp.maxSchemaDepth") {
		t.Errorf("deep: the reason does not name the setting: %q", r)
	}
	if len(reasons) != 4 || st.ToolsLoaded != 4 {
		t.Errorf("%s; quarantined %v", st.Summary(), reasons)
	}

	// Whatever loaded is callable.
	for _, tl := range m.Tools()["hostile"] {
		if err := tl.Compile(); err != nil {
			t.Errorf("%s loaded but its schema does not compile: %v", tl.Name(), err)
		}
	}
	tree := findTool(t, m, "hostile", "hostile__tree")
	if r := call(t, tree, `{"root":{"name":"a","kids":[{"name":"b","kids":[{"kids":[]}]}]}}`); r.Stage != tool.Parameters ||
		!strings.Contains(r.AllText(), "root.kids[0].kids[0].name is required") {
		t.Errorf("tree with a nameless grandchild: %+v", r)
	}
	if r := call(t, tree, `{"root":{"name":"a","kids":[{"name":"b"}]}}`); r.IsError {
		t.Errorf("tree: %+v", r)
	}
	linked := findTool(t, m, "hostile", "hostile__linked")
	if r := call(t, linked, `{"v":1,"next":{"v":2,"next":{"v":"three"}}}`); r.Stage != tool.Parameters ||
		!strings.Contains(r.AllText(), "next.next.v") {
		t.Errorf("linked list with a bad value: %+v", r)
	}
	if r := call(t, findTool(t, m, "hostile", "hostile__fine_depth"), `{}`); r.IsError {
		t.Errorf("fine_depth: %+v", r)
	}
	if r := call(t, findTool(t, m, "hostile", "hostile__ok"), `{"x":"y"}`); r.IsError {
		t.Errorf("ok: %+v", r)
	}

	// The bound is a setting.
	strict := connect(t, &mcpclient.Options{MaxSchemaDepth: 40}, scriptedServer("strict", "scripted", toolsJSON(map[string]string{
		"fine_depth": nested(40), "shallow": nested(5)})))
	st = status(t, strict, "strict")
	if r := quarantineReasons(st)["fine_depth"]; !strings.Contains(r, "deeper than 40 levels") || st.ToolsLoaded != 1 {
		t.Errorf("MaxSchemaDepth 40: %s; %q", st.Summary(), r)
	}
}

// The same bound for any message: a tools/call result nested past what the
// SDK reads fails that call, not the connection.
func TestDeepResultFailsOnlyItsCall(t *testing.T) {
	m := connect(t, nil, scriptedServer("dr", "scripted", `[{"name":"deep_result","inputSchema":{"type":"object"}},{"name":"ok","inputSchema":{"type":"object"}}]`))
	r := call(t, findTool(t, m, "dr", "dr__deep_result"), `{}`)
	if !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.AllText(), "nested deeper than 1000 levels") {
		t.Errorf("deep result: %+v", r)
	}
	if r := call(t, findTool(t, m, "dr", "dr__ok"), `{}`); r.IsError || r.AllText() != "called ok with {}" {
		t.Errorf("the next call: %+v (%s)", r, status(t, m, "dr").Summary())
	}
}

// Over streamable HTTP too, a tools/list answer holding a schema nested
// past what the SDK reads loses only that tool. The server answers with
// plain JSON bodies (the transport allows it).
func TestDeepSchemaOverHTTP(t *testing.T) {
	deep := nested(1200)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch req.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`, req.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"deep","inputSchema":` + deep + `},{"name":"ok","inputSchema":{"type":"object"}}]}`
		default:
			result = `{"content":[{"type":"text","text":"called"}]}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}))
	t.Cleanup(hs.Close)
	servers, err := mcpclient.ParseServers(map[string]json.RawMessage{"raw": json.RawMessage(`{"url":"` + hs.URL + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	m := connect(t, nil, servers...)
	st := status(t, m, "raw")
	if st.State != mcpclient.StateConnected || st.ToolsLoaded != 1 || !strings.Contains(quarantineReasons(st)["deep"], "nested deeper than 128 levels") {
		t.Fatalf("%s: %s; %v", st.Summary(), st.Error, quarantineReasons(st))
	}
	if r := call(t, findTool(t, m, "raw", "raw__ok"), `{}`); r.IsError || r.AllText() != "called" {
		t.Errorf("ok: %+v", r)
	}
}
