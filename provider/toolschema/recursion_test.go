package toolschema_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/provider/toolschema"
	"github.com/aibuddy/aibuddy/tool"
)

// Issue 10, item 3: the projections end on every recursive schema intake
// lets through (a tree in $defs, a list through "#", two definitions that
// refer to each other through properties, a diamond of references 30 deep
// that would expand to 2^30 copies), keep their references resolvable,
// and still compile; a schema as deep as intake allows projects too.
func TestProjectionsEndOnRecursiveSchemas(t *testing.T) {
	var diamond []string
	for i := 1; i < 30; i++ {
		diamond = append(diamond, fmt.Sprintf(`"L%d":{"type":"object","properties":{"x":{"$ref":"#/$defs/L%d"},"y":{"$ref":"#/$defs/L%d"}}}`, i, i+1, i+1))
	}
	diamond = append(diamond, `"L30":{"type":"string"}`)
	schemas := map[string]string{
		"tree": `{"type":"object","properties":{"root":{"$ref":"#/$defs/Node"}},
		  "$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}}}`,
		"linked": `{"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"integer"}}}`,
		"mutual": `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},
		  "$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}},"B":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}}}`,
		"diamond":   `{"type":"object","properties":{"a":{"$ref":"#/$defs/L1"}},"$defs":{` + strings.Join(diamond, ",") + `}}`,
		"max_depth": strings.Repeat(`{"type":"object","properties":{"a":`, 63) + `{"type":"string"}` + strings.Repeat(`}}`, 63),
	}
	projections := map[string]func(json.RawMessage) (json.RawMessage, []toolschema.Note, error){
		"anthropic": toolschema.ForAnthropic, "openai": toolschema.ForOpenAI, "openai strict": toolschema.ForOpenAIStrict,
	}
	for name, s := range schemas {
		if _, kw, err := tool.Compile(json.RawMessage(s)); err != nil {
			t.Fatalf("%s does not pass intake: %s %v", name, kw, err)
		}
		for pname, project := range projections {
			out, _, err := project(json.RawMessage(s))
			if err != nil {
				t.Errorf("%s, %s: %v", name, pname, err)
				continue
			}
			if err := toolschema.CheckRefs(out); err != nil {
				t.Errorf("%s, %s: %v", name, pname, err)
			}
			if name == "diamond" {
				continue // its projection holds the 20,000 nodes the inliner may copy: compiling it takes seconds
			}
			if _, kw, err := tool.CompileWith(out, &tool.CheckOptions{MaxDepth: 1 << 20}); err != nil {
				t.Errorf("%s, %s: the projection does not compile: %s %v", name, pname, kw, err)
			}
		}
	}
}
