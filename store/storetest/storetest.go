package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/store"
)

// Run runs the suite against stores from open, which returns a new, empty
// store for each subtest. The suite closes every store it gets.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("RoundTripByteExact", func(t *testing.T) { testRoundTrip(t, open(t)) })
	t.Run("UpsertByToolCallID", func(t *testing.T) { testUpsert(t, open(t)) })
	t.Run("SeqPerTask", func(t *testing.T) { testSeq(t, open(t)) })
	t.Run("TasksMostRecentFirst", func(t *testing.T) { testTasks(t, open(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, open(t)) })
	t.Run("ReplaceModelOnlyWhenSmaller", func(t *testing.T) { testReplaceModel(t, open(t)) })
	t.Run("RejectsInvalid", func(t *testing.T) { testInvalid(t, open(t)) })
	t.Run("CancelledContext", func(t *testing.T) { testCancelled(t, open(t)) })
	t.Run("LookupsByIDAndTask", func(t *testing.T) { testLookups(t, open(t)) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrent(t, open(t)) })
	t.Run("LargePayload", func(t *testing.T) { testLarge(t, open(t)) })
	t.Run("PruneBefore", func(t *testing.T) { testPrune(t, open(t)) })
	t.Run("ProviderIDsRepeat", func(t *testing.T) { testProviderIDs(t, open(t)) })
	runPayloadsAndJobs(t, open)
}

// testPrune runs when the store implements store.Pruner: whole tasks older
// than the cutoff go, with every record; newer tasks stay whole.
func testPrune(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	p, ok := s.(store.Pruner)
	if !ok {
		t.Skip("the store does not implement store.Pruner")
	}
	at := func(task, id string, start time.Time) *store.Record {
		r := rec(task, id)
		r.StartedAt, r.EndedAt = start, start.Add(time.Second)
		return r
	}
	now := time.Now()
	old := now.Add(-40 * 24 * time.Hour)
	mustPut(t, s, at("old", "o1", old))
	mustPut(t, s, at("old", "o2", old.Add(time.Minute)))
	mustPut(t, s, at("mixed", "m1", old))
	mustPut(t, s, at("mixed", "m2", now)) // a task still in use stays whole
	mustPut(t, s, at("new", "n1", now))
	gone, err := p.PruneBefore(ctx(t), now.Add(-30*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gone, []string{"old"}) {
		t.Errorf("pruned %v, want [old]", gone)
	}
	for _, id := range []string{"o1", "o2"} {
		if _, err := s.Get(ctx(t), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s) after prune: %v, want ErrNotFound", id, err)
		}
	}
	for _, id := range []string{"m1", "m2", "n1"} {
		if _, err := s.Get(ctx(t), id); err != nil {
			t.Errorf("Get(%s) after prune: %v", id, err)
		}
	}
	if tasks, _ := s.Tasks(ctx(t), 0); slices.Contains(tasks, "old") || len(tasks) != 2 {
		t.Errorf("Tasks after prune: %v", tasks)
	}
	mustPut(t, s, at("old", "o3", now)) // the task id can be used again
}

// ctx is a context bounded generously, so that a hang fails the test
// instead of the whole binary; no assertion depends on timing.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func closeStore(t *testing.T, s store.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// base is the fixed clock of the suite.
var base = time.Date(2026, 5, 9, 7, 29, 33, 123456789, time.FixedZone("UTC+2", 2*3600))

// rec is a small finished record.
func rec(task, id string) *store.Record {
	return &store.Record{
		ToolCallID: id,
		TaskID:     task,
		Tool:       "read_file",
		Input:      json.RawMessage(`{"path":"` + id + `.txt"}`),
		Output:     json.RawMessage(`{"content":[{"type":"text","text":"output of ` + id + `"}]}`),
		Model:      json.RawMessage(`"output of ` + id + `"`),
		Outcome:    store.OutcomeOK,
		StartedAt:  base,
		EndedAt:    base.Add(1500 * time.Millisecond),
	}
}

// diff lists the fields where got differs from want; Seq is compared only
// when withSeq.
func diff(got, want *store.Record, withSeq bool) []string {
	var d []string
	str := func(name, g, w string) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %q, want %q", name, g, w))
		}
	}
	raw := func(name string, g, w []byte) {
		if !bytes.Equal(g, w) {
			d = append(d, fmt.Sprintf("%s = %s, want %s", name, short(g), short(w)))
		}
	}
	tm := func(name string, g, w time.Time) {
		if g.IsZero() != w.IsZero() || g.Sub(w).Abs() >= time.Millisecond {
			d = append(d, fmt.Sprintf("%s = %v, want %v (within 1ms)", name, g, w))
		}
	}
	str("ToolCallID", got.ToolCallID, want.ToolCallID)
	str("ProviderCallID", got.ProviderCallID, want.ProviderCallID)
	str("TaskID", got.TaskID, want.TaskID)
	if withSeq && got.Seq != want.Seq {
		d = append(d, fmt.Sprintf("Seq = %d, want %d", got.Seq, want.Seq))
	}
	str("Tool", got.Tool, want.Tool)
	raw("Input", got.Input, want.Input)
	raw("Output", got.Output, want.Output)
	raw("Model", got.Model, want.Model)
	str("Stage", got.Stage, want.Stage)
	str("Outcome", string(got.Outcome), string(want.Outcome))
	tm("StartedAt", got.StartedAt, want.StartedAt)
	tm("EndedAt", got.EndedAt, want.EndedAt)
	str("Compaction", string(got.Compaction), string(want.Compaction))
	str("Pointer", got.Pointer, want.Pointer)
	tm("InterruptedAt", got.InterruptedAt, want.InterruptedAt)
	return d
}

func short(b []byte) string {
	if len(b) <= 120 {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%q...(%d bytes)", b[:120], len(b))
}

func wantRecord(t *testing.T, got, want *store.Record, withSeq bool) {
	t.Helper()
	if d := diff(got, want, withSeq); len(d) > 0 {
		t.Errorf("record %s differs:\n  %s", want.ToolCallID, strings.Join(d, "\n  "))
	}
}

func mustPut(t *testing.T, s store.Store, r *store.Record) {
	t.Helper()
	if err := s.Put(ctx(t), r); err != nil {
		t.Fatalf("Put(%s): %v", r.ToolCallID, err)
	}
}

func mustGet(t *testing.T, s store.Store, id string) *store.Record {
	t.Helper()
	r, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

func ids(rs []*store.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ToolCallID
	}
	return out
}

func seqs(rs []*store.Record) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}

func testRoundTrip(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	// Raw JSON that any re-encoding would change: spacing, key order,
	// duplicate keys, escapes, number spellings, non-ASCII.
	input := json.RawMessage("{ \"path\" :\"a b/ü.txt\",\n\t\"b\":1, \"a\":2, \"a\":3, \"esc\":\"\\u00e9\\/\\n\" }")
	output := json.RawMessage(`{"content":[{"type":"text","text":"line1\nline2 \u2028 日本語 😀"}],"isError":true,` +
		`"stage":"execution","n":[1e400,12345678901234567890123,-0.0,1.50]}`)
	model := json.RawMessage(` "short form"  `)
	r := &store.Record{
		ToolCallID:     "call_4f1c2b9a0e7d6c5b",
		ProviderCallID: "toolu_01A09q90qw90lq917835lq9",
		TaskID:         "task-1",
		Tool:           "mcp__fs__read_file",
		Input:          input,
		Output:         output,
		Model:          model,
		Stage:          "execution",
		Outcome:        store.OutcomeError,
		StartedAt:      base,
		EndedAt:        base.Add(2*time.Second + 987654321*time.Nanosecond),
		Compaction:     store.CompactionTrim,
		Pointer:        "compacted_outputs/task-1/toolu_01A09q90qw90lq917835lq9.json",
	}
	want := *r
	want.Input = slices.Clone(input)
	want.Output = slices.Clone(output)
	want.Model = slices.Clone(model)
	mustPut(t, s, r)
	if r.Seq != 1 {
		t.Errorf("Put wrote back Seq %d, want 1 (first of its task)", r.Seq)
	}
	want.Seq = 1
	// The store must not alias the caller's buffers.
	r.Input[1], r.Output[1], r.Model[1] = 'X', 'X', 'X'

	got := mustGet(t, s, want.ToolCallID)
	wantRecord(t, got, &want, true)
	if !got.StartedAt.Equal(want.StartedAt) && got.StartedAt.Sub(want.StartedAt).Abs() >= time.Millisecond {
		t.Errorf("StartedAt = %v, want %v", got.StartedAt, want.StartedAt)
	}
	// Returned records are the caller's: changing one changes nothing stored.
	got.Output[0] = 'X'
	wantRecord(t, mustGet(t, s, want.ToolCallID), &want, true)

	list, err := s.ListTask(ctx(t), "task-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("ListTask = %d records, want 1", len(list))
	}
	wantRecord(t, list[0], &want, true)

	// A record still running: nil raw fields, zero end time, no outcome
	// details.
	running := &store.Record{ToolCallID: "call_run", TaskID: "task-1", Tool: "execute",
		Input: json.RawMessage(`{}`), Outcome: store.OutcomeRunning, StartedAt: base}
	mustPut(t, s, running)
	got = mustGet(t, s, "call_run")
	wantRecord(t, got, running, true)
	if len(got.Output) != 0 || len(got.Model) != 0 {
		t.Errorf("nil Output/Model came back as %q / %q", got.Output, got.Model)
	}
	if !got.EndedAt.IsZero() {
		t.Errorf("zero EndedAt came back as %v", got.EndedAt)
	}

	// An interrupted record keeps when it was found so; a Put of the
	// call's real end clears it.
	cut := &store.Record{ToolCallID: "call_cut", TaskID: "task-1", Tool: "execute", Input: json.RawMessage(`{}`),
		Outcome: store.OutcomeInterrupted, StartedAt: base, InterruptedAt: base.Add(time.Hour)}
	mustPut(t, s, cut)
	wantRecord(t, mustGet(t, s, "call_cut"), cut, true)
	ended := rec("task-1", "call_cut")
	mustPut(t, s, ended)
	wantRecord(t, mustGet(t, s, "call_cut"), ended, false)
}

func testUpsert(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	mustPut(t, s, rec("t", "a"))
	start := &store.Record{ToolCallID: "b", TaskID: "t", Tool: "execute",
		Input: json.RawMessage(`{"command":"make"}`), Outcome: store.OutcomeRunning, StartedAt: base}
	mustPut(t, s, start)
	mustPut(t, s, rec("t", "c"))
	if start.Seq != 2 {
		t.Fatalf("running record got Seq %d, want 2", start.Seq)
	}

	done := &store.Record{ToolCallID: "b", TaskID: "t", Tool: "execute",
		Input:   json.RawMessage(`{"command":"make"}`),
		Output:  json.RawMessage(`{"exitCode":2,"stderr":"boom"}`),
		Model:   json.RawMessage(`"exit 2: boom"`),
		Stage:   "execution",
		Outcome: store.OutcomeError, StartedAt: base, EndedAt: base.Add(time.Minute)}
	mustPut(t, s, done)
	if done.Seq != 2 {
		t.Errorf("replacement with Seq 0 got Seq %d, want the record's own 2", done.Seq)
	}
	wantRecord(t, mustGet(t, s, "b"), done, true)

	list, err := s.ListTask(ctx(t), "t")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := ids(list), []string{"a", "b", "c"}; !slices.Equal(g, w) {
		t.Errorf("ListTask after upsert = %v, want %v (one record per id)", g, w)
	}
	// Replacing again with fewer fields replaces the whole record.
	bare := &store.Record{ToolCallID: "b", TaskID: "t", Seq: 2, Tool: "execute", Outcome: store.OutcomeCancelled}
	mustPut(t, s, bare)
	wantRecord(t, mustGet(t, s, "b"), bare, true)

	// A running record over an existing id replaces it too, keeping its
	// Seq; one moved to another task while running takes that task's next.
	again := &store.Record{ToolCallID: "b", TaskID: "t", Tool: "execute", Input: json.RawMessage(`{"command":"make -j"}`),
		Outcome: store.OutcomeRunning, StartedAt: base.Add(time.Hour)}
	mustPut(t, s, again)
	if again.Seq != 2 {
		t.Errorf("running replacement got Seq %d, want the record's own 2", again.Seq)
	}
	wantRecord(t, mustGet(t, s, "b"), again, true)
	// A finished record whose explicit Seq differs from the stored one
	// takes the Seq given.
	reseq := &store.Record{ToolCallID: "b", TaskID: "t", Seq: 7, Tool: "execute", Outcome: store.OutcomeOK}
	mustPut(t, s, reseq)
	wantRecord(t, mustGet(t, s, "b"), reseq, true)
	bare.Seq = 2
	mustPut(t, s, bare)

	// Moving a record to another task gives it that task's next Seq.
	moved := rec("u", "a")
	mustPut(t, s, moved)
	if moved.Seq != 1 {
		t.Errorf("record moved to a new task got Seq %d, want 1", moved.Seq)
	}
	if l, _ := s.ListTask(ctx(t), "t"); !slices.Equal(ids(l), []string{"b", "c"}) {
		t.Errorf("old task after move = %v, want [b c]", ids(l))
	}
}

func testSeq(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	order := []struct{ task, id string }{
		{"A", "a1"}, {"B", "b1"}, {"A", "a2"}, {"A", "a3"}, {"B", "b2"},
	}
	for _, o := range order {
		mustPut(t, s, rec(o.task, o.id))
	}
	check := func(task string, wantIDs []string, wantSeqs []int64) {
		t.Helper()
		l, err := s.ListTask(ctx(t), task)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(l), wantIDs) || !slices.Equal(seqs(l), wantSeqs) {
			t.Errorf("ListTask(%s) = %v %v, want %v %v", task, ids(l), seqs(l), wantIDs, wantSeqs)
		}
	}
	check("A", []string{"a1", "a2", "a3"}, []int64{1, 2, 3})
	check("B", []string{"b1", "b2"}, []int64{1, 2})

	// An explicit Seq is kept; the next zero Seq follows the highest.
	x := rec("A", "a10")
	x.Seq = 10
	mustPut(t, s, x)
	y := rec("A", "a11")
	mustPut(t, s, y)
	if x.Seq != 10 || y.Seq != 11 {
		t.Errorf("explicit Seq 10 then zero: got %d, %d; want 10, 11", x.Seq, y.Seq)
	}
	// An explicit Seq below existing ones sorts among them; the next zero
	// Seq still follows the highest.
	z := rec("A", "a5")
	z.Seq = 5
	mustPut(t, s, z)
	w := rec("A", "a12")
	mustPut(t, s, w)
	check("A", []string{"a1", "a2", "a3", "a5", "a10", "a11", "a12"}, []int64{1, 2, 3, 5, 10, 11, 12})
	check("B", []string{"b1", "b2"}, []int64{1, 2})
}

func testTasks(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	tasks := func(limit int) []string {
		t.Helper()
		got, err := s.Tasks(ctx(t), limit)
		if err != nil {
			t.Fatalf("Tasks(%d): %v", limit, err)
		}
		return got
	}
	if got := tasks(0); len(got) != 0 {
		t.Errorf("Tasks on an empty store = %v, want none", got)
	}
	mustPut(t, s, rec("a", "1"))
	mustPut(t, s, rec("b", "2"))
	mustPut(t, s, rec("c", "3"))
	if got, want := tasks(0), []string{"c", "b", "a"}; !slices.Equal(got, want) {
		t.Errorf("Tasks(0) = %v, want %v", got, want)
	}
	mustPut(t, s, rec("a", "4"))
	if got, want := tasks(0), []string{"a", "c", "b"}; !slices.Equal(got, want) {
		t.Errorf("after a Put into a: Tasks(0) = %v, want %v", got, want)
	}
	if got, want := tasks(2), []string{"a", "c"}; !slices.Equal(got, want) {
		t.Errorf("Tasks(2) = %v, want %v", got, want)
	}
	if got, want := tasks(10), []string{"a", "c", "b"}; !slices.Equal(got, want) {
		t.Errorf("Tasks(10) = %v, want %v", got, want)
	}
	// An upsert counts as activity; compaction does not.
	mustPut(t, s, rec("b", "2"))
	if _, err := s.ReplaceModel(ctx(t), "3", json.RawMessage(`"c"`), store.CompactionSummarize, "p"); err != nil {
		t.Fatal(err)
	}
	if got, want := tasks(0), []string{"b", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("after an upsert into b and a compaction in c: Tasks(0) = %v, want %v", got, want)
	}
}

func testNotFound(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	mustPut(t, s, rec("t", "known"))
	r, err := s.Get(ctx(t), "unknown")
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(unknown) = %v, %v; want an error wrapping ErrNotFound", r, err)
	}
	if _, err := s.Get(ctx(t), ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(\"\") = %v; want an error wrapping ErrNotFound", err)
	}
	ok, err := s.ReplaceModel(ctx(t), "unknown", json.RawMessage(`""`), store.CompactionDrop, "")
	if ok || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ReplaceModel(unknown) = %v, %v; want false and an error wrapping ErrNotFound", ok, err)
	}
	l, err := s.ListTask(ctx(t), "no-such-task")
	if err != nil || len(l) != 0 {
		t.Errorf("ListTask(unknown task) = %v, %v; want empty, nil", ids(l), err)
	}
}

func testReplaceModel(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	r := rec("t", "big")
	r.Output = json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 5000) + `"}]}`)
	r.Model = json.RawMessage(`"` + strings.Repeat("x", 5000) + `"`)
	mustPut(t, s, r)
	orig := *r

	try := func(model string, c store.Compaction, pointer string) bool {
		t.Helper()
		ok, err := s.ReplaceModel(ctx(t), "big", json.RawMessage(model), c, pointer)
		if err != nil {
			t.Fatalf("ReplaceModel(%d bytes): %v", len(model), err)
		}
		return ok
	}
	larger := `"` + strings.Repeat("y", 5001) + `"`
	if try(larger, store.CompactionTrim, "compacted_outputs/t/big.json") {
		t.Error("ReplaceModel with a larger model reported true")
	}
	same := `"` + strings.Repeat("y", 5000) + `"`
	if try(same, store.CompactionTrim, "compacted_outputs/t/big.json") {
		t.Error("ReplaceModel with an equally long model reported true")
	}
	wantRecord(t, mustGet(t, s, "big"), &orig, true)

	smaller := `{"head":"xxxx","omitted":4992,"recover":"view_tool_call"}`
	if !try(smaller, store.CompactionTrim, "compacted_outputs/t/big.json") {
		t.Fatal("ReplaceModel with a smaller model reported false")
	}
	want := orig
	want.Model = json.RawMessage(smaller)
	want.Compaction = store.CompactionTrim
	want.Pointer = "compacted_outputs/t/big.json"
	wantRecord(t, mustGet(t, s, "big"), &want, true)

	// Smaller than the compacted form still replaces; larger does not.
	if try(`{"head":"xxxx","omitted":4992,"recover":"view_tool_call","more":1}`, store.CompactionSummarize, "other") {
		t.Error("ReplaceModel larger than the compacted form reported true")
	}
	wantRecord(t, mustGet(t, s, "big"), &want, true)
	if !try(`"dropped"`, store.CompactionDrop, "") {
		t.Error("ReplaceModel with a drop stub reported false")
	}
	want.Model, want.Compaction, want.Pointer = json.RawMessage(`"dropped"`), store.CompactionDrop, ""
	wantRecord(t, mustGet(t, s, "big"), &want, true)
}

func testInvalid(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	if err := s.Put(ctx(t), nil); err == nil {
		t.Error("Put(nil) succeeded")
	}
	if err := s.Put(ctx(t), rec("t", "")); err == nil {
		t.Error("Put with an empty ToolCallID succeeded")
	}
	if err := s.Put(ctx(t), rec("", "x")); err == nil {
		t.Error("Put with an empty TaskID succeeded")
	}
	if l, _ := s.Tasks(ctx(t), 0); len(l) != 0 {
		t.Errorf("rejected Puts left tasks %v", l)
	}
}

func testCancelled(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	mustPut(t, s, rec("t", "a"))
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(c, rec("t", "b")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context = %v, want an error wrapping context.Canceled", err)
	}
	if _, err := s.Get(c, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context = %v, want an error wrapping context.Canceled", err)
	}
	if _, err := s.Get(ctx(t), "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a Put with a cancelled context was stored anyway (Get: %v)", err)
	}
}

func testLookups(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	want := map[string][]*store.Record{}
	for i := range 60 {
		task := fmt.Sprintf("task-%d", i%6)
		r := rec(task, fmt.Sprintf("call_%03d", i))
		r.Output = json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("p", i*37)))
		mustPut(t, s, r)
		want[task] = append(want[task], r)
	}
	for task, rs := range want {
		for _, r := range rs {
			wantRecord(t, mustGet(t, s, r.ToolCallID), r, true)
		}
		l, err := s.ListTask(ctx(t), task)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(l), ids(rs)) || !slices.Equal(seqs(l), []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
			t.Errorf("ListTask(%s) = %v %v, want %v with Seqs 1..10", task, ids(l), seqs(l), ids(rs))
			continue
		}
		for i := range l {
			wantRecord(t, l[i], rs[i], true)
		}
	}
}

// Concurrency shape: 8 goroutines x 200 Puts, half into a task of their
// own, half into one shared task, with readers running alongside.
const (
	writers      = 8
	putsPerWrite = 200
)

func testConcurrent(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, writers*2)
	done := make(chan struct{})
	for g := range writers {
		wg.Go(func() {
			for i := range putsPerWrite {
				task := fmt.Sprintf("own-%d", g)
				if i%2 == 1 {
					task = "shared"
				}
				r := rec(task, fmt.Sprintf("g%d-%03d", g, i))
				if err := s.Put(c, r); err != nil {
					errs <- err
					return
				}
				if i%10 == 0 { // read back what this goroutine wrote
					if _, err := s.Get(c, r.ToolCallID); err != nil {
						errs <- fmt.Errorf("read own write: %w", err)
						return
					}
				}
			}
		})
	}
	var rg sync.WaitGroup
	rg.Go(func() { // a reader listing while writers write
		for {
			select {
			case <-done:
				return
			default:
			}
			l, err := s.ListTask(c, "shared")
			if err != nil {
				errs <- fmt.Errorf("ListTask while writing: %w", err)
				return
			}
			for i, r := range l {
				if r.Seq != int64(i+1) {
					errs <- fmt.Errorf("ListTask while writing saw Seqs %v, want 1..%d without gaps", seqs(l), len(l))
					return
				}
			}
			if _, err := s.Tasks(c, 3); err != nil {
				errs <- fmt.Errorf("Tasks while writing: %w", err)
				return
			}
			time.Sleep(10 * time.Millisecond) // leave the CPU to the writers
		}
	})
	wg.Wait()
	close(done)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for g := range writers {
		for i := range putsPerWrite {
			id := fmt.Sprintf("g%d-%03d", g, i)
			r, err := s.Get(c, id)
			if err != nil {
				t.Fatalf("after concurrent writes: Get(%s): %v", id, err)
			}
			if r.Tool != "read_file" || !bytes.Contains(r.Output, []byte(id)) {
				t.Errorf("record %s is not the one written: %+v", id, r)
			}
		}
		own, err := s.ListTask(c, fmt.Sprintf("own-%d", g))
		if err != nil {
			t.Fatal(err)
		}
		wantSeqs(t, fmt.Sprintf("own-%d", g), own, putsPerWrite/2)
	}
	shared, err := s.ListTask(c, "shared")
	if err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, "shared", shared, writers*putsPerWrite/2)
	tasks, err := s.Tasks(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != writers+1 {
		t.Errorf("Tasks = %v, want %d tasks", tasks, writers+1)
	}
}

// wantSeqs checks that l holds n records with Seqs 1..n and distinct ids.
func wantSeqs(t *testing.T, task string, l []*store.Record, n int) {
	t.Helper()
	if len(l) != n {
		t.Errorf("ListTask(%s) has %d records, want %d", task, len(l), n)
		return
	}
	seen := map[string]bool{}
	for i, r := range l {
		if r.Seq != int64(i+1) {
			t.Errorf("ListTask(%s)[%d].Seq = %d, want %d (unique, gapless)", task, i, r.Seq, i+1)
			return
		}
		if seen[r.ToolCallID] {
			t.Errorf("ListTask(%s) lists %s twice", task, r.ToolCallID)
		}
		seen[r.ToolCallID] = true
	}
}

// LargeSize is the Output size of the large-payload case: 40 MiB.
const LargeSize = 40 << 20

// large is a deterministic JSON document of exactly n bytes whose content
// varies along its length (so a shifted or repeated chunk is caught).
func large(n int) json.RawMessage {
	const head, tail = `{"content":[{"type":"text","text":"`, `"}]}`
	b := make([]byte, 0, n)
	b = append(b, head...)
	for i := 0; len(b) < n-len(tail); i++ {
		b = append(b, "line "...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, " ok\\n"...)
	}
	b = b[:n-len(tail)]
	for len(b) > 0 && b[len(b)-1] == '\\' { // never end the string on an escape
		b[len(b)-1] = 'x'
	}
	return append(b, tail...)
}

func testLarge(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	r := rec("big", "call_large")
	r.Output = large(LargeSize)
	r.Input = large(1 << 20)
	r.Model = large(2 << 20)
	mustPut(t, s, r)
	got := mustGet(t, s, "call_large")
	if len(got.Output) != LargeSize {
		t.Fatalf("Output came back with %d bytes, want %d", len(got.Output), LargeSize)
	}
	wantRecord(t, got, r, true)
	l, err := s.ListTask(ctx(t), "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 1 || !bytes.Equal(l[0].Output, r.Output) {
		t.Errorf("ListTask did not return the large record intact")
	}
	// Compacting the large record keeps the raw output.
	stub := json.RawMessage(`"42 MiB of lines; recover with view_tool_call"`)
	ok, err := s.ReplaceModel(ctx(t), "call_large", stub, store.CompactionTrim, "compacted_outputs/big/call_large.json")
	if err != nil || !ok {
		t.Fatalf("ReplaceModel on the large record = %v, %v; want true", ok, err)
	}
	r.Model, r.Compaction, r.Pointer = stub, store.CompactionTrim, "compacted_outputs/big/call_large.json"
	wantRecord(t, mustGet(t, s, "call_large"), r, true)
}

// testProviderIDs: records are keyed by ToolCallID alone; the provider's id
// is data and may repeat, in one task and across tasks (servers that send
// "call_0" on every turn).
func testProviderIDs(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	var want []*store.Record
	for i, task := range []string{"t1", "t1", "t1", "t2"} {
		r := rec(task, fmt.Sprintf("ours-%d", i))
		r.ProviderCallID = "call_0"
		mustPut(t, s, r)
		want = append(want, r)
	}
	for _, w := range want {
		wantRecord(t, mustGet(t, s, w.ToolCallID), w, true)
	}
	if l, err := s.ListTask(ctx(t), "t1"); err != nil || !slices.Equal(ids(l), []string{"ours-0", "ours-1", "ours-2"}) {
		t.Errorf("ListTask(t1) = %v, %v; want the three records sharing provider id call_0", ids(l), err)
	}
	if p, ok := s.(store.ProviderIDs); ok {
		for _, c := range []struct {
			task, pid string
			want      []string
		}{{"t1", "call_0", []string{"ours-0", "ours-1", "ours-2"}}, {"t2", "call_0", []string{"ours-3"}},
			{"t1", "call_9", nil}, {"t1", "", nil}} {
			got, err := p.ByProviderID(ctx(t), c.task, c.pid)
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("ByProviderID(%s, %q) = %v, %v; want %v", c.task, c.pid, got, err, c.want)
			}
		}
	}
}
