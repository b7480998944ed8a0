package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/web"
)

// A question of ask_user_question is answered at the browser, once.
func TestQuestionAnsweredInTheBrowser(t *testing.T) {
	r := newRig(t, 64)
	c := client()
	csrf := r.login(t, c)
	got := make(chan approval.Answer, 1)
	ask := approval.AskVia(approval.ViaWeb, nil, r.broker)
	go func() {
		a, err := ask.Ask(context.Background(), approval.Question{Text: "Which branch?", Options: []string{"main", "dev"}})
		if err != nil {
			t.Error(err)
		}
		got <- a
	}()
	var req approval.Request
	for req.ID == "" {
		waitEvent(t, r, "approvals")
		if p := r.broker.Pending(); len(p) == 1 {
			req = p[0]
		}
	}
	snap := r.get(t, c, "/ui/api/snapshot", 200)
	if !strings.Contains(snap, `"Which branch?"`) {
		t.Fatalf("the snapshot lacks the question: %s", snap)
	}
	own := map[string]string{"Origin": r.srv.URL, web.CSRFHeader: csrf}
	if code := r.post(t, c, "/ui/api/approvals/"+req.ID, map[string]string{"decision": "approve"}, own); code != http.StatusUnprocessableEntity {
		t.Errorf("a question approved as a confirm: %d", code)
	}
	if code := r.post(t, c, "/ui/api/questions/"+req.ID, map[string]string{"answer": "dev"}, own); code != 200 {
		t.Fatalf("answer: %d", code)
	}
	if a := <-got; a.Text != "dev" {
		t.Fatalf("answer %+v", a)
	}
	if code := r.post(t, c, "/ui/api/questions/"+req.ID, map[string]string{"answer": "main"}, own); code != http.StatusConflict {
		t.Errorf("a second answer: %d", code)
	}
}

// The call page shows the three projections, pages a big one, states the
// compaction saving and the view_tool_call pointer, and reads a full
// output file only inside the data folder.
func TestCallPage(t *testing.T) {
	data := t.TempDir()
	r := newRigData(t, data)
	var lines []string
	for i := range 3000 {
		lines = append(lines, fmt.Sprintf("line %04d", i))
	}
	whole := strings.Join(lines, "\n")
	full := filepath.Join(data, "outputs", "t1", "big.log")
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.log")
	_ = os.WriteFile(outside, []byte("SECRET"), 0o600)
	put := func(id, path string) {
		out, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": whole}},
			"evidence": map[string]any{"full_output_path": path}})
		model, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": "[trimmed] line 0000 … line 2999"}}})
		rec := &store.Record{ToolCallID: id, TaskID: "t1", Tool: "execute", Input: json.RawMessage(`{"command":"gen"}`),
			Output: out, Model: out, Outcome: store.OutcomeOK, StartedAt: time.Now(), EndedAt: time.Now()}
		if err := r.st.Put(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if ok, err := r.st.ReplaceModel(context.Background(), id, model, store.CompactionTrim, "compacted_outputs/t1/"+id+".json"); !ok || err != nil {
			t.Fatalf("ReplaceModel: %v %v", ok, err)
		}
	}
	put("big", full)
	put("other", outside)
	c := client()
	r.login(t, c)
	page := r.get(t, c, "/ui/calls/big", 200)
	for _, want := range []string{"<strong>trim</strong>", "view_tool_call {&#34;id&#34;:&#34;big&#34;}", "compacted_outputs/t1/big.json",
		"page 1 of 2 · 29999 bytes", "the complete output as streamed (full output file", "compacted (trim)", "page 1 of 1 · 31 characters"} {
		if !strings.Contains(page, want) {
			t.Errorf("the call page lacks %q", want)
		}
	}
	if n := strings.Count(page, "line 2999"); n != 1 { // the model's stub names it; page 1 of the others ends before it
		t.Errorf("page 1 names the output's last line %d times, want 1", n)
	}
	p2 := r.get(t, c, "/ui/calls/big?cp=1", 200)
	if !strings.Contains(p2, "page 2 of 2") || !strings.Contains(p2, "line 2999") {
		t.Error("page 2 of the client pane")
	}
	other := r.get(t, c, "/ui/calls/other", 200)
	if strings.Contains(other, "SECRET") || strings.Contains(other, "full output file") {
		t.Error("a full output path outside the data folder was read")
	}
}

// newRigData is newRig with a data folder for full output files and
// pages of 20,000 characters.
func newRigData(t *testing.T, data string) *rig {
	r := newRig(t, 16)
	r.srv.Config.Handler = web.New(&web.Options{Verify: verify, Store: r.st, Hub: r.hub, Broker: r.broker, DataDir: data})
	return r
}
