package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// rig is a real SQLite store, a data folder, a recorder and a compactor.
type rig struct {
	t    *testing.T
	dir  string
	st   *sqlitestore.Store
	c    *compact.Compactor
	rec  *result.Recorder
	view *tool.Tool
}

// fixedClock returns a clock that advances 100 ms per reading.
func fixedClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * 100 * time.Millisecond) }
}

func newRig(t *testing.T, o compact.Options) *rig {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlitestore.Open(filepath.Join(dir, "calls.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o.DataDir = dir
	c, err := compact.New(st, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rig{t: t, dir: dir, st: st, c: c,
		rec:  result.New(st, &result.Options{Now: fixedClock(), Compactor: c}),
		view: compact.ViewToolCall(st, dir, nil)}
}

// returning is a "next" handler that returns res for any call.
func returning(res *tool.Result) result.Next {
	return func(context.Context, *tool.Call) *tool.Result { return res }
}

// viewText runs view_tool_call with input and returns the text, failing on
// an error result.
func (r *rig) viewText(input string) (string, tool.Evidence) {
	r.t.Helper()
	res := r.view.Call(context.Background(), &tool.Call{ID: "v", Input: json.RawMessage(input)})
	if res.IsError {
		r.t.Fatalf("view_tool_call %s: %s", input, res.AllText())
	}
	return res.AllText(), res.Evidence
}

// body is the slice after the header's "---" line.
func body(text string) string {
	_, b, ok := strings.Cut(text, "\n---\n")
	if !ok {
		panic("no --- in view result: " + text)
	}
	return b
}

// recoverAll pages through view_tool_call until the end and returns the
// concatenated slices.
func (r *rig) recoverAll(id string, extra string) string {
	r.t.Helper()
	var out strings.Builder
	off := 0
	for i := 0; ; i++ {
		if i > 10000 {
			r.t.Fatal("too many slices")
		}
		text, ev := r.viewText(fmt.Sprintf(`{"id":%q,"offset":%d%s}`, id, off, extra))
		out.WriteString(body(text))
		next := ev["next_offset"].(int)
		if next < 0 {
			return out.String()
		}
		off = next
	}
}

func (r *rig) get(id string) *store.Record {
	r.t.Helper()
	rec, err := r.st.Get(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return rec
}

func modelText(t *testing.T, rec *store.Record) string {
	t.Helper()
	m, err := result.ModelOf(rec)
	if err != nil {
		t.Fatal(err)
	}
	return m.Text
}
