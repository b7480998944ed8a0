package sqlitestore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

func Example() {
	dir, err := os.MkdirTemp("", "sqlitestore-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	s, err := sqlitestore.Open(filepath.Join(dir, "data", "calls.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()

	start := time.Date(2026, 5, 9, 7, 0, 0, 0, time.UTC)
	r := &store.Record{
		ToolCallID: "toolu_01",
		TaskID:     "task-7",
		Tool:       "read_file",
		Input:      json.RawMessage(`{"path": "deploy.yaml"}`),
		Output:     json.RawMessage(`{"content":[{"type":"text","text":"listen_port: 8443\n..."}]}`),
		Model:      json.RawMessage(`"listen_port: 8443\n..."`),
		Outcome:    store.OutcomeOK,
		StartedAt:  start,
		EndedAt:    start.Add(40 * time.Millisecond),
	}
	if err := s.Put(ctx, r); err != nil { // durable when Put returns
		panic(err)
	}
	fmt.Println("seq:", r.Seq)

	// Background compaction swaps the model form only when smaller.
	ok, err := s.ReplaceModel(ctx, "toolu_01", json.RawMessage(`"[compacted]"`),
		store.CompactionTrim, "compacted_outputs/task-7/toolu_01.json")
	fmt.Println("replaced:", ok, err)

	got, err := s.Get(ctx, "toolu_01")
	if err != nil {
		panic(err)
	}
	fmt.Printf("input: %s\nmodel: %s\npointer: %s\n", got.Input, got.Model, got.Pointer)

	tasks, _ := s.Tasks(ctx, 10)
	fmt.Println("tasks:", tasks)
	// Output:
	// seq: 1
	// replaced: true <nil>
	// input: {"path": "deploy.yaml"}
	// model: "[compacted]"
	// pointer: compacted_outputs/task-7/toolu_01.json
	// tasks: [task-7]
}
