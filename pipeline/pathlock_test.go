package pipeline_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

// TestWritesToOnePathWaitForEachOther is BH-074 at the pipeline, for
// every entry point (an MCP host's parallel calls, two sessions): calls
// of a tool that writes the path it names (tool.Access kind Edit) run one
// at a time per file, "a.txt", "./a.txt" and its absolute path being one
// file, while a write of b.txt runs beside them. A call still waiting when
// its context ends is not run and says so.
func TestWritesToOnePathWaitForEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ws := t.TempDir()
		var mu sync.Mutex
		var inside []string
		release := map[string]chan struct{}{}
		for _, id := range []string{"A", "B", "C", "D", "E"} {
			release[id] = make(chan struct{})
		}
		put := tool.MustDefine(tool.Spec{Name: "fx__put",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			Access:      tool.PathAccess(tool.AccessEdit, "path"),
			Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
				mu.Lock()
				inside = append(inside, call.ID)
				mu.Unlock()
				<-release[call.ID]
				return tool.Text("put"), nil
			}})
		set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{MCP: []capability.MCPServer{{Name: "fx", Connected: true, Tools: []*tool.Tool{put}}}})
		if err != nil {
			t.Fatal(err)
		}
		h := pipeline.New(&pipeline.Options{Workspace: ws}).Handler(pipeline.Run{TaskID: "t", Tools: pipeline.Fixed(set, nil)})
		results := map[string]*tool.Result{}
		var wg sync.WaitGroup
		call := func(ctx context.Context, id, path string) {
			wg.Go(func() {
				res := h(ctx, &tool.Call{ID: id, Name: "fx__put", Input: json.RawMessage(`{"path":"` + path + `"}`)})
				mu.Lock()
				results[id] = res
				mu.Unlock()
			})
		}
		seen := func() string {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return strings.Join(inside, ",")
		}
		call(context.Background(), "A", "a.txt")
		if got := seen(); got != "A" {
			t.Fatalf("inside: %s", got)
		}
		ctx, cancel := context.WithCancel(context.Background())
		call(context.Background(), "B", "./a.txt")
		call(context.Background(), "C", "b.txt")
		call(ctx, "E", "a.txt")
		if got := seen(); got != "A,C" {
			t.Fatalf("with A holding a.txt, inside: %s (want A and C only)", got)
		}
		cancel()
		if got := seen(); got != "A,C" {
			t.Fatalf("after E's cancel, inside: %s", got)
		}
		call(context.Background(), "D", filepath.Join(ws, "a.txt"))
		close(release["A"])
		if got := seen(); got != "A,C,B" && got != "A,C,D" {
			t.Fatalf("after A, inside: %s (want one more of B and D)", got)
		}
		next := "D"
		if strings.HasSuffix(seen(), "D") {
			next = "B"
		}
		close(release[strings.TrimPrefix(seen(), "A,C,")])
		if got := seen(); !strings.HasSuffix(got, ","+next) || strings.Count(got, ",") != 3 {
			t.Fatalf("inside: %s (want %s last)", got, next)
		}
		close(release[next])
		close(release["C"])
		wg.Wait()
		for _, id := range []string{"A", "B", "C", "D"} {
			if r := results[id]; r == nil || r.IsError {
				t.Errorf("%s: %+v", id, r)
			}
		}
		if r := results["E"]; r == nil || !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.Content[0].Text, "not run: cancelled while another call was writing a.txt") {
			t.Errorf("E: %+v", r)
		}
	})
}
