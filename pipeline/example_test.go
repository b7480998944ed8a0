package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/sandboxes"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// An embedder builds the pipeline once, as aibuddy mcp, run and call do,
// puts its own middleware at the one documented place (after Discovery,
// before Parameters), and hands each run's calls to the run's handler.
// Every call is recorded with its stage, evidence and Verification
// outcome.
func ExampleNew() {
	ws, _ := os.MkdirTemp("", "example-ws-")
	data, _ := os.MkdirTemp("", "example-data-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(data)

	reg := registry.New(coretools.Groups(nil, nil), coretools.Metas, nil)
	sb, err := sandboxes.New(sandbox.KindLocal, sandboxes.Options{Workspace: ws})
	if err != nil {
		panic(err)
	}
	defer sb.Close()
	set, _, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb})
	if err != nil {
		panic(err)
	}
	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()

	// The embedder's own stage: it logs every call that reaches a tool.
	logCalls := func(next pipeline.Handler) pipeline.Handler {
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			fmt.Println("calling", call.Name)
			return next(ctx, call)
		}
	}
	p := pipeline.New(&pipeline.Options{
		Store:      st,
		Policy:     approval.DefaultPolicy(), // .env and friends are denied to the file tools
		Middleware: []pipeline.Middleware{logCalls},
	})
	dr := discovery.NewCatalogWith(discovery.EntriesOf(set), nil).NewRun()
	h := p.Handler(pipeline.Run{TaskID: "task-1", Tools: pipeline.Fixed(set, dr)})

	for _, c := range []*tool.Call{
		{ID: "c1", Name: "write_file", Input: json.RawMessage(`{"path":"hello.txt","content":"hi\n"}`)},
		{ID: "c2", Name: "read_file", Input: json.RawMessage(`{"path":".env"}`)},
		{ID: "c3", Name: "nonexistent"},
	} {
		h(context.Background(), c)
		rec, _ := st.Get(context.Background(), c.ID)
		w, _ := result.Decode(rec.Output)
		fmt.Printf("%s: outcome %s, stage %q, verified %v\n", c.ID, rec.Outcome, rec.Stage, w.Evidence[tool.EvidenceVerified])
	}
	// Output:
	// calling write_file
	// c1: outcome ok, stage "", verified true
	// calling read_file
	// c2: outcome error, stage "authorization", verified <nil>
	// c3: outcome error, stage "discovery", verified <nil>
}

// The key of the per-path write lock: inside the workspace, the spellings
// of one file are one key.
func ExamplePathKey() {
	ws, _ := os.MkdirTemp("", "pathkey")
	defer os.RemoveAll(ws)
	ws, _ = filepath.EvalSymlinks(ws)
	for _, p := range []string{"nums.txt", "./nums.txt", "sub/../nums.txt", filepath.Join(ws, "nums.txt")} {
		fmt.Println(strings.TrimPrefix(pipeline.PathKey(ws, p), ws))
	}
	fmt.Println(pipeline.PathKey("", "./a/b/../c.txt"))
	// Output:
	// /nums.txt
	// /nums.txt
	// /nums.txt
	// /nums.txt
	// a/c.txt
}
