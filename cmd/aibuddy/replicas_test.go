package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/pgstore"
	"github.com/aibuddy/aibuddy/store/pgstore/pgtest"
)

// replica is one `aibuddy mcp --http` process of a replica set: its own
// workspace and data folder, the shared PostgreSQL of AIBUDDY_STORE_URL.
type replica struct {
	cmd *exec.Cmd
	url string
	ws  string
}

// startReplica starts aibuddy mcp --http on a free port with the store at
// pgURL in schema, and waits for its address line.
func startReplica(t *testing.T, pgURL, schema string) *replica {
	t.Helper()
	dir := t.TempDir()
	ws, data := filepath.Join(dir, "ws"), filepath.Join(dir, "data")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, "aibuddy.json")
	if err := os.WriteFile(settings, []byte(fmt.Sprintf(`{"store": {"schema": %q}}`, schema)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--http", "127.0.0.1:0", "--workspace", ws, "--data-dir", data, "--config", settings)
	cmd.Env = append(os.Environ(), "AIBUDDY_TOKEN="+e2eToken, "AIBUDDY_STORE_URL="+pgURL)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
	})
	r := &replica{cmd: cmd, ws: ws}
	var seen []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if m := regexp.MustCompile(`http://[0-9.:]+/mcp`).FindString(line); m != "" && r.url == "" {
			r.url = m
		}
		if strings.Contains(line, "every request needs Authorization: Bearer") {
			break
		}
	}
	if r.url == "" {
		t.Fatalf("replica did not print its address; stderr:\n%s", strings.Join(seen, "\n"))
	}
	go io.Copy(io.Discard, stderr)
	return r
}

func (r *replica) connect(t *testing.T, ctx context.Context, name string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: bearer{e2eToken}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestReplicasRecoverEachOthersCalls: two aibuddy mcp --http processes
// share one PostgreSQL; a call made through one (an execute whose output
// the result cuts) is recovered in full with view_tool_call through the
// other, which has another workspace and data folder: the full output
// comes from the store's payloads, not a local file.
func TestReplicasRecoverEachOthersCalls(t *testing.T) {
	pgURL := pgtest.URL(t)
	schema := pgtest.Schema(t, pgURL, t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := startReplica(t, pgURL, schema), startReplica(t, pgURL, schema)
	ca, cb := a.connect(t, ctx, "host-a"), b.connect(t, ctx, "host-b")
	defer ca.Close()
	defer cb.Close()

	res := callTool(t, ctx, ca, "execute", map[string]any{"command": "seq 1 200000"})
	out := mustOK(t, "execute through a", res)
	id, _ := res.Meta["aibuddy/toolCallId"].(string)
	if id == "" || strings.Contains(out, "\n100000\n") {
		t.Fatalf("execute through a: id %q, output not cut: %d chars", id, len(out))
	}
	view := mustOK(t, "view_tool_call through b", callTool(t, ctx, cb, "view_tool_call",
		map[string]any{"id": id, "lines": "100000-100002"}))
	if !strings.Contains(view, "kept in the store") || !strings.Contains(view, "100000\n100001\n100002") {
		t.Errorf("view_tool_call through b of a's call:\n%s", view)
	}
	// And the other way round, with the record's own text.
	res = callTool(t, ctx, cb, "write_file", map[string]any{"path": "b.txt", "content": "written through b\n"})
	mustOK(t, "write_file through b", res)
	idB, _ := res.Meta["aibuddy/toolCallId"].(string)
	view = mustOK(t, "view_tool_call through a", callTool(t, ctx, ca, "view_tool_call", map[string]any{"id": idB, "part": "input"}))
	if !strings.Contains(view, "written through b") {
		t.Errorf("view_tool_call through a of b's call:\n%s", view)
	}
}

// TestReplicaKilledMidLoadLosesNoAcknowledgedCall: hosts call tools
// through two replicas at once; one replica is killed with SIGKILL while
// calls are in flight. Every call whose result reached its host is in the
// store, finished, with the text the host received; once both replicas
// are gone, no record is left running (the killed replica's unfinished
// calls are marked interrupted).
func TestReplicaKilledMidLoadLosesNoAcknowledgedCall(t *testing.T) {
	pgURL := pgtest.URL(t)
	schema := pgtest.Schema(t, pgURL, t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, b := startReplica(t, pgURL, schema), startReplica(t, pgURL, schema)

	const killAfter = 80 // acknowledged calls through a
	const afterKill = 40 // calls through b after the kill
	var mu sync.Mutex
	acked := map[string]string{} // toolCallId -> the text the host received
	var ackedA, ackedB int
	killed := make(chan struct{})
	var kill sync.Once
	var wg sync.WaitGroup
	for w := range 6 {
		r, name := a, "a"
		if w%2 == 1 {
			r, name = b, "b"
		}
		cs := r.connect(t, ctx, fmt.Sprintf("host-%s-%d", name, w))
		defer cs.Close()
		wg.Go(func() {
			for i := 0; ; i++ {
				p := &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": fmt.Sprintf("echo %s-%d-%d", name, w, i)}}
				if i%3 == 2 {
					p = &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": fmt.Sprintf("f%d-%d.txt", w, i), "content": "x\n"}}
				}
				res, err := cs.CallTool(ctx, p)
				if err != nil {
					return // its replica is gone
				}
				if res.IsError {
					t.Errorf("%s through %s: %s", p.Name, name, text(res))
					return
				}
				id, _ := res.Meta["aibuddy/toolCallId"].(string)
				mu.Lock()
				acked[id] = text(res)
				if name == "a" {
					ackedA++
				} else {
					ackedB++
				}
				na, nb := ackedA, ackedB
				mu.Unlock()
				if name == "a" && na >= killAfter {
					kill.Do(func() { a.cmd.Process.Kill(); close(killed) })
				}
				select {
				case <-killed:
					if name == "b" && nb >= killAfter/2+afterKill {
						return
					}
				default:
				}
			}
		})
	}
	wg.Wait()
	a.cmd.Wait()
	b.cmd.Process.Signal(os.Interrupt)
	b.cmd.Wait()
	if ackedA < killAfter || ackedB < afterKill {
		t.Fatalf("only %d calls acknowledged through a and %d through b", ackedA, ackedB)
	}

	st, err := pgstore.Open(ctx, pgURL, &pgstore.Options{Schema: schema, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, got := range acked {
		rec, err := st.Get(ctx, id)
		if err != nil {
			t.Errorf("acknowledged call %s lost: %v", id, err)
			continue
		}
		if rec.Outcome != store.OutcomeOK {
			t.Errorf("acknowledged call %s recorded as %q, want ok", id, rec.Outcome)
			continue
		}
		w, err := result.Decode(rec.Output)
		if err != nil {
			t.Fatalf("record %s: %v", id, err)
		}
		if w.Text() != got {
			t.Errorf("call %s: recorded output %q, the host received %q", id, w.Text(), got)
		}
	}
	tasks, err := st.Tasks(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	interrupted := 0
	for _, task := range tasks {
		recs, err := st.ListTask(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			switch r.Outcome {
			case store.OutcomeRunning:
				t.Errorf("record %s still running after both replicas ended", r.ToolCallID)
			case store.OutcomeInterrupted:
				interrupted++
			}
		}
	}
	t.Logf("%d calls acknowledged (%d through the killed replica, %d through the other), all recorded; %d in flight at the kill marked interrupted",
		len(acked), ackedA, ackedB, interrupted)
}
