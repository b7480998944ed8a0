package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/pgstore"
	"github.com/aibuddy/aibuddy/store/pgstore/pgtest"
)

// Open a store on a server, record a call, keep its full output as a
// payload and read part of it back; it prints "ok 23 full output". (It
// has no Output line, so `go test` compiles it without a server;
// TestExampleFlow runs the same steps against the test server.)
func ExampleOpen() {
	url := os.Getenv(pgtest.EnvURL) // e.g. postgres://aibuddy@db.internal:5432/aibuddy
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, &pgstore.Options{Schema: "example_open"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	rec := &store.Record{ToolCallID: "call_1", TaskID: "task-1", Tool: "execute",
		Input: json.RawMessage(`{"command":"make"}`), Outcome: store.OutcomeOK}
	if err := s.Put(ctx, rec); err != nil {
		fmt.Println(err)
		return
	}
	if err := s.PutPayload(ctx, "task-1", "outputs/call_1.log", []byte("the full output of make")); err != nil {
		fmt.Println(err)
		return
	}
	part, size, err := s.ReadPayload(ctx, "task-1", "outputs/call_1.log", 4, 11)
	if err != nil {
		fmt.Println(err)
		return
	}
	got, _ := s.Get(ctx, "call_1")
	fmt.Println(got.Outcome, size, string(part))
}
