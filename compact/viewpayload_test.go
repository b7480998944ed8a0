package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// A call that ran in another process (its full output file is on another
// machine, the store holds the output as a payload) is viewed in full
// from here: lines, a pattern and paging all read the payload.
func TestViewReadsFullOutputFromStorePayload(t *testing.T) {
	r := newRig(t, compact.Options{})
	var full strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&full, "line %d of the build\n", i)
	}
	full.WriteString("FATAL: disk full at step 4711\n")
	elsewhere := filepath.Join(t.TempDir(), "other-machine", "task-r", "call_remote.log") // never created here
	w := result.Wire{Content: []result.WireContent{{Type: "text", Text: "exit 1\nline 1 of the build\n[... cut ...]\nFATAL: disk full at step 4711\n"}},
		IsError: true, Stage: "execution", Evidence: tool.Evidence{tool.EvidenceFullOutputPath: elsewhere}}
	out, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.st.Put(ctx, &store.Record{ToolCallID: "call_remote", TaskID: "task-r", Tool: "execute",
		Input: json.RawMessage(`{"command":"make"}`), Output: out, Model: out, Outcome: store.OutcomeError, Stage: "execution"}); err != nil {
		t.Fatal(err)
	}
	if err := r.st.PutPayload(ctx, "task-r", store.OutputPayloadName("call_remote"), []byte(full.String())); err != nil {
		t.Fatal(err)
	}
	r.view = compact.ViewToolCall(r.st, r.dir, &compact.ViewOptions{FullOutputDir: filepath.Join(r.dir, "outputs")})

	text, _ := r.viewText(`{"id":"call_remote","lines":"2500-2502"}`)
	if !strings.Contains(text, "kept in the store") || !strings.Contains(body(text), "line 2500 of the build\nline 2501 of the build\nline 2502 of the build") {
		t.Errorf("lines 2500-2502 of the stored output:\n%s", text)
	}
	text, _ = r.viewText(`{"id":"call_remote","pattern":"FATAL"}`)
	if !strings.Contains(text, "FATAL: disk full at step 4711") || !strings.Contains(text, "5001") {
		t.Errorf("pattern over the stored output:\n%s", text)
	}
	if got := r.recoverAll("call_remote", ""); got != full.String() {
		t.Errorf("paging the stored output gave %d bytes, want %d", len(got), full.Len())
	}
	// Without the payload the view falls back to the recorded text.
	if err := r.st.PutPayload(ctx, "task-r", store.OutputPayloadName("other"), nil); err != nil {
		t.Fatal(err)
	}
	w.Evidence = tool.Evidence{tool.EvidenceFullOutputPath: elsewhere + ".none"}
	out, _ = json.Marshal(w)
	if err := r.st.Put(ctx, &store.Record{ToolCallID: "call_nopayload", TaskID: "task-r", Tool: "execute", Output: out, Model: out, Outcome: store.OutcomeError}); err != nil {
		t.Fatal(err)
	}
	if text, _ := r.viewText(`{"id":"call_nopayload"}`); !strings.Contains(text, "output text") || strings.Contains(text, "kept in the store") {
		t.Errorf("without a payload: %s", text)
	}
}

// Compaction keeps the offload in the store's payloads (the store has
// them), readable through LoadOffload by any process that reaches it.
func TestOffloadGoesToStorePayloads(t *testing.T) {
	r := newRig(t, compact.Options{Workers: 1})
	doc := bigJSON(t)
	r.rec.Call(context.Background(), "task1", &tool.Call{ID: "call_big", Name: "inventory_list", Input: json.RawMessage(`{"warehouse":"north"}`)}, returning(tool.Text(doc)))
	r.c.Wait()
	rec := r.get("call_big")
	if rec.Pointer == "" {
		t.Fatalf("not compacted: %+v", must(r.c.Last("call_big")))
	}
	data, _, err := r.st.ReadPayload(context.Background(), "task1", rec.Pointer, 0, 0)
	if err != nil {
		t.Fatalf("the offload is not a payload of the store: %v", err)
	}
	var off compact.Offloaded
	if err := json.Unmarshal(data, &off); err != nil || off.ToolCallID != "call_big" || string(off.Input) != `{"warehouse":"north"}` {
		t.Fatalf("payload %s: %v %+v", rec.Pointer, err, off)
	}
	if w, _ := result.Decode(off.Output); w.Text() != doc {
		t.Error("the offload payload does not hold the raw output")
	}
}
