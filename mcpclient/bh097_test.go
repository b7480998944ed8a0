package mcpclient_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/tool"
)

// TestBH097LoneSurrogateIsReported is case BH-097 (b): a stdio server's
// tool result whose JSON holds \ud800 without its low half. The text
// reaching the run is valid UTF-8, the lone half is U+FFFD, the proper
// pair (an emoji) is kept, and a note in the result says a lone surrogate
// escape was replaced, so the change is not silent.
func TestBH097LoneSurrogateIsReported(t *testing.T) {
	m := connect(t, nil, scriptedServer("fx", "scripted", `[{"name":"surrogate","inputSchema":{"type":"object"}}]`))
	res := m.Call(context.Background(), &tool.Call{ID: "c", Name: "fx__surrogate", Input: []byte(`{}`)})
	txt := res.AllText()
	if res.IsError || !utf8.ValidString(txt) || !strings.HasPrefix(txt, "ok \uFFFD end \U0001F600") ||
		!strings.Contains(txt, "note: MCP server fx sent 1 lone UTF-16 surrogate escape") {
		t.Errorf("result (error %v): %q", res.IsError, txt)
	}
}
