package agent_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/provider"
)

// TestDroppedExchangesAreNamedAndRecoverable: a run whose results exceed
// the context budget (every call under the provider id "call_0"). The
// note that replaces the dropped exchanges names every dropped call (tool,
// arguments of at most 80 characters, aibuddy's id); the model picks the
// oldest from the note and view_tool_call gives its whole result back.
func TestDroppedExchangesAreNamedAndRecoverable(t *testing.T) {
	st := openStore(t)
	set := recordsSet(t, st, "unused")
	var turns []func(*provider.Request) []provider.Block
	for i := 1; i <= 12; i++ {
		cmd := fmt.Sprintf(`{"command":"for i in $(seq 1 120); do echo step %d line $i of the output of this step; done"}`, i)
		turns = append(turns, static(say(fmt.Sprintf("step %d", i)), use("call_0", "execute", cmd)))
	}
	line := regexp.MustCompile(`(?m)^- (\S+) (.*) id=(\S+)$`)
	var named [][]string
	turns = append(turns, func(req *provider.Request) []provider.Block {
		head := req.Messages[0]
		if len(head.Blocks) < 2 {
			t.Fatal("no exchange was dropped: the test does not exercise the budget")
		}
		note := head.Blocks[1].Text
		named = line.FindAllStringSubmatch(note, -1)
		if len(named) == 0 {
			t.Fatalf("the note names no call:\n%s", note)
		}
		return []provider.Block{use("call_0", "view_tool_call", `{"id":"`+named[0][3]+`","part":"result"}`)}
	}, func(req *provider.Request) []provider.Block {
		last := req.Messages[len(req.Messages)-1]
		text := allText([]provider.Message{last})
		if !strings.Contains(text, "step 1 line 1 of the output") || !strings.Contains(text, "step 1 line 120 of the output") {
			t.Errorf("view_tool_call of the oldest dropped call did not return its output:\n%.500s", text)
		}
		return []provider.Block{say("done")}
	})
	m := &scripted{turns: turns}
	a := agent.New(agent.Options{Model: m, Set: set, Store: st, Policy: noConfirm(), ContextBudget: 9000, System: "be brief"})
	_, sum, err := drain(t, a.Run(context.Background(), "run the steps"), 2*time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn {
		t.Fatalf("stop %s: %v", sum.Stop, err)
	}
	// The 13th request dropped some of the 12 exchanges: the note names
	// exactly those calls, oldest first, by aibuddy's ids.
	var calls []provider.Block
	for _, msg := range sum.Transcript {
		for _, b := range msg.Blocks {
			if b.Type == provider.ToolUse && b.Name == "execute" {
				calls = append(calls, b)
			}
		}
	}
	if len(named) >= len(calls) {
		t.Fatalf("the note names %d calls of %d: nothing was kept?", len(named), len(calls))
	}
	for i, n := range named {
		c := calls[i]
		if n[1] != "execute" || n[3] != c.ID || n[3] == "call_0" {
			t.Errorf("note line %d names %s id=%s, want execute id=%s", i, n[1], n[3], c.ID)
		}
		if utf8.RuneCountInString(n[2]) > 80 || !strings.HasPrefix(n[2], `{"command":"for i in $(seq 1 120); do echo step `) || !strings.HasSuffix(n[2], "…") {
			t.Errorf("note line %d arguments %q: want the call's JSON cut to 80 characters", i, n[2])
		}
		if _, err := st.Get(context.Background(), n[3]); err != nil {
			t.Errorf("the named call %s has no record: %v", n[3], err)
		}
	}
}
