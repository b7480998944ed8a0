package provider_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aibuddy/aibuddy/provider"
)

func TestWireIDsSendsProviderIDsUniquePerRequest(t *testing.T) {
	use := func(ours, theirs string) provider.Block {
		return provider.Block{Type: provider.ToolUse, ID: ours, ProviderID: theirs, Name: "execute", Input: json.RawMessage(`{}`)}
	}
	res := func(id, text string) provider.Block {
		return provider.Block{Type: provider.ToolResult, ToolUseID: id, Content: []provider.Block{{Type: provider.Text, Text: text}}}
	}
	msgs := []provider.Message{
		{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "go"}}},
		{Role: provider.Assistant, Blocks: []provider.Block{use("a1", "call_0")}},
		{Role: provider.User, Blocks: []provider.Block{res("a1", "one")}},
		{Role: provider.Assistant, Blocks: []provider.Block{use("a2", "call_0"), use("a3", "toolu_9")}},
		{Role: provider.User, Blocks: []provider.Block{res("a2", "two"), res("a3", "three"), res("gone", "orphan")}},
		{Role: provider.Assistant, Blocks: []provider.Block{{Type: provider.ToolUse, ID: "legacy", Name: "ls"}, use("a4", "legacy")}},
	}
	before := clone(msgs)
	got := provider.WireIDs(msgs)
	if !reflect.DeepEqual(msgs, before) {
		t.Error("WireIDs modified its input")
	}
	ids := func(m provider.Message) (out []string) {
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.ToolUse:
				out = append(out, "use:"+b.ID+"/"+b.ProviderID)
			case provider.ToolResult:
				out = append(out, "result:"+b.ToolUseID)
			}
		}
		return out
	}
	want := [][]string{nil,
		{"use:call_0/"}, {"result:call_0"},
		// call_0 is taken: the second goes out as aibuddy's id.
		{"use:a2/", "use:toolu_9/"}, {"result:a2", "result:toolu_9", "result:gone"},
		// A block without a provider id keeps its id, and a provider id
		// equal to it falls back to aibuddy's.
		{"use:legacy/", "use:a4/"},
	}
	for i := range want {
		if g := ids(got[i]); !reflect.DeepEqual(g, want[i]) {
			t.Errorf("message %d: %v, want %v", i, g, want[i])
		}
	}
	plain := []provider.Message{{Role: provider.Assistant, Blocks: []provider.Block{{Type: provider.ToolUse, ID: "x"}}}}
	if got := provider.WireIDs(plain); &got[0] != &plain[0] {
		t.Error("without provider ids the messages are not returned as they are")
	}
}

func clone(msgs []provider.Message) []provider.Message {
	b, _ := json.Marshal(msgs)
	var out []provider.Message
	_ = json.Unmarshal(b, &out)
	return out
}
