package result_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

func openStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "calls.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// clock returns a clock reading base + the durations given, in turn.
func clock(steps ...time.Duration) func() time.Time {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var i atomic.Int64
	return func() time.Time {
		n := int(i.Add(1)) - 1
		if n >= len(steps) {
			n = len(steps) - 1
		}
		return base.Add(steps[n])
	}
}

type recorded struct{ recs []*store.Record }

func (r *recorded) Schedule(_ context.Context, rec *store.Record) { r.recs = append(r.recs, rec) }

func TestRecorderRunningRecordThenFinalBeforeReturn(t *testing.T) {
	st := openStore(t)
	sched := &recorded{}
	var clients []result.Client
	rec := result.New(st, &result.Options{Now: clock(0, 1500*time.Millisecond), NewID: func() string { return "call_minted" },
		Compactor: sched, OnClient: func(c result.Client) { clients = append(clients, c) }})
	call := &tool.Call{Name: "read_file", Input: json.RawMessage(` {"path":"a.txt"} `)}
	res := rec.Call(context.Background(), "task1", call, func(ctx context.Context, c *tool.Call) *tool.Result {
		// While the tool runs, its trace is already durable.
		got, err := st.Get(ctx, c.ID)
		if err != nil || got.Outcome != store.OutcomeRunning || string(got.Input) != `{"path":"a.txt"}` || len(got.Output) != 0 {
			t.Errorf("running record: %+v %v", got, err)
		}
		return tool.TextWith("hello", tool.Evidence{"bytes": 5})
	})
	if call.ID != "call_minted" || res.AllText() != "hello" {
		t.Fatalf("id %q text %q", call.ID, res.AllText())
	}
	got, err := st.Get(context.Background(), "call_minted")
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != store.OutcomeOK || got.TaskID != "task1" || got.Tool != "read_file" || got.EndedAt.Sub(got.StartedAt) != 1500*time.Millisecond {
		t.Fatalf("final record %+v", got)
	}
	w, _ := result.Decode(got.Output)
	if w.Text() != "hello" || w.Evidence["bytes"] != float64(5) {
		t.Fatalf("raw output %s", got.Output)
	}
	if m, _ := result.ModelOf(got); m.Text != "hello" || strings.Contains(string(got.Model), "evidence") {
		t.Fatalf("model %s", got.Model)
	}
	if len(sched.recs) != 1 || sched.recs[0].ToolCallID != "call_minted" {
		t.Fatalf("scheduled %v", sched.recs)
	}
	if len(clients) != 2 || clients[0].Status != result.StatusRunning || clients[1].Status != result.StatusOK ||
		clients[1].Target != "a.txt" || clients[1].Duration != 1500*time.Millisecond || clients[1].Output != "hello" {
		t.Fatalf("client projections %+v", clients)
	}
}

func TestRecorderOutcomes(t *testing.T) {
	st := openStore(t)
	rec := result.New(st, nil)
	errRes := tool.ErrorResult(tool.Errorf(tool.Parameters, "bad path"), "read_file")
	rec.Call(context.Background(), "t", &tool.Call{ID: "e1", Name: "read_file"}, func(context.Context, *tool.Call) *tool.Result { return errRes })
	ctx, cancel := context.WithCancel(context.Background())
	rec.Call(ctx, "t", &tool.Call{ID: "c1", Name: "execute"}, func(context.Context, *tool.Call) *tool.Result {
		cancel()
		return tool.ErrorResult(tool.Errorf(tool.Execution, "cancelled"), "execute")
	})
	rec.Call(context.Background(), "t", &tool.Call{ID: "c2", Name: "execute"}, func(context.Context, *tool.Call) *tool.Result {
		return &tool.Result{IsError: true, Stage: tool.Execution, Evidence: tool.Evidence{"cancelled": true}}
	})
	for id, want := range map[string]store.Outcome{"e1": store.OutcomeError, "c1": store.OutcomeCancelled, "c2": store.OutcomeCancelled} {
		got, _ := st.Get(context.Background(), id)
		if got.Outcome != want {
			t.Errorf("%s: %s, want %s", id, got.Outcome, want)
		}
	}
	if got, _ := st.Get(context.Background(), "e1"); got.Stage != "parameters" {
		t.Errorf("stage %q", got.Stage)
	}
}

// failStore fails every Put.
type failStore struct{ store.Store }

func (failStore) Put(context.Context, *store.Record) error { return errors.New("disk full") }
func (failStore) Get(context.Context, string) (*store.Record, error) {
	return nil, store.ErrNotFound
}

func TestRecorderStoreFailureSaysSo(t *testing.T) {
	rec := result.New(failStore{}, nil)
	res := rec.Call(context.Background(), "t", &tool.Call{ID: "x", Name: "ls"}, func(context.Context, *tool.Call) *tool.Result { return tool.Text("a\nb") })
	if !strings.HasPrefix(res.AllText(), "a\nb\n") || !strings.Contains(res.AllText(), "could not be written (disk full)") || res.IsError {
		t.Fatalf("%q", res.AllText())
	}
}

func TestTarget(t *testing.T) {
	for in, want := range map[string]string{
		`{"command":"go test ./...","timeout_ms":5}`: "go test ./...",
		`{"path":"a/b.go","offset":3}`:               "a/b.go",
		`{"n":1}`:                                    "",
		`not json`:                                   "",
	} {
		if got := result.Target(json.RawMessage(in)); got != want {
			t.Errorf("%s: %q", in, got)
		}
	}
}

func TestWireRoundTrip(t *testing.T) {
	res := &tool.Result{Content: []tool.Content{{Type: tool.TextContent, Text: "<b>&"}, {Type: tool.ImageContent, Data: []byte{1, 2}, MIMEType: "image/png"}},
		IsError: true, Stage: tool.Verification, Evidence: tool.Evidence{"k": "v"}}
	w, err := result.Decode(result.EncodeOutput(res))
	if err != nil {
		t.Fatal(err)
	}
	back := w.Result()
	if back.Content[0].Text != "<b>&" || string(back.Content[1].Data) != "\x01\x02" || !back.IsError || back.Stage != tool.Verification || back.Evidence["k"] != "v" {
		t.Fatalf("%+v", back)
	}
	if strings.Contains(string(result.EncodeOutput(res)), `\u003c`) {
		t.Error("HTML escaping changes the raw text")
	}
}

// BH-051: three parallel calls; tu_1 finishes, tu_2 is cancelled after
// 3.1 s with partial output, tu_3 never starts. Pair gives one result per
// tool_use, in order.
func TestBH051InterruptedTurnGetsAResultPerToolUse(t *testing.T) {
	st := openStore(t)
	rec := result.New(st, &result.Options{Now: clock(0, time.Second, 0, 3100*time.Millisecond)})
	rec.Call(context.Background(), "task", &tool.Call{ID: "tu_1", Name: "read_file"}, func(context.Context, *tool.Call) *tool.Result { return tool.Text("file body") })
	ctx, cancel := context.WithCancel(context.Background())
	rec.Call(ctx, "task", &tool.Call{ID: "tu_2", Name: "execute"}, func(context.Context, *tool.Call) *tool.Result {
		cancel() // the user presses stop while it runs
		return &tool.Result{Content: []tool.Content{{Type: tool.TextContent, Text: "partial: step 1 done"}}, IsError: true, Stage: tool.Execution}
	})
	got, err := result.Pair(context.Background(), st, []result.Use{{ID: "tu_1", Name: "read_file"}, {ID: "tu_2", Name: "execute"}, {ID: "tu_3", Name: "grep"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ToolCallID != "tu_1" || got[1].ToolCallID != "tu_2" || got[2].ToolCallID != "tu_3" {
		t.Fatalf("%+v", got)
	}
	if got[0].IsError || got[0].Text != "file body" {
		t.Errorf("tu_1: %+v", got[0])
	}
	if !got[1].IsError || !strings.HasPrefix(got[1].Text, "cancelled after 3.1 s") || !strings.Contains(got[1].Text, "partial: step 1 done") {
		t.Errorf("tu_2: %q", got[1].Text)
	}
	if !got[2].IsError || !strings.HasPrefix(got[2].Text, "not run: cancelled") || got[2].Tool != "grep" {
		t.Errorf("tu_3: %+v", got[2])
	}
}

// BH-053: a call still in flight while later calls finish (and are
// compacted) keeps its place: its result is stored at its tool_use, in
// start order, with nothing synthetic in between.
func TestBH053InFlightResultStaysAtItsCall(t *testing.T) {
	st := openStore(t)
	rec := result.New(st, nil)
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec.Call(context.Background(), "task", &tool.Call{ID: "tu_5", Name: "execute"}, func(context.Context, *tool.Call) *tool.Result {
			close(started)
			<-release
			return tool.Text("slow result")
		})
	}()
	<-started
	rec.Call(context.Background(), "task", &tool.Call{ID: "tu_6", Name: "ls"}, func(context.Context, *tool.Call) *tool.Result { return tool.Text("fast") })
	if _, err := st.ReplaceModel(context.Background(), "tu_6", json.RawMessage(`{"content":[]}`), store.CompactionTrim, ""); err != nil {
		t.Fatal(err)
	}
	recs, _ := st.ListTask(context.Background(), "task")
	if len(recs) != 2 || recs[0].ToolCallID != "tu_5" || recs[0].Outcome != store.OutcomeRunning {
		t.Fatalf("while in flight: %v", ids(recs))
	}
	close(release)
	<-done
	recs, _ = st.ListTask(context.Background(), "task")
	if len(recs) != 2 || recs[0].ToolCallID != "tu_5" || recs[1].ToolCallID != "tu_6" {
		t.Fatalf("order %v", ids(recs))
	}
	if m, _ := result.ModelOf(recs[0]); m.Text != "slow result" || recs[0].Outcome != store.OutcomeOK {
		t.Fatalf("tu_5 %+v", recs[0])
	}
	got, _ := result.Pair(context.Background(), st, []result.Use{{ID: "tu_5"}})
	if got[0].Text != "slow result" || got[0].IsError {
		t.Fatalf("pair %+v", got)
	}
}

func ids(recs []*store.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ToolCallID+":"+string(r.Outcome))
	}
	return out
}
