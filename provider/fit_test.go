package provider_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/provider"
)

// genTranscript builds a random transcript that is valid for shape
// (checked with agent.Validate): the task, then steps of an assistant turn
// with 0-3 tool calls and their results. Anthropic: strict alternation,
// results first in the next user message. OpenAI chat: the same, plus
// separate user text messages after a results message and assistant turns
// in a row. OpenAI Responses: additionally a result may come messages
// after its call (another assistant item in between).
func genTranscript(rng *rand.Rand, shape agent.Shape, steps int) []provider.Message {
	text := func(role provider.Role, n int) provider.Message {
		return provider.Message{Role: role, Blocks: []provider.Block{{Type: provider.Text, Text: strings.Repeat("word ", n)}}}
	}
	msgs := []provider.Message{text(provider.User, 5+rng.IntN(20))}
	id := 0
	var pending []provider.Block // Responses: results held back
	for s := 0; s < steps; s++ {
		a := provider.Message{Role: provider.Assistant}
		if rng.IntN(3) > 0 {
			a.Blocks = append(a.Blocks, provider.Block{Type: provider.Text, Text: strings.Repeat("think ", 1+rng.IntN(30))})
		}
		calls := rng.IntN(4)
		var results []provider.Block
		for c := 0; c < calls; c++ {
			id++
			cid := fmt.Sprintf("call_%d", id)
			a.Blocks = append(a.Blocks, provider.Block{Type: provider.ToolUse, ID: cid, Name: "read_file", Input: json.RawMessage(`{"path":"f"}`)})
			r := provider.Block{Type: provider.ToolResult, ToolUseID: cid, Content: []provider.Block{{Type: provider.Text, Text: strings.Repeat("out ", rng.IntN(400))}}}
			if rng.IntN(8) == 0 {
				r.Content = append(r.Content, provider.Block{Type: provider.Image, MIMEType: "image/png", Data: []byte("PNG")})
			}
			results = append(results, r)
		}
		if len(a.Blocks) == 0 {
			a.Blocks = append(a.Blocks, provider.Block{Type: provider.Text, Text: "ok"})
		}
		if shape == agent.OpenAIResponses && len(pending) > 0 {
			// The held-back results come after this assistant item.
			msgs = append(msgs, a, provider.Message{Role: provider.User, Blocks: pending})
			pending = nil
			a = provider.Message{}
		}
		if len(a.Blocks) > 0 {
			msgs = append(msgs, a)
		}
		if len(results) > 0 {
			if shape == agent.OpenAIResponses && rng.IntN(3) == 0 {
				pending = results
			} else {
				msgs = append(msgs, provider.Message{Role: provider.User, Blocks: results})
			}
		}
		switch {
		case len(pending) > 0:
		case shape == agent.Anthropic && msgs[len(msgs)-1].Role == provider.Assistant:
			msgs = append(msgs, text(provider.User, 1+rng.IntN(10)))
		case shape == agent.Anthropic && rng.IntN(4) == 0:
			last := &msgs[len(msgs)-1]
			last.Blocks = append(slices.Clone(last.Blocks), provider.Block{Type: provider.Text, Text: "go on"})
		case shape != agent.Anthropic && rng.IntN(4) == 0:
			msgs = append(msgs, text(provider.User, 1+rng.IntN(10)))
		}
	}
	if len(pending) > 0 {
		msgs = append(msgs, provider.Message{Role: provider.User, Blocks: pending})
	}
	return msgs
}

func callIDs(msgs []provider.Message) []string {
	var ids []string
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type == provider.ToolUse {
				ids = append(ids, b.ID)
			}
		}
	}
	return ids
}

// TestFitKeepsPairsProperty: over random valid transcripts of each
// provider shape and random budgets, Fit's output (a) still passes the
// shape's pairing rules, (b) starts with the task, (c) is the task, one
// note and an unchanged suffix of the input, (d) fits the budget unless
// only the newest exchange is left, and (e) names in its report exactly
// the calls that are gone.
func TestFitKeepsPairsProperty(t *testing.T) {
	count := func(s string) int { return len(strings.Fields(s)) + 1 }
	for _, shape := range []agent.Shape{agent.Anthropic, agent.OpenAIChat, agent.OpenAIResponses} {
		t.Run(string(shape), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(shape))))
			dropped := 0
			for iter := 0; iter < 400; iter++ {
				msgs := genTranscript(rng, shape, 1+rng.IntN(25))
				if err := agent.Validate(msgs, shape); err != nil {
					t.Fatalf("generator: %v", err)
				}
				full := provider.EstimateTokens(msgs, count)
				budget := 1 + rng.IntN(full+full/4)
				opts := provider.FitOptions{Budget: budget, Count: count}
				if rng.IntN(2) == 0 {
					opts.Target = budget * 3 / 4
				}
				if rng.IntN(3) == 0 {
					opts.MinDrop = rng.IntN(6)
				}
				before := slices.Clone(msgs)
				out, rep := provider.Fit(msgs, opts)
				if !reflect.DeepEqual(msgs, before) {
					t.Fatal("Fit modified its input")
				}
				if err := agent.Validate(out, shape); err != nil {
					t.Fatalf("iteration %d (budget %d of %d): %v", iter, budget, full, err)
				}
				if full <= budget {
					if rep.Exchanges != 0 || !reflect.DeepEqual(out, msgs) {
						t.Fatalf("a transcript within budget was changed (%d ≤ %d)", full, budget)
					}
					continue
				}
				if rep.Exchanges == 0 {
					continue // a single exchange: nothing can go
				}
				dropped++
				task := msgs[0].Blocks[0]
				if !reflect.DeepEqual(out[0].Blocks[0], task) || out[0].Role != provider.User {
					t.Fatalf("the task is not first: %+v", out[0])
				}
				note := out[0].Blocks[len(msgs[0].Blocks)]
				if !strings.Contains(note.Text, fmt.Sprintf("%d earlier step(s)", rep.Steps)) || !strings.Contains(note.Text, "view_tool_call") {
					t.Fatalf("note %q", note.Text)
				}
				// The rest is an unchanged suffix of the input (the first
				// kept message may be merged into the note's message).
				tail := out[1:]
				var merged []provider.Block
				if extra := out[0].Blocks[len(msgs[0].Blocks)+1:]; len(extra) > 0 {
					merged = extra
				}
				k := len(msgs) - len(tail)
				if merged != nil {
					k--
					if !reflect.DeepEqual(msgs[k].Blocks, merged) {
						t.Fatalf("merged blocks differ from message %d", k)
					}
				}
				if k < 1 || !reflect.DeepEqual(msgs[len(msgs)-len(tail):], tail) {
					t.Fatalf("the kept messages are not a suffix of the input")
				}
				gone := callIDs(msgs[1:k])
				if !slices.Equal(gone, rep.CallIDs) && !(len(gone) == 0 && rep.CallIDs == nil) {
					t.Fatalf("report names %v, gone %v", rep.CallIDs, gone)
				}
				if len(slices.DeleteFunc(callIDs(out), func(id string) bool { return !slices.Contains(gone, id) })) != 0 {
					t.Fatal("a dropped call is still in the output")
				}
				if rep.Tokens != provider.EstimateTokens(out, count) {
					t.Fatalf("report tokens %d, estimate %d", rep.Tokens, provider.EstimateTokens(out, count))
				}
				if rep.Over != (rep.Tokens > budget) {
					t.Fatalf("Over %v with %d tokens for %d", rep.Over, rep.Tokens, budget)
				}
			}
			if dropped < 100 {
				t.Errorf("only %d of 400 transcripts were cut; the property is barely exercised", dropped)
			}
		})
	}
}

// TestFitDropsWholeExchanges: a fixed Anthropic transcript with parallel
// calls; the budget leaves room for the task and the last two steps only.
// The first step's two calls go together with both results; the note says
// 1 step and names the calls.
func TestFitDropsWholeExchanges(t *testing.T) {
	u := func(bs ...provider.Block) provider.Message { return provider.Message{Role: provider.User, Blocks: bs} }
	a := func(bs ...provider.Block) provider.Message {
		return provider.Message{Role: provider.Assistant, Blocks: bs}
	}
	txt := func(s string) provider.Block { return provider.Block{Type: provider.Text, Text: s} }
	call := func(id string) provider.Block {
		return provider.Block{Type: provider.ToolUse, ID: id, Name: "read_file", Input: json.RawMessage(`{}`)}
	}
	res := func(id string, n int) provider.Block {
		return provider.Block{Type: provider.ToolResult, ToolUseID: id, Content: []provider.Block{txt(strings.Repeat("x", n))}}
	}
	msgs := []provider.Message{
		u(txt("the task")),
		a(call("tu_1"), call("tu_2")),
		u(res("tu_1", 4000), res("tu_2", 4000)),
		a(call("tu_3")),
		u(res("tu_3", 400)),
		a(txt("done")),
	}
	out, rep := provider.Fit(msgs, provider.FitOptions{Budget: 1000})
	if rep.Exchanges != 1 || rep.Steps != 1 || !slices.Equal(rep.CallIDs, []string{"tu_1", "tu_2"}) || rep.Over {
		t.Fatalf("report %+v", rep)
	}
	if err := agent.Validate(out, agent.Anthropic); err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out[0].Blocks[0].Text != "the task" || !strings.Contains(out[0].Blocks[1].Text, "2 tool calls:\n- read_file {} id=tu_1\n- read_file {} id=tu_2\n") ||
		out[1].Blocks[0].ID != "tu_3" {
		t.Fatalf("out %+v", out)
	}
	// The same cut is kept while it still fits (MinDrop), even though
	// more could go.
	out2, rep2 := provider.Fit(msgs, provider.FitOptions{Budget: 1000, Target: 10, MinDrop: 1})
	if rep2.Exchanges != 1 || !reflect.DeepEqual(out2, out) {
		t.Fatalf("MinDrop did not keep the cut: %+v", rep2)
	}
	// Within budget: unchanged.
	if out3, rep3 := provider.Fit(msgs, provider.FitOptions{Budget: 100000}); rep3.Exchanges != 0 || !reflect.DeepEqual(out3, msgs) {
		t.Fatalf("changed within budget: %+v", rep3)
	}
	// The newest exchange alone is over: it stays, Over says so.
	_, rep4 := provider.Fit(msgs, provider.FitOptions{Budget: 10})
	if !rep4.Over || rep4.Exchanges != 2 {
		t.Fatalf("tiny budget: %+v", rep4)
	}
}

// TestDroppedNoteNamesEveryCallWithinABound: a note names each dropped
// call with its tool, its arguments cut to 80 characters and its id; with
// thousands dropped it names the newest 25, counts the rest, says how to
// list them, and stays short.
func TestDroppedNoteNamesEveryCallWithinABound(t *testing.T) {
	calls := []provider.DroppedCall{
		{ID: "call_a", Tool: "read_file", Input: json.RawMessage(`{ "path" : "src/main.go" }`)},
		{ID: "call_b", Tool: "execute", Input: json.RawMessage(`{"command":"` + strings.Repeat("ü", 200) + `"}`)},
		{ID: "call_c", Tool: "ls", Input: nil},
	}
	note := provider.DroppedNote(2, calls, &provider.NoteOptions{ListCommand: "aibuddy calls list --task t1"})
	for _, want := range []string{
		"2 earlier step(s)", "They held 3 tool calls:",
		"\n- read_file {\"path\":\"src/main.go\"} id=call_a\n",
		"\n- execute {\"command\":\"" + strings.Repeat("ü", 80-13) + "… id=call_b\n",
		"\n- ls {} id=call_c\n", `view_tool_call {"id": "<id>"}`,
	} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "calls list") {
		t.Errorf("a note naming every call points to the list command:\n%s", note)
	}

	var many []provider.DroppedCall
	for i := range 5000 {
		many = append(many, provider.DroppedCall{ID: fmt.Sprintf("call_%04d", i), Tool: "execute",
			Input: json.RawMessage(fmt.Sprintf(`{"command":"make test-%d %s"}`, i, strings.Repeat("x", 500)))})
	}
	note = provider.DroppedNote(5000, many, &provider.NoteOptions{ListCommand: "aibuddy calls list --task t1"})
	if n := strings.Count(note, "\n- execute "); n != provider.DefaultNoteCalls {
		t.Errorf("a note over 5,000 dropped calls names %d, want %d", n, provider.DefaultNoteCalls)
	}
	for _, want := range []string{"They held 5000 tool calls; the newest 25:", "id=call_4975\n", "id=call_4999\n",
		"and 4975 older calls before them (`aibuddy calls list --task t1` lists every call of this run with its id)"} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "id=call_4974") {
		t.Error("the note names more than the newest 25")
	}
	if len(note) > 25*140+600 {
		t.Errorf("the note is %d bytes for 5,000 calls: not bounded", len(note))
	}
}

// TestIsOverflow: the wordings providers use, and what is not an overflow.
func TestIsOverflow(t *testing.T) {
	cases := []struct {
		status      int
		code, msg   string
		wantOverlow bool
	}{
		{400, "", "prompt is too long: 208310 tokens > 200000 maximum", true},
		{400, "context_length_exceeded", "Your input exceeds the context window of this model.", true},
		{400, "", "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens", true},
		{0, "", "openaimodel: response failed: context_length_exceeded: too long", true},
		{413, "", "request_too_large", true},
		{400, "", "the request exceeds the available context size, try increasing it", true},
		{429, "", "exceeds the maximum context length rate", false},
		{400, "invalid_function_parameters", "Invalid schema", false},
		{500, "", "prompt is too long", false},
	}
	for _, c := range cases {
		if got := provider.IsOverflow(c.status, c.code, c.msg); got != c.wantOverlow {
			t.Errorf("IsOverflow(%d, %q, %q) = %v", c.status, c.code, c.msg, got)
		}
	}
}

// BenchmarkFit: a 400-exchange transcript (about 1,000,000 o200k tokens)
// cut to the agent's default budget of 150,000, counting with
// compact.Count uncached (the agent caches long texts, so its later steps
// cost less): the work is bounded by the budget, not the transcript.
func BenchmarkFit(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 7))
	var msgs []provider.Message
	msgs = append(msgs, provider.Message{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "the task"}}})
	for i := 0; i < 400; i++ {
		id := fmt.Sprintf("call_%d", i)
		var sb strings.Builder
		for sb.Len() < 10_000 {
			fmt.Fprintf(&sb, "line %d: value=%d status=ok\n", rng.IntN(100000), rng.IntN(1<<30))
		}
		msgs = append(msgs,
			provider.Message{Role: provider.Assistant, Blocks: []provider.Block{{Type: provider.ToolUse, ID: id, Name: "execute", Input: json.RawMessage(`{"command":"make test"}`)}}},
			provider.Message{Role: provider.User, Blocks: []provider.Block{{Type: provider.ToolResult, ToolUseID: id, Content: []provider.Block{{Type: provider.Text, Text: sb.String()}}}}})
	}
	total := provider.EstimateTokens(msgs, compact.Count)
	for b.Loop() {
		out, rep := provider.Fit(msgs, provider.FitOptions{Budget: 150_000, Target: 112_500, Count: compact.Count})
		if rep.Over || len(out) >= len(msgs) {
			b.Fatal("not cut")
		}
	}
	b.ReportMetric(float64(total), "input-tokens")
}
