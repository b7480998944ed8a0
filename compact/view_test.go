package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

func TestViewToolCallErrorsAndBounds(t *testing.T) {
	r := newRig(t, compact.Options{})
	res := r.view.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"id":"nope"}`)})
	if !res.IsError || res.Stage != tool.Parameters || !strings.Contains(res.AllText(), `no recorded tool call has id "nope"`) {
		t.Fatalf("unknown id: %+v", res)
	}
	doc := bigJSON(t)
	r.rec.Call(context.Background(), "t", &tool.Call{ID: "j", Name: "inv"}, returning(tool.Text(doc)))
	r.c.Wait()
	for _, in := range []string{`{"id":"j","json_path":"$.items[?"}`, `{"id":"j","pattern":"("}`, `{"id":"j","json_path":"$.nothing"}`, `{}`} {
		if res := r.view.Call(context.Background(), &tool.Call{Input: json.RawMessage(in)}); !res.IsError || res.Stage != tool.Parameters {
			t.Errorf("%s: %+v", in, res.AllText())
		}
	}
	text, ev := r.viewText(`{"id":"j"}`)
	end := ev["end"].(int)
	if end > compact.DefaultViewChars || end < 4000 || compact.Count(body(text)) > compact.DefaultViewTokens ||
		!strings.Contains(text, fmt.Sprintf(`next: view_tool_call {"id":"j","offset":%d}`, end)) ||
		!strings.Contains(text, "bounded at 8,000 characters and 2,000 tokens") {
		t.Fatalf("first slice header: %s", text[:400])
	}
	// Several nodes: one line each with its normalized path; simple paths work.
	text, _ = r.viewText(`{"id":"j","json_path":"items[0:2].id"}`)
	if body(text) != "$['items'][0]['id']\t0\n$['items'][1]['id']\t1" {
		t.Fatalf("nodes: %q", body(text))
	}
	// A running record (the process died) says so.
	if err := r.st.Put(context.Background(), &store.Record{ToolCallID: "dead", TaskID: "t", Tool: "execute", Outcome: store.OutcomeRunning}); err != nil {
		t.Fatal(err)
	}
	text, _ = r.viewText(`{"id":"dead"}`)
	if !strings.Contains(text, "outcome running") {
		t.Fatalf("running: %s", text)
	}
}

func TestRecordsGroupResolves(t *testing.T) {
	g := compact.Group(t.TempDir(), nil)
	reg := registry.New([]registry.Group{g}, []registry.Meta{compact.Meta}, nil)
	if err := reg.AssertConsistent(); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, compact.Options{})
	tools, err := g.Build(registry.Env{Services: map[string]any{compact.GroupKey: store.Store(r.st)}})
	if err != nil || len(tools) != 1 || tools[0].Name() != compact.ViewToolCallName {
		t.Fatalf("%v %v", tools, err)
	}
	if _, err := g.Build(registry.Env{Services: map[string]any{compact.GroupKey: 42}}); err == nil {
		t.Fatal("a non-store service built")
	}
}

func TestTrimJSONKeepsStructureAndSaysWhatWasRemoved(t *testing.T) {
	raw := `{"a":"` + strings.Repeat("x", 5000) + `","list":[` + strings.Repeat(`{"k":1},`, 999) + `{"k":2}],"z":null}`
	tr, ok := compact.TrimJSON([]byte(raw), 300, nil)
	if !ok || !tr.JSON || tr.Tokens > 300 {
		t.Fatalf("%+v", tr)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(tr.Text), &v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, tr.Text)
	}
	if !strings.Contains(tr.Text, `"z": null`) || !strings.Contains(tr.Text, "more items") || !strings.Contains(tr.Text, "characters cut") ||
		!strings.Contains(tr.Removed, "of 1,000 array items") {
		t.Fatalf("%s\n%s", tr.Removed, tr.Text)
	}
	// Key order is kept.
	if strings.Index(tr.Text, `"a"`) > strings.Index(tr.Text, `"list"`) || strings.Index(tr.Text, `"list"`) > strings.Index(tr.Text, `"z"`) {
		t.Fatal("key order changed")
	}
}

func TestTrimTextHeadTailAndErrorLines(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		if i == 1700 {
			b.WriteString("panic: runtime error: index out of range\n")
			continue
		}
		b.WriteString("step ok\n")
	}
	tr := compact.TrimText(b.String(), 400, nil, `view_tool_call {"id":"x"}`)
	if tr.JSON || tr.Tokens > 400 || !strings.HasPrefix(tr.Text, "step ok\n") || !strings.HasSuffix(tr.Text, "step ok\n") {
		t.Fatalf("%+v", tr)
	}
	for _, want := range []string{"characters omitted: lines ", "cut by aibuddy precompaction (trim)", `view_tool_call {"id":"x"} with "lines":`,
		"line 1,700: panic: runtime error: index out of range"} {
		if !strings.Contains(tr.Text, want) {
			t.Errorf("lacks %q", want)
		}
	}
}
