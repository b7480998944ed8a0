package agent_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/provider"
)

// tooLong is a model that refuses the first `refusals` requests the way an
// adapter reports an API's "prompt is too long" (a *provider.OverflowError)
// and hands the rest to next.
type tooLong struct {
	next     *scripted
	refusals int

	refused []*provider.Request
}

func (m *tooLong) Strategy() provider.Strategy { return m.next.Strategy() }

func (m *tooLong) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	if len(m.refused) < m.refusals {
		cp := *req
		cp.Messages = append([]provider.Message(nil), req.Messages...)
		m.refused = append(m.refused, &cp)
		return func(yield func(provider.Event, error) bool) {
			yield(provider.Event{}, &provider.OverflowError{Provider: "anthropic", Status: 400,
				Reason: "prompt is too long: 212000 tokens > 200000 maximum"})
		}
	}
	return m.next.Stream(ctx, req)
}

// longHistory is a finished earlier run: the task, then n exchanges of a
// read_file call with a result of about 2,000 tokens each. The exchanges
// named in deferred call those (deferred) tracker tools instead.
func longHistory(n int, deferred map[int]string) []provider.Message {
	msgs := []provider.Message{{Role: provider.User, Blocks: []provider.Block{say("go through the files")}}}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("call_old_%d", i)
		u := use(id, "read_file", fmt.Sprintf(`{"path":"f%d.txt"}`, i))
		if name, ok := deferred[i]; ok {
			u = use(id, name, `{"number":7}`)
		}
		msgs = append(msgs,
			provider.Message{Role: provider.Assistant, Blocks: []provider.Block{say(fmt.Sprintf("step %d", i)), u}},
			provider.Message{Role: provider.User, Blocks: []provider.Block{{Type: provider.ToolResult, ToolUseID: id,
				Content: []provider.Block{say(strings.Repeat(fmt.Sprintf("line %d of a long file\n", i), 300))}}}})
	}
	return append(msgs, provider.Message{Role: provider.Assistant, Blocks: []provider.Block{say("read them all")}})
}

// TestRunRetriesAfterContextOverflow: the provider refuses the first
// request as too long (no budget of our own: ContextBudget < 0). The run
// does not fail: the same step is retried over a transcript cut at pair
// boundaries, about half as long, that keeps the task first, says what
// was dropped, is valid for every provider shape, and no longer presents
// the deferred tool whose only call was dropped (while one whose call is
// kept stays). The stored transcript stays whole.
func TestRunRetriesAfterContextOverflow(t *testing.T) {
	tr := &tracker{}
	set := newSet(t, t.TempDir(), nil, tr)
	prior := longHistory(30, map[int]string{3: "tracker__close_issue", 29: "tracker__get_issue"})
	inner := &scripted{turns: []func(*provider.Request) []provider.Block{static(say("summarised"))}}
	m := &tooLong{next: inner, refusals: 1}
	a := agent.New(agent.Options{Model: m, Set: set, Policy: noConfirm(), ContextBudget: -1})
	_, sum, err := drain(t, a.Continue(context.Background(), prior, "now summarise"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn || sum.Steps != 1 {
		t.Fatalf("stop %s after %d steps: %v", sum.Stop, sum.Steps, err)
	}
	if len(m.refused) != 1 || len(inner.requests()) != 1 {
		t.Fatalf("%d refused, %d answered requests; want 1 and 1", len(m.refused), len(inner.requests()))
	}
	first, second := m.refused[0], inner.requests()[0]
	if !has(toolNames(first), "tracker__close_issue") || !has(toolNames(first), "tracker__get_issue") {
		t.Errorf("the first request lacks a deferred tool whose call it holds: %v", toolNames(first))
	}
	full, cut := provider.EstimateTokens(first.Messages, nil), provider.EstimateTokens(second.Messages, nil)
	if cut > full*5/8 || cut < full/8 {
		t.Errorf("retry estimate %d tokens for a refused %d; want about half", cut, full)
	}
	for _, sh := range shapes {
		if err := agent.Validate(second.Messages, sh); err != nil {
			t.Errorf("retried request: %v", err)
		}
	}
	head := second.Messages[0]
	if head.Role != provider.User || head.Blocks[0].Text != "go through the files" {
		t.Errorf("the task is not first: %+v", head)
	}
	if len(head.Blocks) < 2 || !strings.Contains(head.Blocks[1].Text, "earlier step(s) of this run were removed") {
		t.Errorf("no note where exchanges were dropped: %+v", head.Blocks)
	}
	last := second.Messages[len(second.Messages)-1]
	if !strings.Contains(allText([]provider.Message{last}), "now summarise") {
		t.Errorf("the new message is not last: %+v", last)
	}
	if strings.Contains(allText(second.Messages), "line 3 of a long file") {
		t.Error("the oldest exchanges are still there")
	}
	if !strings.Contains(allText(second.Messages), "line 30 of a long file") {
		t.Error("the newest exchange was dropped")
	}
	if has(toolNames(second), "tracker__close_issue") || !has(toolNames(second), "tracker__get_issue") {
		t.Errorf("want tracker__get_issue (its call is kept) and not tracker__close_issue (its only call was dropped): %v", toolNames(second))
	}
	if got := strings.Count(allText(sum.Transcript), "of a long file\n") / 300; got != 30 {
		t.Errorf("the stored transcript holds %d of 30 results", got)
	}
}

// TestRunGivesUpAfterRepeatedOverflow: a provider that refuses every
// request ends the run with the overflow error after MaxOverflowRetries
// retries, instead of looping.
func TestRunGivesUpAfterRepeatedOverflow(t *testing.T) {
	set := newSet(t, t.TempDir(), nil, nil)
	m := &tooLong{next: &scripted{}, refusals: 100}
	a := agent.New(agent.Options{Model: m, Set: set, Policy: noConfirm()})
	_, sum, err := drain(t, a.Continue(context.Background(), longHistory(10, nil), "again"), time.Minute, nil)
	if sum.Stop != agent.StopError || err == nil || !strings.Contains(err.Error(), "prompt is too long") {
		t.Fatalf("stop %s: %v", sum.Stop, err)
	}
	if len(m.refused) != 1+agent.MaxOverflowRetries {
		t.Errorf("%d requests, want %d", len(m.refused), 1+agent.MaxOverflowRetries)
	}
}

// TestRunKeepsWithinBudget: a run whose results pile up past
// ContextBudget. Every request stays within the budget (o200k estimate of
// messages, system and tools), keeps its pairs, and the cut moves only
// when the target is used up (several requests share one cut).
func TestRunKeepsWithinBudget(t *testing.T) {
	ws := t.TempDir()
	set := newSet(t, ws, nil, nil)
	var turns []func(*provider.Request) []provider.Block
	for i := 1; i <= 14; i++ {
		cmd := fmt.Sprintf(`{"command":"for i in $(seq 1 120); do echo step %d line $i of the output; done"}`, i)
		turns = append(turns, static(say(fmt.Sprintf("step %d", i)), use(fmt.Sprintf("c%d", i), "execute", cmd)))
	}
	turns = append(turns, static(say("done")))
	m := &scripted{turns: turns}
	const budget = 12_000
	a := agent.New(agent.Options{Model: m, Set: set, Policy: noConfirm(), ContextBudget: budget, System: "be brief"})
	_, sum, err := drain(t, a.Run(context.Background(), "run the steps"), 2*time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn {
		t.Fatalf("stop %s: %v", sum.Stop, err)
	}
	checkRequests(t, m)
	cuts := map[string]bool{}
	cutAny := false
	for i, req := range m.requests() {
		n := provider.EstimateTokens(req.Messages, countO200k) + countO200k(req.System)
		for _, tl := range req.Tools {
			n += provider.BlockOverheadTokens + countO200k(tl.Name) + countO200k(tl.Description) + countO200k(string(tl.InputSchema))
		}
		if n > budget {
			t.Errorf("request %d: %d tokens over the budget %d", i, n, budget)
		}
		if req.Messages[0].Blocks[0].Text != "run the steps" {
			t.Errorf("request %d does not start with the task", i)
		}
		if len(req.Messages[0].Blocks) > 1 {
			cutAny = true
			cuts[req.Messages[0].Blocks[1].Text] = true
		}
	}
	t.Logf("%d requests, %d distinct cuts", len(m.requests()), len(cuts))
	if !cutAny {
		t.Fatal("nothing was ever dropped: the test does not exercise the budget")
	}
	if n := len(m.requests()); len(cuts) >= n-1 {
		t.Errorf("%d different cuts over %d requests: the cut moved at every step", len(cuts), n)
	}
}

// noConfirm is a policy that confirms nothing.
func noConfirm() *approval.Policy { return &approval.Policy{} }

// countO200k is the agent's estimate.
func countO200k(s string) int { return compact.Count(s) }
