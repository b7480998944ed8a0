package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/internal/proctest"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

var shapes = []agent.Shape{agent.Anthropic, agent.OpenAIChat, agent.OpenAIResponses}

// drain runs the agent to the end and returns the events and the final
// error; it fails the test when the run does not end within limit (a
// generous "does not hang" bound, not a timing assertion).
func drain(t *testing.T, seq func(func(agent.Event, error) bool), limit time.Duration, onEvent func(agent.Event)) ([]agent.Event, *agent.Summary, error) {
	t.Helper()
	type out struct {
		evs []agent.Event
		sum *agent.Summary
		err error
	}
	ch := make(chan out, 1)
	go func() {
		var o out
		for ev, err := range seq {
			o.evs = append(o.evs, ev)
			if onEvent != nil {
				onEvent(ev)
			}
			if ev.Kind == agent.EventDone {
				o.sum, o.err = ev.Summary, err
			}
		}
		ch <- o
	}()
	select {
	case o := <-ch:
		if o.sum == nil {
			t.Fatal("the run ended without a Done event")
		}
		return o.evs, o.sum, o.err
	case <-time.After(limit):
		t.Fatalf("the run did not end within %s", limit)
	}
	return nil, nil, nil
}

// checkRequests asserts every request the model got is valid for every
// provider shape.
func checkRequests(t *testing.T, m *scripted) {
	t.Helper()
	for i, req := range m.requests() {
		for _, sh := range shapes {
			if err := agent.Validate(req.Messages, sh); err != nil {
				t.Errorf("request %d: %v", i, err)
			}
		}
	}
}

func TestRunDeferredToolFoundBySearch(t *testing.T) {
	tr := &tracker{}
	set := newSet(t, t.TempDir(), nil, tr)
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		func(req *provider.Request) []provider.Block {
			names := toolNames(req)
			if has(names, "tracker__create_issue") || !has(names, "tool_search") || !has(names, "read_file") {
				t.Errorf("step 1 tools: %v", names)
			}
			return []provider.Block{use("c1", "tracker__create_issue", `{"title":"too early"}`)}
		},
		static(use("c2", "tool_search", `{"query":"create a new issue in the tracker"}`)),
		func(req *provider.Request) []provider.Block {
			if !has(toolNames(req), "tracker__create_issue") {
				t.Errorf("step 3 tools lack the found tool: %v", toolNames(req))
			}
			return []provider.Block{use("c3", "tracker__create_issue", `{"title":"Bug"}`)}
		},
		static(say("Filed.")),
	}}
	a := agent.New(agent.Options{Model: m, Set: set})
	evs, sum, err := drain(t, a.Run(context.Background(), "file a bug"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn || sum.Steps != 4 || sum.Calls != 3 {
		t.Fatalf("err %v, summary %+v", err, sum)
	}
	if sum.Failures[tool.Discovery] != 1 || len(sum.Failures) != 1 {
		t.Errorf("failures by stage: %v", sum.Failures)
	}
	if got := tr.got(); len(got) != 1 || got[0] != `tracker__create_issue {"title":"Bug"}` {
		t.Errorf("tracker calls: %q", got)
	}
	var results []string
	for _, ev := range evs {
		if ev.Kind == agent.EventToolResult {
			results = append(results, ev.ProviderCallID+":"+string(ev.Result.Stage))
		}
	}
	if strings.Join(results, ",") != "c1:discovery,c2:,c3:" {
		t.Errorf("results: %v", results)
	}
	checkRequests(t, m)
}

func TestRunNativeStrategyMarksDeferredTools(t *testing.T) {
	tr := &tracker{}
	set := newSet(t, t.TempDir(), nil, tr)
	m := &scripted{strategy: provider.Native, turns: []func(*provider.Request) []provider.Block{
		func(req *provider.Request) []provider.Block {
			deferred, direct := 0, 0
			for _, tl := range req.Tools {
				switch {
				case tl.Name == "tool_search":
					t.Errorf("native strategy sent aibuddy's tool_search")
				case strings.HasPrefix(tl.Name, "tracker__") && tl.Deferred:
					deferred++
				case strings.HasPrefix(tl.Name, "tracker__"):
					t.Errorf("%s not marked deferred", tl.Name)
				case tl.Deferred:
					t.Errorf("core tool %s marked deferred", tl.Name)
				default:
					direct++
				}
			}
			if deferred != 12 || direct != 7 {
				t.Errorf("deferred %d direct %d", deferred, direct)
			}
			// The provider's own search expanded it: callable at once.
			return []provider.Block{use("n1", "tracker__get_issue", `{"number":7}`)}
		},
		static(say("done")),
	}}
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: set}).Run(context.Background(), "look at #7"), time.Minute, nil)
	if err != nil || len(sum.Failures) != 0 || len(tr.got()) != 1 {
		t.Fatalf("err %v failures %v calls %v", err, sum.Failures, tr.got())
	}
}

func TestRunConfirm(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{"build", "dist"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=abc123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(filepath.Join(ws, p)); return err == nil }
	set := newSet(t, ws, nil, nil)
	c := &confirmer{answers: []bool{false, true, true, false, false, false}}
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("e1", "execute", `{"command":"rm -rf build"}`)),
		func(req *provider.Request) []provider.Block {
			if !exists("build") {
				t.Error("rejected rm -rf build ran")
			}
			if !strings.Contains(allText(req.Messages), "Rejected: execute `rm -rf build`") {
				t.Error("the rejection is not in the rebuilt context as user text")
			}
			// The very same action again: asked again.
			return []provider.Block{use("e2", "execute", `{"command": "rm -rf build"}`)}
		},
		func(req *provider.Request) []provider.Block {
			if exists("build") {
				t.Error("approved rm -rf build did not run")
			}
			if !strings.Contains(allText(req.Messages), "Approved: execute `rm -rf build`") {
				t.Error("the approval is not in the rebuilt context")
			}
			// A similar later action is asked for again.
			return []provider.Block{use("e3", "execute", `{"command":"rm -rf dist"}`)}
		},
		static( // BH-059: commands naming a path denied to file tools
			use("s1", "execute", `{"command":"cat .env"}`),
			use("s2", "execute", `{"command":"grep KEY .env"}`),
			use("s3", "execute", `{"command":"sed -n 1p .env"}`)),
		static(use("r1", "read_file", `{"path":".env"}`)),
		static(say("ok")),
	}}
	evs, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: set, Confirmer: c}).Run(context.Background(), "clean up"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if exists("dist") {
		t.Error("approved rm -rf dist did not run")
	}
	if len(c.actions) != 6 {
		t.Fatalf("confirmations asked: %d, want 6 (each action on its own)", len(c.actions))
	}
	if c.actions[0].Key() != c.actions[1].Key() || c.actions[1].Key() == c.actions[2].Key() {
		t.Error("action keys: the same exact action must share a key, a similar one must not")
	}
	for i, a := range c.actions {
		if a.CallID == "" || a.Target == "" || a.Scope == "" || a.Consequence == "" || len(a.Reasons) == 0 {
			t.Errorf("action %d lacks target/scope/consequence/reasons: %+v", i, a)
		}
	}
	if !strings.Contains(strings.Join(c.actions[3].Reasons, " "), ".env") {
		t.Errorf("cat .env reasons: %v", c.actions[3].Reasons)
	}
	if sum.Failures[tool.Authorization] != 5 || len(sum.Exchanges) != 6 {
		t.Errorf("failures %v, exchanges %d", sum.Failures, len(sum.Exchanges))
	}
	var decisions int
	for _, ev := range evs {
		if ev.Kind == agent.EventDecision {
			decisions++
		}
		if ev.Kind == agent.EventOutput && strings.Contains(string(ev.Output.Data), "abc123") {
			t.Error("a denied path's content reached the output")
		}
	}
	if decisions != 6 {
		t.Errorf("decision events: %d", decisions)
	}
	if strings.Contains(allText(sum.Transcript), "abc123") {
		t.Error("the .env content reached the transcript")
	}
	checkRequests(t, m)
}

func TestRunAskUserQuestion(t *testing.T) {
	asker := approval.AskerFunc(func(ctx context.Context, q approval.Question) (approval.Answer, error) {
		return approval.Answer{Text: "staging"}, nil
	})
	set := newSet(t, t.TempDir(), asker, nil)
	want := `The user was asked: "Deploy where?" (options: staging; prod). They answered: staging`
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(say("Let me ask."), use("q1", "ask_user_question", `{"question":"Deploy where?","options":["staging","prod"]}`)),
		func(req *provider.Request) []provider.Block {
			for _, msg := range req.Messages {
				for _, b := range msg.Blocks {
					if b.Name == "ask_user_question" || b.ToolUseID == "q1" {
						t.Errorf("the completed question kept its tool-call scaffolding: %+v", b)
					}
				}
			}
			last := req.Messages[len(req.Messages)-1]
			if last.Role != provider.User || !strings.Contains(allText([]provider.Message{last}), want) {
				t.Errorf("last message: %+v", last)
			}
			return []provider.Block{say("Deploying to staging.")}
		},
	}}
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: set}).Run(context.Background(), "deploy"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	// The raw transcript keeps the exchange as it happened.
	if !strings.Contains(allText(sum.Transcript), "The user answered: staging") {
		t.Error("raw transcript lost the tool result")
	}
	checkRequests(t, m)
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "calls.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestRunCancelMidCommand(t *testing.T) {
	ws := t.TempDir()
	set := newSet(t, ws, nil, nil)
	st := openStore(t)
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(
			use("x1", "execute", `{"command":`+js(proctest.TreeLine+" > pid.txt; echo started; exec sleep 30")+`}`),
			use("x2", "write_file", `{"path":"after.txt","content":"never"}`)),
		static(say("unreachable")),
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: set, Store: st}).Run(ctx, "wait"), 25*time.Second, func(ev agent.Event) {
		if ev.Kind == agent.EventOutput && strings.Contains(string(ev.Output.Data), "started") {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || sum.Stop != agent.StopCancelled {
		t.Fatalf("err %v stop %s", err, sum.Stop)
	}
	if d := time.Since(start); d > 25*time.Second {
		t.Errorf("run took %s", d)
	}
	last := sum.Transcript[len(sum.Transcript)-1]
	if last.Role != provider.User || len(last.Blocks) != 2 {
		t.Fatalf("last message: %+v", last)
	}
	r1, r2 := last.Blocks[0], last.Blocks[1]
	if r1.ToolUseID != ourID(t, sum.Transcript, "x1") || !r1.IsError || !strings.Contains(strings.ToLower(allText([]provider.Message{{Blocks: []provider.Block{r1}}})), "cancel") {
		t.Errorf("x1 result: %+v", r1)
	}
	if r2.ToolUseID != ourID(t, sum.Transcript, "x2") || !r2.IsError || !strings.Contains(allText([]provider.Message{{Blocks: []provider.Block{r2}}}), "not run") {
		t.Errorf("x2 result: %+v", r2)
	}
	if _, err := os.Stat(filepath.Join(ws, "after.txt")); err == nil {
		t.Error("the call after the cancelled one ran")
	}
	for _, sh := range shapes {
		if err := agent.Validate(agent.Rebuild(sum.Transcript, nil), sh); err != nil {
			t.Error(err)
		}
	}
	// No process left behind.
	b, err := os.ReadFile(filepath.Join(ws, "pid.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The file holds the shell's pid and its PID namespace: confined (the
	// default) the pid is one inside the sandbox, so what must be gone is
	// every process of that namespace.
	id, err := proctest.ParseTree(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.Live(id) }, 10*time.Second); err != nil || len(left) > 0 {
		t.Fatalf("the command's processes (%+v) still run after the run ended: %v %v", id, left, err)
	}
	// Records kept.
	rec, err := st.Get(context.Background(), ourID(t, sum.Transcript, "x1"))
	if err != nil || rec.Outcome != store.OutcomeCancelled {
		t.Errorf("record of x1: %+v, %v", rec, err)
	}
}

func TestRunCompactionThenRebuild(t *testing.T) {
	ws := t.TempDir()
	set := newSet(t, ws, nil, nil)
	st := openStore(t)
	data := t.TempDir()
	cp, err := compact.New(st, &compact.Options{DataDir: data, Threshold: 200, Target: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("big", "execute", `{"command":"seq 1 3000"}`)),
		func(req *provider.Request) []provider.Block {
			cp.Wait() // the background compaction of "big" ends
			return []provider.Block{use("small", "ls", `{}`)}
		},
		func(req *provider.Request) []provider.Block {
			var found bool
			for _, msg := range req.Messages {
				for _, b := range msg.Blocks {
					if b.Type == provider.ToolResult && b.ToolUseID == "big" {
						found = true
						text := allText([]provider.Message{{Blocks: b.Content}})
						if strings.Contains(text, "\n1500\n") || !strings.Contains(text, "compacted_outputs/") {
							t.Errorf("the big result is not in its compact form with its pointer:\n%s", text)
						}
					}
				}
			}
			if !found {
				t.Error("the big result left the context")
			}
			return []provider.Block{say("done")}
		},
	}}
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: set, Store: st, Compactor: cp}).Run(context.Background(), "count"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if !strings.Contains(allText(sum.Transcript), "\n1500\n") {
		t.Error("the raw transcript must keep the full result")
	}
	checkRequests(t, m)
}

func TestRunStepLimitAndVerification(t *testing.T) {
	set := newSet(t, t.TempDir(), nil, nil)
	loop := func(*provider.Request) []provider.Block { return []provider.Block{use("", "ls", `{"path":"."}`)} }
	m := &scripted{turns: []func(*provider.Request) []provider.Block{loop, loop, loop, loop}}
	write, _ := set.Tool("write_file")
	lie := func(call *tool.Call, res *tool.Result) *tool.Result {
		return pipeline.Verify(write, &tool.Call{Name: "write_file", Input: []byte(`{"path":"a","content":"x"}`)},
			tool.TextWith("wrote 1 byte", tool.Evidence{"sha256": "00", "bytes": 1}))
	}
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: set, MaxSteps: 2, Verify: lie}).Run(context.Background(), "loop"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopMaxSteps || sum.Steps != 2 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if sum.Failures[tool.Verification] != 2 {
		t.Errorf("failures: %v", sum.Failures)
	}
	checkRequests(t, m)
}

func TestRunBreakStopsTheRun(t *testing.T) {
	set := newSet(t, t.TempDir(), nil, nil)
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("s", "execute", `{"command":"echo go; exec sleep 30"}`)),
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range agent.New(agent.Options{Model: m, Set: set}).Run(context.Background(), "x") {
			if ev.Kind == agent.EventOutput {
				break
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(25 * time.Second):
		t.Fatal("breaking out of the range did not stop the run")
	}
}
