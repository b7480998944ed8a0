package coretools

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// With Payloads set, a call's full output file is also copied into the
// store at the call's end, byte for byte, under the call's task; a call
// without a task id is not copied (no task to keep it under).
func TestExecuteCopiesFullOutputIntoPayloads(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := newExecRig(t, nil, &ExecuteOptions{OutputDir: t.TempDir(), MaxOutputChars: 500, Payloads: st})
	ctx := tool.WithTaskID(context.Background(), "task-1")
	// About 10 MB: more than one piece of the copy.
	res := r.tool.Call(ctx, &tool.Call{ID: "call_big", Input: []byte(`{"command":"seq 1 1500000; echo done >&2"}`)})
	if res.IsError {
		t.Fatal(res.AllText())
	}
	p, _ := res.Evidence[tool.EvidenceFullOutputPath].(string)
	local, err := os.ReadFile(p)
	if err != nil || len(local) < 2*payloadPiece {
		t.Fatalf("local full output %s: %d bytes, %v", p, len(local), err)
	}
	got, size, err := st.ReadPayload(context.Background(), "task-1", store.OutputPayloadName("call_big"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(local)) || !bytes.Equal(got, local) {
		t.Errorf("payload holds %d bytes (size %d), the local file %d; they differ", len(got), size, len(local))
	}
	res = r.tool.Call(context.Background(), &tool.Call{ID: "call_notask", Input: []byte(`{"command":"echo x"}`)})
	if _, _, err := st.ReadPayload(context.Background(), "task-1", store.OutputPayloadName("call_notask"), 0, 0); err == nil || res.IsError {
		t.Errorf("a call without a task was copied (%v) or failed: %s", err, res.AllText())
	}
	// A store that fails: the call still succeeds, the local file stays,
	// the result says the copy failed.
	st.Close()
	res = r.tool.Call(ctx, &tool.Call{ID: "call_closed", Input: []byte(`{"command":"echo still here"}`)})
	if res.IsError || !strings.Contains(res.AllText(), "not copied into the store") {
		t.Errorf("with a closed store: %s", res.AllText())
	}
}

// The execute group takes Payloads from the run's services.
func TestWithPayloadsFromServices(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ex := &ExecuteOptions{MaxOutputChars: 7}
	got := withPayloads(ex, registry.Env{Services: map[string]any{ServiceOutputPayloads: store.Payloads(st)}})
	if got.Payloads == nil || got.MaxOutputChars != 7 || ex.Payloads != nil {
		t.Errorf("withPayloads = %+v (given options changed: %v)", got, ex.Payloads != nil)
	}
	if withPayloads(ex, registry.Env{}) != ex {
		t.Error("without the service the options should stay as given")
	}
}
