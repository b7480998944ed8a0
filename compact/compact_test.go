package compact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// bigJSON is a ~200 KB JSON document of 1,060 items.
func bigJSON(testing.TB) string {
	type item struct {
		ID    int      `json:"id"`
		Name  string   `json:"name"`
		Tags  []string `json:"tags"`
		Notes string   `json:"notes"`
	}
	doc := struct {
		Kind  string `json:"kind"`
		Total int    `json:"total"`
		Items []item `json:"items"`
	}{Kind: "inventory", Total: 1060}
	for i := range 1060 {
		doc.Items = append(doc.Items, item{ID: i, Name: fmt.Sprintf("widget-%04d", i),
			Tags: []string{"alpha", "beta", fmt.Sprintf("t%d", i%7)}, Notes: strings.Repeat("note ", 14) + fmt.Sprint(i)})
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// gate is a Counter that blocks its first use until released: it holds a
// compaction at its start so a test can see what happened before it.
type gate struct {
	entered, release chan struct{}
	first            bool
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}), release: make(chan struct{}), first: true}
}

func (g *gate) count(s string) int {
	if g.first {
		g.first = false
		close(g.entered)
		<-g.release
	}
	return compact.Count(s)
}

func TestLargeJSONDeliveredInFullThenCompactedAndRecovered(t *testing.T) {
	g := newGate()
	r := newRig(t, compact.Options{Counter: g.count, Workers: 1})
	doc := bigJSON(t)
	if len(doc) < 200_000 {
		t.Fatalf("document is %d bytes, want >= 200 KB", len(doc))
	}
	call := &tool.Call{ID: "call_big", Name: "inventory_list", Input: json.RawMessage(`{"warehouse":"north"}`)}

	// The call returns while the compaction is held at its first step: if
	// Call waited for compaction it would never return.
	done := make(chan *tool.Result, 1)
	go func() { done <- r.rec.Call(context.Background(), "task1", call, returning(tool.Text(doc))) }()
	var res *tool.Result
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute): // a hang guard, not a timing assertion
		t.Fatal("Recorder.Call did not return while compaction was held")
	}
	<-g.entered // compaction has started, after the return
	// The caller gets the result bounded by the Recorder (BH-049: head,
	// tail, a header naming the recovery); the record keeps the whole
	// model form, which compaction works from.
	if got := res.AllText(); !strings.HasPrefix(got, "[cut by aibuddy at ") || !strings.Contains(got, doc[:result.DefaultMaxModelChars/2]) {
		close(g.release)
		t.Fatalf("the caller did not get the bounded result: %.300s", got)
	}
	before := r.get("call_big")
	if before.Compaction != store.CompactionNone || modelText(t, before) != doc {
		close(g.release)
		t.Fatal("the record was compacted before the result was returned")
	}
	if before.Outcome != store.OutcomeOK {
		t.Fatalf("outcome %q", before.Outcome)
	}
	close(g.release)
	r.c.Wait()

	after := r.get("call_big")
	if after.Compaction != store.CompactionTrim {
		t.Fatalf("compaction %q, want trim (outcome %+v)", after.Compaction, must(r.c.Last("call_big")))
	}
	wantPtr := "compacted_outputs/task1/call_big.json"
	if after.Pointer != wantPtr {
		t.Fatalf("pointer %q, want %q", after.Pointer, wantPtr)
	}
	model := modelText(t, after)
	if testing.Verbose() {
		t.Log(model)
	}
	out, _ := r.c.Last("call_big")
	t.Logf("200 KB JSON: %d bytes, %d tokens -> model form %d bytes, %d tokens", len(doc), out.BeforeTokens, len(after.Model), out.AfterTokens)
	if len(after.Model) >= len(before.Model) || out.AfterTokens > compact.DefaultTarget {
		t.Fatalf("compact form %d bytes / %d tokens is not small enough", len(after.Model), out.AfterTokens)
	}
	for _, want := range []string{`[result of inventory_list {"warehouse":"north"} trimmed by aibuddy precompaction`,
		`view_tool_call {"id":"call_big"}`, "toolCallId=call_big", "more items", "of 1,060 cut"} {
		if !strings.Contains(model, want) {
			t.Errorf("model form lacks %q:\n%s", want, model)
		}
	}
	// The structural trim keeps valid JSON after the stub line.
	_, js, _ := strings.Cut(model, "\n")
	if !json.Valid([]byte(js)) {
		t.Errorf("trimmed JSON is not valid:\n%s", js)
	}
	// The offload (a payload of the store) holds the raw input and output.
	off, err := compact.LoadOffload(context.Background(), r.st, r.dir, "task1", after.Pointer)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := result.Decode(off.Output)
	if w.Text() != doc || string(off.Input) != `{"warehouse":"north"}` {
		t.Fatal("offload file does not hold the raw input and output")
	}
	// Recovery is exact, slice by slice, each slice bounded.
	if got := r.recoverAll("call_big", ""); got != doc {
		t.Fatalf("recovered %d bytes, want the %d original bytes exactly", len(got), len(doc))
	}
	text, _ := r.viewText(`{"id":"call_big","json_path":"$.items[3].name"}`)
	if body(text) != `"widget-0003"` {
		t.Errorf("json_path: %q", body(text))
	}
	if n := compact.Count(text); n > compact.DefaultViewTokens+200 {
		t.Errorf("a view is %d tokens", n)
	}
	// The model form never grows back: compacting again does nothing.
	if o, err := r.c.Compact(context.Background(), after); err != nil || o.Replaced || o.Reason != "already compacted" {
		t.Errorf("second compaction: %+v %v", o, err)
	}
}

func must(o compact.Outcome, _ bool) compact.Outcome { return o }

func TestDisposableResultDroppedWithoutPointer(t *testing.T) {
	r := newRig(t, compact.Options{Strategies: map[string]compact.Strategy{"list_processes": compact.Drop}})
	text := strings.Repeat("pid 1234 /usr/bin/something --flag value\n", 2000)
	r.rec.Call(context.Background(), "task1", &tool.Call{ID: "call_ps", Name: "list_processes", Input: json.RawMessage(`{}`)}, returning(tool.Text(text)))
	r.c.Wait()
	rec := r.get("call_ps")
	if rec.Compaction != store.CompactionDrop || rec.Pointer != "" {
		t.Fatalf("compaction %q pointer %q", rec.Compaction, rec.Pointer)
	}
	m := modelText(t, rec)
	if strings.Contains(m, "view_tool_call") || !strings.Contains(m, "dropped by aibuddy precompaction") || !strings.Contains(m, "list_processes {}") {
		t.Fatalf("drop stub: %s", m)
	}
	if _, err := os.Stat(filepath.Join(r.dir, compact.OffloadDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dropped result was offloaded: %v", err)
	}
}

func TestDropCannotBeTheDefault(t *testing.T) {
	if _, err := compact.New(nil, &compact.Options{DataDir: t.TempDir(), Default: compact.Drop}); !errors.Is(err, compact.ErrBadOptions) {
		t.Fatalf("err %v", err)
	}
}

func TestCompactFormNotSmallerKeepsOriginal(t *testing.T) {
	// 60 tokens in few bytes: over a 20-token threshold, but the stub alone
	// is bigger than the result.
	r := newRig(t, compact.Options{Threshold: 20})
	text := strings.Repeat("a b ", 30)
	r.rec.Call(context.Background(), "task1", &tool.Call{ID: "call_small", Name: "echo", Input: json.RawMessage(`{}`)}, returning(tool.Text(text)))
	r.c.Wait()
	rec := r.get("call_small")
	out, _ := r.c.Last("call_small")
	if out.Reason != "not smaller" || out.Replaced {
		t.Fatalf("outcome %+v", out)
	}
	if rec.Compaction != store.CompactionNone || rec.Pointer != "" || modelText(t, rec) != text {
		t.Fatalf("record changed: %+v", rec)
	}
	if _, err := os.Stat(filepath.Join(r.dir, compact.OffloadPath("task1", "call_small"))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("offloaded although kept: %v", err)
	}
	if _, err := compact.LoadOffload(context.Background(), r.st, r.dir, "task1", compact.OffloadPath("task1", "call_small")); err == nil {
		t.Fatal("offloaded into the store although kept")
	}
}

func TestUnderThresholdUntouched(t *testing.T) {
	r := newRig(t, compact.Options{})
	r.rec.Call(context.Background(), "task1", &tool.Call{ID: "c1", Name: "echo"}, returning(tool.Text("short")))
	r.c.Wait()
	if o, _ := r.c.Last("c1"); o.Reason != "under threshold" {
		t.Fatalf("%+v", o)
	}
}

// blockingSummarizer waits for its context: only a stop ends it.
type blockingSummarizer struct{ entered chan struct{} }

func (b blockingSummarizer) Summarize(ctx context.Context, _ *compact.SummaryRequest) (*compact.Summary, error) {
	close(b.entered)
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestStopPropagatesIntoBackgroundCompaction(t *testing.T) {
	s := blockingSummarizer{entered: make(chan struct{})}
	r := newRig(t, compact.Options{Summarizer: s, Default: compact.Summarize})
	ctx, stop := context.WithCancel(context.Background())
	doc := bigJSON(t)
	res := r.rec.Call(ctx, "task1", &tool.Call{ID: "c_stop", Name: "fetch"}, returning(tool.Text(doc)))
	if !strings.HasPrefix(res.AllText(), "[cut by aibuddy at ") { // BH-049: bounded by the Recorder
		t.Fatal("not delivered")
	}
	<-s.entered // the summarizer holds the compaction
	stop()      // the user stops the run
	r.c.Wait()
	rec := r.get("c_stop")
	if rec.Compaction != store.CompactionNone || modelText(t, rec) != doc {
		t.Fatal("a stopped compaction changed the record")
	}
}

func TestCloseStopsBackgroundWork(t *testing.T) {
	s := blockingSummarizer{entered: make(chan struct{})}
	r := newRig(t, compact.Options{Summarizer: s, Default: compact.Summarize})
	r.rec.Call(context.Background(), "task1", &tool.Call{ID: "c_close", Name: "fetch"}, returning(tool.Text(bigJSON(t))))
	<-s.entered
	if err := r.c.Close(); err != nil {
		t.Fatal(err)
	}
	if r.get("c_close").Compaction != store.CompactionNone {
		t.Fatal("compacted after Close")
	}
	// After Close, Schedule does nothing.
	r.c.Schedule(context.Background(), r.get("c_close"))
	r.c.Wait()
}

type fixedSummarizer string

func (f fixedSummarizer) Summarize(context.Context, *compact.SummaryRequest) (*compact.Summary, error) {
	return &compact.Summary{Text: string(f), Model: "claude-haiku-4-5", Via: "anthropic"}, nil
}

type failingSummarizer struct{}

func (failingSummarizer) Summarize(context.Context, *compact.SummaryRequest) (*compact.Summary, error) {
	return nil, errors.New("model overloaded")
}

func TestSummarizeWithPointerAndFallback(t *testing.T) {
	r := newRig(t, compact.Options{Summarizer: fixedSummarizer("1,500 widgets, ids 0-1499, all tagged alpha and beta."),
		Strategies: map[string]compact.Strategy{"fetch": compact.Summarize}})
	doc := bigJSON(t)
	r.rec.Call(context.Background(), "task1", &tool.Call{ID: "c_sum", Name: "fetch", Input: json.RawMessage(`{"url":"https://example.test/a"}`)}, returning(tool.Text(doc)))
	r.c.Wait()
	rec := r.get("c_sum")
	m := modelText(t, rec)
	if rec.Compaction != store.CompactionSummarize || rec.Pointer == "" || !strings.Contains(m, "summarized by claude-haiku-4-5 via anthropic") ||
		!strings.Contains(m, "1,500 widgets") || !strings.Contains(m, `view_tool_call {"id":"c_sum"}`) {
		t.Fatalf("%s / %s", rec.Compaction, m)
	}
	if got := r.recoverAll("c_sum", ""); got != doc {
		t.Fatal("summarized call not recoverable")
	}

	r2 := newRig(t, compact.Options{Summarizer: failingSummarizer{}, Strategies: map[string]compact.Strategy{"fetch": compact.Summarize}})
	r2.rec.Call(context.Background(), "task1", &tool.Call{ID: "c_sum2", Name: "fetch"}, returning(tool.Text(doc)))
	r2.c.Wait()
	rec2 := r2.get("c_sum2")
	if rec2.Compaction != store.CompactionTrim || !strings.Contains(modelText(t, rec2), "trimmed: the summary request failed: model overloaded") {
		t.Fatalf("fallback: %s %s", rec2.Compaction, modelText(t, rec2))
	}
}

func TestGroupStrategyAndViewToolCallKept(t *testing.T) {
	c, err := compact.New(nil, &compact.Options{DataDir: t.TempDir(),
		GroupStrategies: map[string]compact.Strategy{"web": compact.Summarize},
		GroupOf: func(name string) (string, bool) {
			if name == "fetch" {
				return "web", true
			}
			return "", false
		},
		Strategies: map[string]compact.Strategy{"tmp_list": compact.Drop}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]compact.Strategy{"fetch": compact.Summarize, "tmp_list": compact.Drop,
		"read_file": compact.Trim, compact.ViewToolCallName: compact.Keep} {
		if got := c.StrategyOf(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

func TestOffloadPathIsSafe(t *testing.T) {
	for _, ids := range [][2]string{{"task1", "call_1"}, {"../..", "x/../../etc"}, {"", "."}, {"a b", "c:d"}} {
		p := compact.OffloadPath(ids[0], ids[1])
		clean := filepath.Clean(p)
		parts := strings.Split(clean, "/")
		if clean != p || len(parts) != 3 || parts[0] != "compacted_outputs" || parts[1] == ".." || parts[1] == "." || parts[2] == "..json" {
			t.Errorf("%q → %q", ids, p)
		}
	}
	if compact.OffloadPath("t", "a/b") == compact.OffloadPath("t", "a_b") {
		t.Error("distinct ids share an offload file")
	}
	if got := compact.OffloadPath("task1", "call_1"); got != "compacted_outputs/task1/call_1.json" {
		t.Errorf("plain ids changed: %s", got)
	}
}
