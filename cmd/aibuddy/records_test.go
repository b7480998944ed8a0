package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// TestMCPKillKeepsEveryAcknowledgedCall drives aibuddy mcp with four hosts'
// worth of concurrent calls (built-in ls and execute), kills it with
// SIGKILL while calls are in flight, and checks the records: every call
// whose result reached the host is in the file, finished, with the output
// the host received.
func TestMCPKillKeepsEveryAcknowledgedCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws, data := t.TempDir(), t.TempDir()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--data-dir", data)
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-kill", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	const killAfter = 120 // acknowledged calls
	var mu sync.Mutex
	acked := map[string]string{} // toolCallId -> the text the host received
	var kill sync.Once
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				p := &mcp.CallToolParams{Name: "ls", Arguments: map[string]any{"path": "."}}
				if i%2 == 1 {
					p = &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": fmt.Sprintf("echo w%d-%d", w, i)}}
				}
				res, err := cs.CallTool(ctx, p)
				if err != nil {
					return // the server is gone
				}
				if res.IsError {
					t.Errorf("%s: %s", p.Name, text(res))
					return
				}
				id, _ := res.Meta["aibuddy/toolCallId"].(string)
				mu.Lock()
				acked[id] = text(res)
				n := len(acked)
				mu.Unlock()
				if n >= killAfter {
					// The other workers' calls are in flight now.
					kill.Do(func() { cmd.Process.Kill() })
				}
			}
		})
	}
	wg.Wait()
	if len(acked) < killAfter {
		t.Fatalf("only %d calls acknowledged before the server ended", len(acked))
	}

	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, got := range acked {
		rec, err := st.Get(ctx, id)
		if err != nil {
			t.Errorf("acknowledged call %s lost after SIGKILL: %v", id, err)
			continue
		}
		if rec.Outcome != store.OutcomeOK {
			t.Errorf("acknowledged call %s recorded as %q, want ok", id, rec.Outcome)
		}
		w, err := result.Decode(rec.Output)
		if err != nil {
			t.Fatal(err)
		}
		if w.Text() != got {
			t.Errorf("call %s: recorded output %q, the host received %q", id, w.Text(), got)
		}
	}
	t.Logf("%d acknowledged calls, all recorded", len(acked))
}
