package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// hugeText is 1,200 lines of 1,000 characters (1,200,000 in all) with a
// decisive line in the middle.
func hugeText() string {
	var b strings.Builder
	for i := 1; i <= 1200; i++ {
		s := fmt.Sprintf("row %07d ", i)
		if i == 600 {
			s = "FATAL: symbol rotate_key undefined (row 600) "
		}
		b.WriteString(s + strings.Repeat("x", 999-len(s)) + "\n")
	}
	return b.String()
}

// recordsSet is the built-in tools, view_tool_call over st and an MCP
// server "docs" whose one tool returns raw (as an MCP tool not the shell).
func recordsSet(t *testing.T, st store.Store, raw string) *capability.Set {
	t.Helper()
	sb, err := localsandbox.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	groups := append(coretools.Groups(nil, nil), compact.Group(t.TempDir(), nil))
	metas := append(append([]registry.Meta(nil), coretools.Metas...), compact.Meta)
	reg := registry.New(groups, metas, nil)
	dump := tool.MustDefine(tool.Spec{Name: "docs__dump", Description: "Dump the whole documentation index.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Call) (*tool.Result, error) {
			return tool.Text(raw), nil
		}})
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb,
		Services: map[string]any{compact.ServiceRecords: st},
		MCP:      []capability.MCPServer{{Name: "docs", Connected: true, Tools: []*tool.Tool{dump}}}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// requestChars counts the characters of every text a request carries.
func requestChars(req *provider.Request) int { return utf8.RuneCountInString(allText(req.Messages)) }

// BH-049 through a run: the MCP tool's 1.2 M characters never reach the
// next provider request whole (no compaction has to finish first: there
// is no Compactor here), the session goes on, and view_tool_call
// recovers the omitted middle from the record.
func TestBH049HugeMCPResultStaysBoundedInTheNextRequest(t *testing.T) {
	st := openStore(t)
	raw := hugeText()
	set := recordsSet(t, st, raw)
	var recovery string
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(say("looking"), use("dump_1", "docs__dump", `{}`)),
		func(req *provider.Request) []provider.Block {
			if n := requestChars(req); n > result.DefaultMaxModelChars+2000 {
				t.Errorf("the request after the huge result carries %d characters", n)
			}
			text := allText(req.Messages)
			if !strings.Contains(text, "[cut by aibuddy at the 30,000-character result bound: 1,200,000 characters in 1,200 lines produced; 30,000 characters shown") {
				t.Errorf("no header:\n%.600s", text)
			}
			mm := regexp.MustCompile(`view_tool_call (\{[^}]*\})`).FindStringSubmatch(text)
			if mm == nil {
				t.Fatal("no recovery call named")
			}
			recovery = mm[1]
			return []provider.Block{use("v1", "view_tool_call", `{"toolCallId":"dump_1","part":"result","pattern":"FATAL"}`),
				use("v2", "view_tool_call", `{"toolCallId":"dump_1","part":"result","lines":"16-23"}`)}
		},
		func(req *provider.Request) []provider.Block {
			if n := requestChars(req); n > result.DefaultMaxModelChars+30000 {
				t.Errorf("request 3 carries %d characters", n)
			}
			last := req.Messages[len(req.Messages)-1]
			v1 := allText([]provider.Message{{Blocks: last.Blocks[:1]}})
			if !regexp.MustCompile(`(?m)^600: .*FATAL: symbol rotate_key undefined \(row 600\)`).MatchString(v1) {
				t.Errorf("pattern recovery:\n%s", v1)
			}
			v2 := allText([]provider.Message{{Blocks: last.Blocks[1:2]}})
			if !strings.Contains(v2, raw[15000:23000]) {
				t.Errorf("lines 16-23 are not the first omitted characters:\n%.400s", v2)
			}
			return []provider.Block{say("row 600 names the undefined symbol")}
		},
	}}
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: set, Store: st}).Run(context.Background(), "index"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	dump := ourID(t, sum.Transcript, "dump_1")
	if recovery != `{"toolCallId":"`+dump+`","part":"result","lines":"16-1185"}` {
		t.Errorf("recovery call %s", recovery)
	}
	rec, err := st.Get(context.Background(), dump)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := result.Decode(rec.Output); w.Text() != raw {
		t.Error("the record lost the raw output")
	}
	checkRequests(t, m)
}

// Without a Store the result is bounded all the same, and says the
// middle is not kept.
func TestHugeResultWithoutStoreIsBounded(t *testing.T) {
	raw := hugeText()
	set := recordsSet(t, openStore(t), raw)
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("d", "docs__dump", `{}`)),
		func(req *provider.Request) []provider.Block {
			text := allText(req.Messages)
			if n := requestChars(req); n > result.DefaultMaxModelChars+2000 || !strings.Contains(text, "cannot be recovered") {
				t.Errorf("%d characters:\n%.500s", n, text)
			}
			return []provider.Block{say("ok")}
		},
	}}
	if _, _, err := drain(t, agent.New(agent.Options{Model: m, Set: set, ResultMaxChars: 30000}).Run(context.Background(), "x"), time.Minute, nil); err != nil {
		t.Fatal(err)
	}
}

// heapPeak samples HeapInuse and keeps the largest value.
type heapPeak struct{ peak uint64 }

func (h *heapPeak) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = max(h.peak, ms.HeapInuse)
}

// floodSet is execute on a local sandbox, with nothing confirmed.
func floodRun(t *testing.T, command string) *agent.Agent {
	t.Helper()
	set := newSet(t, t.TempDir(), nil, nil)
	in, _ := json.Marshal(map[string]string{"command": command})
	m := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("flood", "execute", string(in))),
		static(say("done")),
	}}
	return agent.New(agent.Options{Model: m, Set: set, Policy: &approval.Policy{}})
}

const heapBound = 64 << 20

// A command that writes 200 MB while the consumer takes 1 ms per event:
// the command's pipe stalls instead of the queue growing, every byte
// still reaches the consumer, and the heap stays bounded.
func TestSlowConsumerOfAFloodKeepsHeapBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MB through a pipe")
	}
	const total = 200_000_000
	ag := floodRun(t, fmt.Sprintf("yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | head -c %d", total))
	runtime.GC()
	var h heapPeak
	h.sample()
	var got int64
	var res *tool.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for ev := range ag.Run(context.Background(), "flood") {
			switch ev.Kind {
			case agent.EventOutput:
				got += int64(len(ev.Output.Data))
				if n++; n%200 == 0 {
					time.Sleep(200 * time.Millisecond) // a consumer that falls far behind
				}
				if n%20 == 0 {
					h.sample()
				}
			case agent.EventToolResult:
				res = ev.Result
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("the run did not end")
	}
	h.sample()
	if got != total {
		t.Errorf("the consumer got %d bytes of output events, want %d", got, total)
	}
	if res == nil || res.IsError || res.Evidence["output_chars"] != int64(total) {
		t.Errorf("result %+v", res)
	}
	t.Logf("HeapInuse peak %.1f MiB", float64(h.peak)/(1<<20))
	if h.peak > heapBound {
		t.Errorf("HeapInuse peaked at %d bytes, over %d", h.peak, heapBound)
	}
}

// Cancelling while a flood fills the queue and the consumer is slow
// ends the run (no deadlock on the full queue) and stops the command.
func TestCancelMidFloodEndsTheRun(t *testing.T) {
	ag := floodRun(t, "yes flood-flood-flood-flood-flood")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var h heapPeak
	var sum *agent.Summary
	var res *tool.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for ev := range ag.Run(ctx, "flood") {
			switch ev.Kind {
			case agent.EventOutput:
				n++
				time.Sleep(5 * time.Millisecond)
				if n%20 == 0 {
					h.sample()
				}
				if n == 200 {
					cancel()
				}
			case agent.EventToolResult:
				res = ev.Result
			case agent.EventDone:
				sum = ev.Summary
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run did not end after cancellation")
	}
	if sum == nil || sum.Stop != agent.StopCancelled {
		t.Fatalf("summary %+v", sum)
	}
	if res == nil || !res.IsError {
		t.Fatalf("result %+v", res)
	}
	t.Logf("HeapInuse peak %.1f MiB", float64(h.peak)/(1<<20))
	if h.peak > heapBound {
		t.Errorf("HeapInuse peaked at %d bytes, over %d", h.peak, heapBound)
	}
}
