package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// watcher is an Observer that keeps what it was told, and can stop a call.
type watcher struct {
	mu     sync.Mutex
	begun  []string
	stages map[string][]tool.Stage
	out    map[string]string
	ends   map[string]*tool.Result
	cancel map[string]context.CancelFunc
	onOut  func(callID, text string)
}

func newWatcher() *watcher {
	return &watcher{stages: map[string][]tool.Stage{}, out: map[string]string{}, ends: map[string]*tool.Result{},
		cancel: map[string]context.CancelFunc{}}
}

func (w *watcher) Begin(ctx context.Context, taskID string, call *tool.Call) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.begun = append(w.begun, taskID+"/"+call.ID)
	w.cancel[call.ID] = cancel
	return ctx
}

func (w *watcher) Stage(id string, s tool.Stage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stages[id] = append(w.stages[id], s)
}

func (w *watcher) Event(id string, e tool.Event) {
	w.mu.Lock()
	w.out[id] += string(e.Data)
	text, f := w.out[id], w.onOut
	w.mu.Unlock()
	if f != nil && len(e.Data) > 0 {
		f(id, text)
	}
}

func (w *watcher) End(id string, res *tool.Result, took time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ends[id] = res
	if took < 0 {
		panic("negative duration")
	}
}

// The observer hears each stage a call reaches, in order, its output as
// it is produced (the caller's own sink still gets it), and its end; a
// call refused at Authorization reaches no later stage.
func TestObserverSeesStagesOutputAndEnd(t *testing.T) {
	r := newRig(t)
	w := newWatcher()
	p := pipeline.New(&pipeline.Options{Store: r.st, Observer: w, Policy: &approval.Policy{Tools: []string{"write_file"}}})
	h := p.Handler(r.run("task-obs"))
	var mine strings.Builder
	res := h(context.Background(), &tool.Call{ID: "c1", Name: "execute", Input: json.RawMessage(`{"command":"echo hello"}`),
		Events: func(e tool.Event) { mine.Write(e.Data) }})
	if res.IsError {
		t.Fatalf("execute: %s", res.AllText())
	}
	res2 := h(context.Background(), &tool.Call{ID: "c2", Name: "write_file", Input: json.RawMessage(`{"path":"a.txt","content":"x"}`)})
	if !res2.IsError || res2.Stage != tool.Authorization {
		t.Fatalf("write_file without a confirmer: %v %s", res2.Stage, res2.AllText())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Join(w.begun, ",") != "task-obs/c1,task-obs/c2" {
		t.Errorf("begun %v", w.begun)
	}
	want := []tool.Stage{tool.Discovery, tool.Parameters, tool.Authorization, tool.Execution, tool.Verification}
	if got := w.stages["c1"]; !equalStages(got, want) {
		t.Errorf("c1 stages %v, want %v", got, want)
	}
	if got := w.stages["c2"]; !equalStages(got, want[:3]) {
		t.Errorf("c2 (refused at Authorization) stages %v, want %v", got, want[:3])
	}
	if w.out["c1"] != "hello\n" || mine.String() != "hello\n" {
		t.Errorf("output: observer %q, caller's sink %q", w.out["c1"], mine.String())
	}
	if w.ends["c1"] != res || w.ends["c2"] == nil || !w.ends["c2"].IsError {
		t.Errorf("ends: %v", w.ends)
	}
}

// The context Begin returns is the call's: cancelling it stops a running
// command as Ctrl-C does, and the record says cancelled.
func TestObserverCanStopACall(t *testing.T) {
	r := newRig(t)
	w := newWatcher()
	w.onOut = func(id, text string) {
		if strings.Contains(text, "started") {
			w.mu.Lock()
			c := w.cancel[id]
			w.mu.Unlock()
			c()
		}
	}
	p := pipeline.New(&pipeline.Options{Store: r.st, Observer: w})
	res := p.Handler(r.run("task-stop"))(context.Background(),
		&tool.Call{ID: "c-stop", Name: "execute", Input: json.RawMessage(`{"command":"echo started; sleep 600"}`)})
	if !res.IsError || res.Stage != tool.Execution {
		t.Fatalf("a stopped call: %v %s", res.Stage, res.AllText())
	}
	rec, _ := record(t, r.st, "c-stop")
	if rec.Outcome != store.OutcomeCancelled || rec.Stage != string(tool.Execution) {
		t.Errorf("record: outcome %s stage %s, want cancelled at Execution", rec.Outcome, rec.Stage)
	}
}

func equalStages(a, b []tool.Stage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
