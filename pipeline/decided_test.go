package pipeline_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// An answer a person gives while a call executes (an upstream server's
// question) is reported like a confirm exchange: Run.OnDecision gets it
// (aibuddy run's user-role text) and the record "<id>#input-<n>" holds
// it, one per answer; outside a pipeline call Decided reports false.
func TestDecidedDuringExecution(t *testing.T) {
	asker := tool.MustDefine(tool.Spec{Name: "fx__apply_change", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			for _, q := range []string{"confirm deploy?", "really?"} {
				pipeline.Decided(ctx, approval.Exchange{Action: approval.Action{CallID: c.ID, Tool: c.Name, Consequence: q},
					Decision: approval.Decision{Approved: true, Note: "answered yes"}})
			}
			return tool.Text("applied"), nil
		}})
	set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{MCP: []capability.MCPServer{
		{Name: "fx", Connected: true, Tools: []*tool.Tool{asker}}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []string
	h := pipeline.New(&pipeline.Options{Store: st}).Handler(pipeline.Run{TaskID: "t", Tools: pipeline.Fixed(set, nil),
		OnDecision: func(_ context.Context, ex approval.Exchange) { got = append(got, ex.Text()) }})
	if res := h(context.Background(), &tool.Call{ID: "c1", Name: "fx__apply_change", Input: json.RawMessage(`{}`)}); res.IsError {
		t.Fatal(res.AllText())
	}
	if len(got) != 2 || !strings.Contains(got[0], "confirm deploy?") || !strings.Contains(got[1], "really?") || !strings.Contains(got[0], "The user said: answered yes") {
		t.Errorf("OnDecision got %q", got)
	}
	for _, id := range []string{"c1#input-1", "c1#input-2"} {
		if rec, err := st.Get(context.Background(), id); err != nil || rec.TaskID != "t" || !strings.Contains(string(rec.Model), "Approved") {
			t.Errorf("record %s: %+v, %v", id, rec, err)
		}
	}
	if pipeline.Decided(context.Background(), approval.Exchange{}) {
		t.Error("Decided outside a call reported true")
	}
}
