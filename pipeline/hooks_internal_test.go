package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/hooks"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// TestPostToolUseRunsUnderThePathLock: while a PostToolUse hook of a
// write_file runs, the write lock of the file it wrote is held, so no
// other call writes the file between the write and the hook's
// formatting. The hook blocks reading a FIFO: the test's open of the
// FIFO for writing returns once the hook is running (an event, no
// clock), the test looks at the held locks, then lets the hook end.
func TestPostToolUseRunsUnderThePathLock(t *testing.T) {
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "gate.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	set, _, err := capability.Resolve(registry.New(coretools.Groups(nil, nil), coretools.Metas, nil), capability.RunSpec{Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := hooks.ParseMatcher("write_file")
	p := New(&Options{Workspace: ws, Hooks: hooks.New([]hooks.Hook{{Event: hooks.PostToolUse, Matcher: m,
		Command: `read x < "$CLAUDE_PROJECT_DIR/gate.fifo"`}}, hooks.Options{Sandbox: sb})})
	h := p.Handler(Run{TaskID: "t", Tools: Fixed(set, nil)})
	done := make(chan *tool.Result, 1)
	go func() {
		done <- h(context.Background(), &tool.Call{ID: "w", Name: "write_file", Input: json.RawMessage(`{"path":"a.txt","content":"a"}`)})
	}()
	gate, err := os.OpenFile(filepath.Join(ws, "gate.fifo"), os.O_WRONLY, 0) // returns when the hook opened it
	if err != nil {
		t.Fatal(err)
	}
	p.locks.mu.Lock()
	_, held := p.locks.held[PathKey(ws, "a.txt")]
	p.locks.mu.Unlock()
	gate.WriteString("go\n")
	gate.Close()
	if res := <-done; res.IsError {
		t.Fatalf("write: %+v", res)
	}
	if !held {
		t.Error("the PostToolUse hook ran without the write lock of a.txt held")
	}
	p.locks.mu.Lock()
	defer p.locks.mu.Unlock()
	if len(p.locks.held) != 0 {
		t.Errorf("locks still held after the call: %v", p.locks.held)
	}
}
