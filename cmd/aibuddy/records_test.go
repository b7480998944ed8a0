package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestMCPKilledMidCallShowsInterrupted kills aibuddy mcp with SIGKILL while
// an execute call runs; the next start (here `aibuddy calls`) finds the
// call's record still running with its process gone and shows it as
// interrupted, with when.
func TestMCPKilledMidCallShowsInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, data := t.TempDir(), t.TempDir()
	started := make(chan string, 1)
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--data-dir", data)
	cmd.Stderr = &testWriter{t: t, prefix: "aibuddy stderr: "}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-interrupt", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if f := strings.Fields(req.Params.Message); len(f) == 2 && f[0] == "started" {
				select {
				case started <- f[1]:
				default:
				}
			}
		}})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The command prints its pid and becomes sleep (exec), so the test can
	// end it: a SIGKILL to aibuddy leaves its process group running.
	p := &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": "echo started $$; exec sleep 30"}}
	p.SetProgressToken("kill-me")
	callDone := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, p)
		callDone <- err
	}()
	var pid int
	select {
	case s := <-started:
		if _, err := fmt.Sscan(s, &pid); err != nil {
			t.Fatalf("pid %q: %v", s, err)
		}
	case err := <-callDone:
		t.Fatalf("the call ended before it started running: %v", err)
	case <-ctx.Done():
		t.Fatal("no progress from the running command")
	}
	defer func() {
		if proc, err := os.FindProcess(pid); err == nil {
			proc.Kill()
		}
	}()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-callDone; err == nil {
		t.Fatal("the call returned a result although its server was killed")
	}

	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--data-dir", data)...).CombinedOutput()
		if err != nil {
			t.Fatalf("aibuddy %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var tasks []struct {
		Task        string `json:"task"`
		Interrupted int    `json:"interrupted"`
	}
	if err := json.Unmarshal([]byte(run("calls", "list", "--json")), &tasks); err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %+v, %v", tasks, err)
	}
	if tasks[0].Interrupted != 1 {
		t.Errorf("task %s lists %d interrupted calls, want 1", tasks[0].Task, tasks[0].Interrupted)
	}
	var calls []result.Client
	if err := json.Unmarshal([]byte(run("calls", "list", "--task", tasks[0].Task, "--json")), &calls); err != nil || len(calls) != 1 {
		t.Fatalf("calls %+v, %v", calls, err)
	}
	c := calls[0]
	if c.Status != result.StatusInterrupted || c.InterruptedAt.IsZero() || c.Tool != "execute" {
		t.Errorf("the killed call lists as %+v, want execute, interrupted with a time", c)
	}
	if table := run("calls", "list", "--task", tasks[0].Task); !strings.Contains(table, "interrupted (found ") {
		t.Errorf("calls list table does not show the interruption and when:\n%s", table)
	}
	show := run("calls", "show", c.ToolCallID)
	if !strings.Contains(show, "interrupted (found ") || !strings.Contains(show, "effect may be partial") {
		t.Errorf("calls show:\n%s", show)
	}
	// What the command printed before the end is in its full output file,
	// and view_tool_call reads it from there.
	view := run("call", "--workspace", ws, "view_tool_call", `{"id":"`+c.ToolCallID+`"}`)
	if !strings.Contains(view, fmt.Sprintf("started %d", pid)) || !strings.Contains(view, "partial full output file") {
		t.Errorf("view_tool_call of the interrupted execute does not return its partial output:\n%s", view)
	}
}

// TestCallDoesNotPrecompact: aibuddy call is one call in a task of its
// own, read by a person; its large result is recorded whole and not
// precompacted (no later model step reads it), and view_tool_call still
// returns any slice of it.
func TestCallDoesNotPrecompact(t *testing.T) {
	ctx := context.Background()
	ws, data := t.TempDir(), t.TempDir()
	out, err := exec.Command(bin, "call", "--workspace", ws, "--data-dir", data, "execute", `{"command":"seq 1 40000"}`).CombinedOutput()
	if err != nil {
		t.Fatalf("aibuddy call: %v\n%s", err, out)
	}
	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tasks, err := st.Tasks(ctx, 10)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	recs, err := st.ListTask(ctx, tasks[0])
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %v, %v", recs, err)
	}
	if recs[0].Compaction != store.CompactionNone || recs[0].Pointer != "" {
		t.Errorf("the one-shot call's record was compacted: %q %q", recs[0].Compaction, recs[0].Pointer)
	}
	view, err := exec.Command(bin, "call", "--workspace", ws, "--data-dir", data, "view_tool_call",
		`{"id":"`+recs[0].ToolCallID+`","lines":"20000-20002"}`).CombinedOutput()
	if err != nil || !strings.Contains(string(view), "20001") {
		t.Errorf("view_tool_call of the call: %v\n%s", err, view)
	}
}
