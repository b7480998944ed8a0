package compact_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// haiku stands in for a model route (compact.ModelSummarizer over the
// run's provider, or MCP sampling through the host).
type haiku struct{}

func (haiku) Summarize(_ context.Context, req *compact.SummaryRequest) (*compact.Summary, error) {
	return &compact.Summary{Text: "2,000 lines: line 1 to line 2000, nothing else.", Model: "claude-haiku-4-5", Via: "anthropic"}, nil
}

// A compactor with a summarizer: a large result of a tool whose strategy
// is Summarize is replaced, in the background, by a stub naming who
// summarized it and how to recover the raw output, then the summary.
func ExampleCompactor_SetSummarizer() {
	dir, _ := os.MkdirTemp("", "compact-example")
	defer os.RemoveAll(dir)
	st, _ := sqlitestore.Open(filepath.Join(dir, "records.db"), nil)
	defer st.Close()
	c, _ := compact.New(st, &compact.Options{DataDir: dir, Strategies: map[string]compact.Strategy{"execute": compact.Summarize}})
	defer c.Close()
	c.SetSummarizer(haiku{}) // once the model route is known

	rec := result.New(st, &result.Options{Compactor: c})
	var lines []string
	for i := 1; i <= 2000; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	rec.Call(context.Background(), "task1", &tool.Call{ID: "call_1", Name: "execute", Input: []byte(`{"command":"seq"}`)},
		func(context.Context, *tool.Call) *tool.Result { return tool.Text(strings.Join(lines, "\n")) })
	c.Wait()

	out, _ := c.Last("call_1")
	fmt.Println(out.Replaced, out.SummarizedBy, out.Pointer)
	r, _ := st.Get(context.Background(), "call_1")
	m, _ := result.ModelOf(r)
	_, summary, _ := strings.Cut(m.Text, "]\n")
	fmt.Println(summary)
	// Output:
	// true claude-haiku-4-5 via anthropic compacted_outputs/task1/call_1.json
	// 2,000 lines: line 1 to line 2000, nothing else.
}
