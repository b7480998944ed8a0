package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/provider/chatmodel"
)

// TestParallelBatchGeminiPairsByID is BH-070's Gemini part: a
// chat-completions route to Gemini's OpenAI-compatible endpoint whose turn
// makes three calls without ids, ending in every order (300, 10, 100 ms
// permuted). The adapter makes up a unique id per call (NewID), and the
// next request pairs each result with its call by that id, never by
// position: the tool messages follow the calls' order, each names its own
// call in its header, and the request is byte for byte the same whatever
// the completion order.
func TestParallelBatchGeminiPairsByID(t *testing.T) {
	calls := []wcall{{"", "fx__slow", `{"name":"a"}`}, {"", "fx__slow", `{"name":"b"}`}, {"", "fx__slow", `{"name":"c"}`}}
	durs := []time.Duration{300 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}
	var first []byte
	for _, p := range permutations(durs) {
		synctest.Test(t, func(t *testing.T) {
			f := &fx{dur: map[string]time.Duration{"a": p[0], "b": p[1], "c": p[2]}}
			api := &wire{t: t, path: "/v1beta/openai/chat/completions", replay: []string{callTurn("chat", calls), answerTurn("chat")}}
			n := 0
			zero := 0
			model := chatmodel.New(chatmodel.Options{APIKey: "gm-key", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai/",
				Model: "gemini-2.5-flash", HTTPClient: &http.Client{Transport: inMemory{api}}, MaxRetries: &zero,
				NewID: func() string { n++; return fmt.Sprintf("gen_%d", n) }})
			a := agent.New(agent.Options{Model: model, ModelName: "gemini-2.5-flash", Set: fxSet(t, t.TempDir(), f)})
			for ev, err := range a.Run(context.Background(), "look up a, b and c") {
				if ev.Kind == agent.EventDone && (err != nil || ev.Summary.Calls != 3) {
					t.Fatalf("err %v summary %+v", err, ev.Summary)
				}
			}
			reqs := api.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			got, at := resultsOf(t, "chat", reqs[1])
			want := []wireResult{{"gen_1", "[gen_1 fx__slow {\"name\":\"a\"}]\nresult of a", false},
				{"gen_2", "[gen_2 fx__slow {\"name\":\"b\"}]\nresult of b", false},
				{"gen_3", "[gen_3 fx__slow {\"name\":\"c\"}]\nresult of c", false}}
			if !slices.Equal(got, want) {
				t.Errorf("durations %v: results %+v, want %+v", p, got, want)
			}
			if len(at) != 3 || at[1] != at[0]+1 || at[2] != at[1]+1 {
				t.Errorf("results not consecutive: %v", at)
			}
			// The assistant message carries the made-up ids, in call order.
			body := string(reqs[1])
			if i1, i2, i3 := strings.Index(body, `"id":"gen_1"`), strings.Index(body, `"id":"gen_2"`), strings.Index(body, `"id":"gen_3"`); i1 < 0 || i1 > i2 || i2 > i3 {
				t.Errorf("tool_calls ids out of order or missing: %s", body)
			}
			if first == nil {
				first = reqs[1]
			} else if string(reqs[1]) != string(first) {
				t.Errorf("durations %v: request 2 differs from the first permutation's:\n%s\n%s", p, reqs[1], first)
			}
		})
	}
}
