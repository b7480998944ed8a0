package capability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/sandboxes"
	"github.com/aibuddy/aibuddy/tool"
)

// The library path of README.md: the built-in registry, a local sandbox, the
// effective tool set of one run, and one call.
func ExampleResolve() {
	ws, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(ws)
	_ = os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module demo\n"), 0o644)

	reg := registry.New(append(coretools.Groups(nil, nil), approval.Group()),
		append(coretools.Metas, approval.Meta), nil)
	if err := reg.AssertConsistent(); err != nil {
		panic(err)
	}
	sb, err := sandboxes.New(sandbox.KindLocal, sandboxes.Options{Workspace: ws})
	if err != nil {
		panic(err)
	}
	defer sb.Close()
	set, excluded, err := capability.Resolve(reg, capability.RunSpec{Sandbox: sb})
	if err != nil {
		panic(err)
	}
	fmt.Println(set.Names())
	for _, e := range excluded {
		fmt.Println("excluded:", e)
	}
	res := set.Call(context.Background(), &tool.Call{ID: "toolu_01", Name: "read_file", Input: json.RawMessage(`{"path":"go.mod"}`)})
	fmt.Println(res.IsError, res.Evidence["sha256"] != nil)
	// Output:
	// [ls read_file write_file edit_file glob grep execute]
	// excluded: job_output: needs the "jobs" service, which this host does not inject
	// excluded: job_kill: needs the "jobs" service, which this host does not inject
	// excluded: jobs: needs the "jobs" service, which this host does not inject
	// excluded: ask_user_question: needs the "user_input" service, which this host does not inject
	// false true
}
