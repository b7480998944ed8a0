package result_test

import (
	"context"
	"testing"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/tool"
)

// The tool sees the task id its record is kept under (execute keeps full
// output per task with it).
func TestRecorderPassesTheTaskIDToTheTool(t *testing.T) {
	rec := result.New(openStore(t), nil)
	var seen string
	rec.Call(context.Background(), "task-7", &tool.Call{Name: "t"}, func(ctx context.Context, _ *tool.Call) *tool.Result {
		seen = tool.TaskID(ctx)
		return tool.Text("ok")
	})
	if seen != "task-7" {
		t.Errorf("the tool saw task id %q", seen)
	}
	if got := tool.TaskID(tool.WithTaskID(context.Background(), "")); got != "" {
		t.Errorf("an empty task id became %q", got)
	}
}
