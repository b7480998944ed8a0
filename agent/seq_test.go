package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/store"
)

// TestParallelRecordsFollowCallOrder is BH-071 in the record store: the
// calls of one turn start out of call order (e2 edits the file e1 edits,
// so it waits for e1, while r1 and w1 start at once) and end in any
// order, yet the task's records (ListTask, Seq order) follow the call
// order, each final.
func TestParallelRecordsFollowCallOrder(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "nums.txt"), []byte("1\n50\n75\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	calls := []provider.Block{
		use("e1", "edit_file", `{"path":"nums.txt","old_string":"\n50\n","new_string":"\nFIFTY\n"}`),
		use("e2", "edit_file", `{"path":"./nums.txt","old_string":"\n75\n","new_string":"\nSEVENTY-FIVE\n"}`),
		use("r1", "fx__slow", `{"name":"a"}`),
		use("w1", "write_file", `{"path":"other.txt","content":"other\n"}`),
	}
	ids := []string{"e1", "e2", "r1", "w1"}
	m := &scripted{turns: []func(*provider.Request) []provider.Block{static(calls...), static(say("done"))}}
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: fxSet(t, ws, &fx{}), Store: st, Policy: noConfirm()}).Run(context.Background(), "go"), time.Minute, nil)
	if err != nil || sum.Calls != 4 || len(sum.Failures) != 0 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	var want []string
	for _, id := range ids {
		want = append(want, ourID(t, sum.Transcript, id))
	}
	recs, err := st.ListTask(context.Background(), sum.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.ToolCallID)
		if r.Outcome != store.OutcomeOK {
			t.Errorf("record %s (%s): outcome %s, want ok", r.ToolCallID, r.Tool, r.Outcome)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("records in Seq order %v, want the call order %v", got, want)
	}
}
