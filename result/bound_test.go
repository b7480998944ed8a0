package result_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// bigText is n lines "row NNNNNNN <filler>\n" of 1,000 characters each,
// with one decisive line in the middle.
func bigText(lines int) string {
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		if i == lines/2 {
			s := fmt.Sprintf("FATAL: symbol rotate_key undefined (row %d)", i)
			b.WriteString(s + strings.Repeat(".", 999-len(s)) + "\n")
			continue
		}
		s := fmt.Sprintf("row %07d ", i)
		b.WriteString(s + strings.Repeat("x", 999-len(s)) + "\n")
	}
	return b.String()
}

var recoverCall = regexp.MustCompile(`view_tool_call (\{[^}]*\})`)

// viewBody runs view_tool_call with input over st and returns the slice
// after the "---" line (one slice may hold the whole source here).
func viewBody(t *testing.T, st store.Store, input string) string {
	t.Helper()
	v := compact.ViewToolCall(st, t.TempDir(), &compact.ViewOptions{MaxChars: 2_000_000, MaxTokens: 1 << 30,
		Counter: func(s string) int { return len(s) / 4 }})
	res := v.Call(context.Background(), &tool.Call{ID: "v", Name: compact.ViewToolCallName, Input: json.RawMessage(input)})
	if res.IsError {
		t.Fatalf("view_tool_call %s: %s", input, res.AllText())
	}
	_, body, ok := strings.Cut(res.AllText(), "\n---\n")
	if !ok {
		t.Fatalf("no body: %.300s", res.AllText())
	}
	return body
}

// BH-049: an MCP-like tool returns 1.2 M characters in one text block.
// The result handed back is bounded, with a header first; the record
// keeps the raw output; view_tool_call recovers the omitted middle exactly.
func TestBH049HugeResultIsBoundedAndRecoverable(t *testing.T) {
	st := openStore(t)
	rec := result.New(st, nil)
	raw := bigText(1200)
	if len(raw) != 1_200_000 {
		t.Fatalf("fixture %d", len(raw))
	}
	res := rec.Call(context.Background(), "task", &tool.Call{ID: "mcp_1", Name: "docs__dump"}, func(context.Context, *tool.Call) *tool.Result {
		return tool.TextWith(raw, tool.Evidence{"server": "docs"})
	})
	text := res.AllText()
	if n := utf8.RuneCountInString(text); n > result.DefaultMaxModelChars+1000 {
		t.Fatalf("model projection has %d characters", n)
	}
	header, _, _ := strings.Cut(text, "\n")
	want := "[cut by aibuddy at the 30,000-character result bound: 1,200,000 characters in 1,200 lines produced; 30,000 characters shown (first 15,000 and last 15,000); 1,170,000 characters omitted (lines 16-1,185); recover them with view_tool_call "
	if !strings.HasPrefix(header, want) {
		t.Fatalf("header:\n%s\nwant prefix\n%s", header, want)
	}
	if !strings.Contains(text, raw[:15000]) || !strings.Contains(text, raw[len(raw)-15000:]) || strings.Contains(text, "FATAL") {
		t.Fatal("head or tail not kept exactly, or the middle leaked")
	}
	if res.Evidence["server"] != "docs" || res.Evidence["model_omitted_chars"] != 1_170_000 {
		t.Fatalf("evidence %v", res.Evidence)
	}
	got, err := st.Get(context.Background(), "mcp_1")
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := result.Decode(got.Output); w.Text() != raw {
		t.Fatal("the record does not keep the raw output whole")
	}
	if m, _ := result.ModelOf(got); m.Text != raw {
		t.Fatal("the record's model form is not whole (compaction works from it)")
	}

	// The header's own recovery call returns whole lines 16-1,185, which
	// are the omitted characters 15,000-1,185,000 exactly.
	mm := recoverCall.FindStringSubmatch(header)
	if mm == nil {
		t.Fatalf("no recovery call in %q", header)
	}
	body := viewBody(t, st, mm[1])
	if body != raw[15*1000:1185*1000] {
		t.Fatalf("recovered %d characters, want lines 16-1185", len(body))
	}
	if raw[:15000]+body+raw[1185*1000:] != raw {
		t.Fatal("head + recovered + tail is not the raw output")
	}
	// A pattern finds the decisive line.
	if b := viewBody(t, st, `{"toolCallId":"mcp_1","part":"result","pattern":"FATAL"}`); !strings.Contains(b, "FATAL: symbol rotate_key undefined (row 600)") {
		t.Fatalf("pattern: %.300s", b)
	}
}

// The omitted range is character-exact and its line numbers match
// view_tool_call's, also when the cut falls inside a line and the result
// has several blocks and an image.
func TestBoundBlocksAndImages(t *testing.T) {
	img := tool.Content{Type: tool.ImageContent, Data: []byte{1, 2, 3}, MIMEType: "image/png"}
	res := &tool.Result{Content: []tool.Content{
		{Type: tool.TextContent, Text: strings.Repeat("a", 50) + "\n" + strings.Repeat("b", 50)},
		img,
		{Type: tool.TextContent, Text: strings.Repeat("c", 200)},
		{Type: tool.TextContent, Text: "TAIL-" + strings.Repeat("d", 20)},
	}}
	out := result.Bound(res, "id1", 60, true)
	if out == res {
		t.Fatal("not bounded")
	}
	var images int
	for _, c := range out.Content {
		if c.Type == tool.ImageContent {
			images++
			if string(c.Data) != "\x01\x02\x03" || c.MIMEType != "image/png" {
				t.Fatalf("image changed: %+v", c)
			}
		}
	}
	if images != 1 {
		t.Fatalf("images %d", images)
	}
	text := out.AllText()
	joined := res.AllText()
	if !strings.Contains(text, joined[:30]) || !strings.HasSuffix(text, joined[len(joined)-30:]) {
		t.Fatalf("head/tail lost:\n%s", text)
	}
	// joined: line 1 "a…", line 2 "b…", line 3 the image placeholder,
	// line 4 "c…", line 5 "TAIL-d…"; the last 30 characters reach into
	// line 4.
	omitted := utf8.RuneCountInString(joined) - 60
	if !strings.Contains(text, strconv.Itoa(omitted)+" characters omitted (lines 1-4);") || !strings.Contains(text, "\n["+strconv.Itoa(omitted)+" characters omitted: lines 1-4]\n") {
		t.Fatalf("marker:\n%s", text)
	}
	// Within the bound: the same result, untouched.
	small := tool.Text(strings.Repeat("z", 60))
	if result.Bound(small, "id", 60, true) != small {
		t.Fatal("a result within the bound was copied")
	}
}

// A result its tool already capped (execute: evidence shown_chars within
// the bound) is not marked twice, even though its header makes the text
// a little longer than the bound; one that claims a larger cap is bounded.
func TestBoundLeavesToolCappedResults(t *testing.T) {
	body := "exit code: 0\noutput: 80,000 characters produced; 30,000 shown\n---\n" + strings.Repeat("y", 30000)
	capped := tool.TextWith(body, tool.Evidence{"shown_chars": int64(30000), "omitted_chars": int64(50000)})
	if result.Bound(capped, "x", 30000, true) != capped {
		t.Fatal("execute's own cap was marked again")
	}
	wide := tool.TextWith(body+strings.Repeat("y", 50000), tool.Evidence{"shown_chars": int64(80000)})
	if out := result.Bound(wide, "x", 30000, true); out == wide || !strings.HasPrefix(out.AllText(), "[cut by aibuddy at ") {
		t.Fatal("a tool cap over the bound was let through")
	}
}

// When the record cannot be written the projection is still bounded and
// says the middle cannot be recovered.
func TestBoundStoreFailureSaysUnrecoverable(t *testing.T) {
	rec := result.New(failStore{}, &result.Options{MaxModelChars: 1000})
	res := rec.Call(context.Background(), "t", &tool.Call{ID: "x", Name: "dump"}, func(context.Context, *tool.Call) *tool.Result {
		return tool.Text(strings.Repeat("q\n", 5000))
	})
	text := res.AllText()
	if utf8.RuneCountInString(text) > 2000 || !strings.Contains(text, "cannot be recovered") || strings.Contains(text, `view_tool_call {"toolCallId"`) {
		t.Fatalf("%s", text)
	}
}

// The record keeps the whole model form (compaction counts the complete
// result); Pair, which answers an interrupted turn from the records, gives
// back exactly what the Recorder returned, and a tool-capped result read
// from its record is not marked again.
func TestPairBoundsLikeTheRecorder(t *testing.T) {
	st := openStore(t)
	rec := result.New(st, nil)
	raw := bigText(100)
	res := rec.Call(context.Background(), "t", &tool.Call{ID: "b1", Name: "dump"}, func(context.Context, *tool.Call) *tool.Result { return tool.Text(raw) })
	got, _ := st.Get(context.Background(), "b1")
	if w, _ := result.Decode(got.Model); w.Text() != raw {
		t.Fatal("the record's model form is not whole")
	}
	capped := strings.Repeat("e", 30100)
	rec.Call(context.Background(), "t", &tool.Call{ID: "x1", Name: "execute"}, func(context.Context, *tool.Call) *tool.Result {
		return tool.TextWith(capped, tool.Evidence{"shown_chars": 30000})
	})
	ms, err := result.Pair(context.Background(), st, []result.Use{{ID: "b1"}, {ID: "x1"}})
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Text != res.AllText() {
		t.Fatal("Pair differs from the returned projection")
	}
	if ms[1].Text != capped {
		t.Fatal("a tool-capped result was marked again")
	}
}
