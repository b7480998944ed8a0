package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// rig is a real run: the built-in tools over a workspace folder, a
// deferred MCP server (12 tools, over the per-server gate), and the call
// records in a SQLite file.
type rig struct {
	ws  string
	set *capability.Set
	dr  *discovery.Run
	st  store.Store
}

// liar is a tool whose result contradicts its own declared check: it says
// it wrote "x" and gives the hash of something else.
func liar() *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name:        "liar",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}},"required":["content"],"additionalProperties":false}`),
		Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
			return tool.TextWith("stored", tool.Evidence{tool.EvidenceSHA256: "00"}), nil
		},
		Verify: func(call *tool.Call, res *tool.Result) tool.Verdict {
			v := tool.Verdict{Checked: "liar: the stored hash"}
			if res.Evidence[tool.EvidenceSHA256] != "ff" {
				v.Problem = fmt.Sprintf("the stored hash is %v, not ff", res.Evidence[tool.EvidenceSHA256])
			}
			return v
		},
	})
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ws := t.TempDir()
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	liarGroup := registry.Group{Key: "liar", Names: []string{"liar"},
		Build: func(registry.Env) ([]*tool.Tool, error) { return []*tool.Tool{liar()}, nil }}
	reg := registry.New(append(coretools.Groups(nil, &coretools.ExecuteOptions{OutputDir: t.TempDir()}), liarGroup),
		append(append([]registry.Meta(nil), coretools.Metas...), registry.Meta{Key: "liar"}), nil)
	if err := reg.AssertConsistent(); err != nil {
		t.Fatal(err)
	}
	var upstream []*tool.Tool
	for i := range 12 {
		upstream = append(upstream, tool.MustDefine(tool.Spec{Name: fmt.Sprintf("far__t%d", i), InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("far"), nil }}))
	}
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb,
		MCP: []capability.MCPServer{{Name: "far", Connected: true, Tools: upstream}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &rig{ws: ws, set: set, dr: discovery.NewCatalogWith(discovery.EntriesOf(set), nil).NewRun(), st: st}
}

func (r *rig) run(task string) pipeline.Run {
	return pipeline.Run{TaskID: task, Tools: pipeline.Fixed(r.set, r.dr)}
}

// counting is a confirmer that answers approve and counts the questions.
type counting struct {
	mu    sync.Mutex
	asked []approval.Action
	yes   bool
}

func (c *counting) Confirm(ctx context.Context, a approval.Action) (approval.Decision, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, a)
	return approval.Decision{Approved: c.yes}, nil
}

// record reads a call's record and its decoded output.
func record(t *testing.T, st store.Store, id string) (*store.Record, result.Wire) {
	t.Helper()
	rec, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("record %s: %v", id, err)
	}
	w, err := result.Decode(rec.Output)
	if err != nil {
		t.Fatal(err)
	}
	return rec, w
}

// Every stage that refuses a call does so at its own stage, and the
// record says which, with the evidence and the Verification outcome.
func TestEachStageFailsAtItsStageAndTheRecordSaysSo(t *testing.T) {
	r := newRig(t)
	if err := os.WriteFile(filepath.Join(r.ws, ".env"), []byte("KEY=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := &counting{yes: false}
	p := pipeline.New(&pipeline.Options{Store: r.st, Policy: approval.DefaultPolicy(), Confirmer: conf})
	h := p.Handler(r.run("task-stages"))

	cases := []struct {
		id, name, input string
		stage           tool.Stage // "" for success
		verified        any        // want evidence verified: true, false, or nil (absent)
		text            string     // in the result
	}{
		{"c-ok", "write_file", `{"path":"a.txt","content":"hello\n"}`, "", true, "wrote 6 bytes"},
		{"c-unknown", "no_such_tool", `{}`, tool.Discovery, nil, "no tool named"},
		{"c-deferred", "far__t1", `{}`, tool.Discovery, nil, "select:far__t1"},
		{"c-params", "write_file", `{"path":"a.txt"}`, tool.Parameters, nil, "content is required"},
		{"c-denied", "read_file", `{"path":".env"}`, tool.Authorization, nil, "denied by policy"},
		{"c-rejected", "execute", `{"command":"sudo true"}`, tool.Authorization, nil, "the user rejected this action"},
		{"c-timeout", "execute", `{"command":"sleep 5","timeout_ms":100}`, tool.Execution, nil, "timed out"},
		{"c-lie", "liar", `{"content":"x"}`, tool.Verification, false, "the stored hash is 00, not ff"},
		{"c-exec", "execute", `{"command":"echo hi"}`, "", true, "exit code: 0"},
		{"c-read", "read_file", `{"path":"a.txt"}`, "", nil, "hello"},
	}
	for _, c := range cases {
		res := h(context.Background(), &tool.Call{ID: c.id, Name: c.name, Input: json.RawMessage(c.input)})
		if res.Stage != c.stage || res.IsError != (c.stage != "") || !strings.Contains(res.AllText(), c.text) {
			t.Errorf("%s: got error %v at %q: %s; want stage %q with %q", c.id, res.IsError, res.Stage, res.AllText(), c.stage, c.text)
		}
		if got := res.Evidence[tool.EvidenceVerified]; got != c.verified {
			t.Errorf("%s: result evidence verified = %v, want %v", c.id, got, c.verified)
		}
		rec, w := record(t, r.st, c.id)
		if rec.Stage != string(c.stage) || rec.TaskID != "task-stages" || rec.Tool != c.name {
			t.Errorf("%s: record stage %q task %q tool %q, want %q", c.id, rec.Stage, rec.TaskID, rec.Tool, c.stage)
		}
		wantOutcome := store.OutcomeOK
		if c.stage != "" {
			wantOutcome = store.OutcomeError
		}
		if rec.Outcome != wantOutcome {
			t.Errorf("%s: outcome %q, want %q", c.id, rec.Outcome, wantOutcome)
		}
		if got := w.Evidence[tool.EvidenceVerified]; got != c.verified {
			t.Errorf("%s: record evidence verified = %v, want %v", c.id, got, c.verified)
		}
		if c.verified != nil {
			if s, _ := w.Evidence[tool.EvidenceVerification].(string); s == "" {
				t.Errorf("%s: the record does not say what was verified: %v", c.id, w.Evidence)
			}
		}
	}
	// Only the one call that passed Parameters and needed a person was
	// put to one (not the invalid one, not the denied one).
	if len(conf.asked) != 1 || conf.asked[0].CallID != "c-rejected" {
		t.Errorf("asked about %+v, want only c-rejected", conf.asked)
	}
	// The exchange has its own record.
	ex, err := r.st.Get(context.Background(), "c-rejected"+pipeline.ConfirmRecordSuffix)
	if err != nil || ex.Tool != pipeline.ConfirmTool || !strings.Contains(string(ex.Output), `"approved":false`) {
		t.Errorf("confirm record: %+v %v", ex, err)
	}
	// Nothing ran that a stage refused.
	if _, err := os.Stat(filepath.Join(r.ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
}

// A Parameters failure is decided before anybody is asked: an invalid call
// that the policy would put to a person never reaches the confirmer.
func TestParametersBeforeAuthorization(t *testing.T) {
	r := newRig(t)
	conf := &counting{yes: true}
	p := pipeline.New(&pipeline.Options{Policy: &approval.Policy{Tools: []string{"write_file"}}, Confirmer: conf})
	h := p.Handler(r.run("t"))
	res := h(context.Background(), &tool.Call{ID: "bad", Name: "write_file", Input: json.RawMessage(`{"path":1}`)})
	if res.Stage != tool.Parameters || len(conf.asked) != 0 {
		t.Fatalf("stage %q, asked %d: %s", res.Stage, len(conf.asked), res.AllText())
	}
	res = h(context.Background(), &tool.Call{ID: "good", Name: "write_file", Input: json.RawMessage(`{"path":"b.txt","content":"b"}`)})
	if res.IsError || len(conf.asked) != 1 || res.Evidence[tool.EvidenceVerified] != true {
		t.Fatalf("stage %q, asked %d: %s", res.Stage, len(conf.asked), res.AllText())
	}
}

// An embedder's middleware sits after Discovery and before Parameters:
// it sees only calls to active tools, input it rewrites is still checked
// and verified, and the record keeps the input as received.
func TestMiddlewarePlace(t *testing.T) {
	r := newRig(t)
	var mu sync.Mutex
	var seen []string
	rewrite := func(next pipeline.Handler) pipeline.Handler {
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			mu.Lock()
			seen = append(seen, call.Name)
			mu.Unlock()
			if call.Name == "write_file" {
				cp := *call
				cp.Input = json.RawMessage(`{"path":"c.txt","content":"rewritten"}`)
				call = &cp
			}
			if call.Name == "read_file" {
				cp := *call
				cp.Input = json.RawMessage(`{"path":42}`) // made invalid here: Parameters still catches it
				call = &cp
			}
			res := next(ctx, call)
			if call.Name == "write_file" && res.Evidence[tool.EvidenceVerified] != true {
				t.Errorf("the middleware sees an unverified result: %v", res.Evidence)
			}
			return res
		}
	}
	p := pipeline.New(&pipeline.Options{Store: r.st, Middleware: []pipeline.Middleware{rewrite}})
	h := p.Handler(r.run("t-mw"))
	if res := h(context.Background(), &tool.Call{ID: "m1", Name: "no_such_tool"}); res.Stage != tool.Discovery {
		t.Fatalf("%s", res.AllText())
	}
	if res := h(context.Background(), &tool.Call{ID: "m2", Name: "write_file", Input: json.RawMessage(`{"path":"c.txt","content":"original"}`)}); res.IsError {
		t.Fatal(res.AllText())
	}
	if res := h(context.Background(), &tool.Call{ID: "m3", Name: "read_file", Input: json.RawMessage(`{"path":"c.txt"}`)}); res.Stage != tool.Parameters {
		t.Fatalf("a rewritten invalid input was not caught at Parameters: %s", res.AllText())
	}
	if b, _ := os.ReadFile(filepath.Join(r.ws, "c.txt")); string(b) != "rewritten" {
		t.Errorf("c.txt = %q", b)
	}
	if strings.Join(seen, ",") != "write_file,read_file" {
		t.Errorf("the middleware saw %v, want only the calls to active tools", seen)
	}
	rec, _ := record(t, r.st, "m2")
	if !strings.Contains(string(rec.Input), "original") {
		t.Errorf("the record keeps %s, want the input as received", rec.Input)
	}
}

// A Dispatcher may rewrite the call it dispatches (the MCP gateway's
// call_tool): the later stages act on the call it passes on, the record on
// the call as made.
func TestDispatcherUnwrapsAProxy(t *testing.T) {
	r := newRig(t)
	proxy := pipeline.DispatcherFunc(func(ctx context.Context, call *tool.Call, next func(context.Context, *tool.Call) *tool.Result) *tool.Result {
		var in struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(call.Input, &in)
		return r.dr.Dispatch(ctx, &tool.Call{ID: call.ID, Name: in.Name, Input: in.Arguments}, next)
	})
	p := pipeline.New(&pipeline.Options{Store: r.st})
	h := p.Handler(pipeline.Run{TaskID: "t-proxy", Tools: pipeline.Fixed(r.set, proxy)})
	res := h(context.Background(), &tool.Call{ID: "p1", Name: "call_tool", Input: json.RawMessage(`{"name":"liar","arguments":{"content":"x"}}`)})
	if res.Stage != tool.Verification {
		t.Fatalf("the proxied call was not verified: %s", res.AllText())
	}
	rec, w := record(t, r.st, "p1")
	if rec.Tool != "call_tool" || rec.Stage != string(tool.Verification) || w.Evidence[tool.EvidenceVerified] != false {
		t.Errorf("record %+v evidence %v", rec, w.Evidence)
	}
}

// Without a store there is no record, but the result is bounded, the
// call gets an id, and the tool sees the run's task id.
func TestNoStoreStillBoundsAndNamesTheTask(t *testing.T) {
	r := newRig(t)
	p := pipeline.New(&pipeline.Options{MaxModelChars: 100})
	h := p.Handler(r.run("task-nostore"))
	call := &tool.Call{Name: "execute", Input: json.RawMessage(`{"command":"seq 1 500"}`)}
	res := h(context.Background(), call)
	if call.ID == "" || res.IsError {
		t.Fatalf("id %q: %s", call.ID, res.AllText())
	}
	if !strings.HasPrefix(res.AllText(), "[cut by aibuddy at the 100-character result bound") {
		t.Errorf("not bounded: %.200s", res.AllText())
	}
	p2, _ := res.Evidence[tool.EvidenceFullOutputPath].(string)
	if filepath.Base(filepath.Dir(p2)) != "task-nostore" {
		t.Errorf("full output file %q is not in the task's folder", p2)
	}
}

// A run whose Tools give no Dispatcher has every tool of its set active;
// a name outside the set is still refused at Discovery.
func TestNilDispatcher(t *testing.T) {
	r := newRig(t)
	h := pipeline.New(nil).Handler(pipeline.Run{TaskID: "t", Tools: pipeline.Fixed(r.set, nil)})
	if res := h(context.Background(), &tool.Call{Name: "far__t3"}); res.IsError {
		t.Errorf("a deferred tool is not active without a dispatcher: %s", res.AllText())
	}
	if res := h(context.Background(), &tool.Call{Name: "nope"}); res.Stage != tool.Discovery {
		t.Errorf("%s", res.AllText())
	}
	h = pipeline.New(nil).Handler(pipeline.Run{TaskID: "t"})
	if res := h(context.Background(), &tool.Call{Name: "ls"}); res.Stage != tool.Discovery {
		t.Errorf("a run without tools: %s", res.AllText())
	}
}
