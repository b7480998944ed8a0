package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	"github.com/aibuddy/aibuddy/tool"
)

// sameCall is one call every entry point makes, with the record it must
// leave: the stage that failed ("" for none) and whether the Verification
// stage passed it (true), refused it (false) or had nothing to check (nil).
type sameCall struct {
	name, input string
	stage       tool.Stage
	verified    any
}

// sameCalls succeed, or fail at each stage a call from outside can reach
// with honest tools: Discovery (no such tool), Parameters (content
// missing), Authorization (a path denied to the file tools), Execution (a
// timeout). A failing Verification needs a tool whose result contradicts
// its own check, which no built-in tool gives; pipeline's
// TestEachStageFailsAtItsStageAndTheRecordSaysSo covers it through the
// same constructor.
var sameCalls = []sameCall{
	{"write_file", `{"path":"notes/a.txt","content":"hello\n"}`, "", true},
	{"edit_file", `{"path":"notes/a.txt","old_string":"hello","new_string":"hello, world"}`, "", true},
	{"execute", `{"command":"echo hi; exit 3"}`, "", true},
	{"read_file", `{"path":"notes/a.txt"}`, "", nil},
	{"no_such_tool", `{}`, tool.Discovery, nil},
	{"write_file", `{"path":"notes/b.txt"}`, tool.Parameters, nil},
	{"read_file", `{"path":".env"}`, tool.Authorization, nil},
	{"execute", `{"command":"sleep 5","timeout_ms":200}`, tool.Execution, nil},
}

// recordSummary is what must be the same in every entry point's record of
// one call: tool, stage, outcome, the Verification outcome, and the
// evidence that proves the effect.
type recordSummary struct {
	Tool         string         `json:"tool"`
	Stage        string         `json:"stage"`
	Outcome      store.Outcome  `json:"outcome"`
	Verified     any            `json:"verified"`
	Verification string         `json:"verification"`
	Evidence     map[string]any `json:"evidence"`
}

// proofKeys are the evidence entries compared across entry points (the
// rest, durations and paths of output files, differ by nature).
var proofKeys = []tool.EvidenceKey{tool.EvidencePath, tool.EvidenceBytes, tool.EvidenceSHA256, tool.EvidenceReplacements,
	tool.EvidenceExitCode, tool.EvidenceTimedOut, tool.EvidenceCancelled, tool.EvidenceOutputChars, tool.EvidenceOutputLines}

func summarize(t *testing.T, rec *store.Record) recordSummary {
	t.Helper()
	w, err := result.Decode(rec.Output)
	if err != nil {
		t.Fatal(err)
	}
	s := recordSummary{Tool: rec.Tool, Stage: rec.Stage, Outcome: rec.Outcome, Verified: w.Evidence[tool.EvidenceVerified],
		Evidence: map[string]any{}}
	s.Verification, _ = w.Evidence[tool.EvidenceVerification].(string)
	for _, k := range proofKeys {
		if v, ok := w.Evidence[k]; ok {
			s.Evidence[string(k)] = v
		}
	}
	return s
}

// sameWorkspace is a fresh workspace holding a credentials file.
func sameWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=abc123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ws
}

// records reads the given records, in order, from the data folder's file.
func records(t *testing.T, data string, ids func(st store.Store) []string) []recordSummary {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []recordSummary
	for _, id := range ids(st) {
		rec, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("record %s: %v", id, err)
		}
		out = append(out, summarize(t, rec))
	}
	return out
}

// checkRecords compares one entry point's records with the expected
// stages and verification outcomes, and returns them as JSON for the
// comparison across entry points.
func checkRecords(t *testing.T, entry string, got []recordSummary) string {
	t.Helper()
	if len(got) != len(sameCalls) {
		t.Fatalf("%s: %d records, want %d: %+v", entry, len(got), len(sameCalls), got)
	}
	for i, c := range sameCalls {
		g := got[i]
		wantOutcome := store.OutcomeOK
		if c.stage != "" {
			wantOutcome = store.OutcomeError
		}
		if g.Tool != c.name || g.Stage != string(c.stage) || g.Outcome != wantOutcome || g.Verified != c.verified {
			t.Errorf("%s: call %d (%s %s): record %+v, want stage %q, outcome %s, verified %v", entry, i, c.name, c.input, g, c.stage, wantOutcome, c.verified)
		}
		if c.verified != nil && !strings.HasPrefix(g.Verification, c.name+": ") {
			t.Errorf("%s: call %d (%s): the record does not say what was verified: %q", entry, i, c.name, g.Verification)
		}
	}
	b, _ := json.MarshalIndent(got, "", "  ")
	return string(b)
}

// sameRecordGolden is the record every entry point must leave for
// sameCalls (summaries as JSON): the stages, the evidence, the
// Verification outcomes. AIBUDDY_UPDATE_GOLDEN=1 rewrites it from aibuddy
// call.
const sameRecordGolden = "testdata/same-record.json"

// checkGolden compares an entry point's records with the golden file.
func checkGolden(t *testing.T, entry string, got []recordSummary) {
	t.Helper()
	js := checkRecords(t, entry, got) + "\n"
	if os.Getenv("AIBUDDY_UPDATE_GOLDEN") == "1" && entry == "aibuddy call" {
		if err := os.WriteFile(sameRecordGolden, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(sameRecordGolden)
	if err != nil {
		t.Fatal(err)
	}
	if js != string(want) {
		t.Errorf("%s records differ from %s (the record every entry point leaves):\n%s\nwant:\n%s", entry, sameRecordGolden, js, want)
	}
}

// The same calls through aibuddy mcp, made by the official SDK client
// over stdio, leave the record aibuddy run and aibuddy call leave.
func TestSameRecordMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	checkGolden(t, "aibuddy mcp", recordsViaMCP(t, ctx))
}

// The same calls made by a model through aibuddy run (a chat completions
// endpoint that makes one call per turn) leave the same record.
func TestSameRecordRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	checkGolden(t, "aibuddy run", recordsViaRun(t, ctx))
}

// The same calls, each its own aibuddy call, leave the same record.
func TestSameRecordCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	checkGolden(t, "aibuddy call", recordsViaCall(t, ctx))
}

// recordsViaMCP makes the calls as an MCP host does and reads their
// records by the toolCallId each result names.
func recordsViaMCP(t *testing.T, ctx context.Context) []recordSummary {
	ws, data := sameWorkspace(t), t.TempDir()
	cs := connect(t, ctx, ws, "--data-dir", data)
	var ids []string
	for _, c := range sameCalls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: json.RawMessage(c.input)})
		if err != nil {
			t.Fatalf("%s: protocol error: %v", c.name, err)
		}
		id, _ := res.Meta["aibuddy/toolCallId"].(string)
		if id == "" {
			t.Fatalf("%s: no toolCallId in _meta: %v", c.name, res.Meta)
		}
		// What the host is shown says the same as the record.
		if stage, _ := res.Meta["aibuddy/stage"].(string); stage != string(c.stage) || res.IsError != (c.stage != "") {
			t.Errorf("mcp %s: isError %v stage %q, want %q: %s", c.name, res.IsError, stage, c.stage, text(res))
		}
		ev, _ := res.Meta["aibuddy/evidence"].(map[string]any)
		if ev[string(tool.EvidenceVerified)] != c.verified {
			t.Errorf("mcp %s: _meta evidence verified = %v, want %v", c.name, ev[string(tool.EvidenceVerified)], c.verified)
		}
		ids = append(ids, id)
	}
	cs.Close()
	return records(t, data, func(store.Store) []string { return ids })
}

// recordsViaRun has a model make the calls, one per turn, through aibuddy
// run against a chat completions endpoint, and reads the run's task.
func recordsViaRun(t *testing.T, ctx context.Context) []recordSummary {
	ws, data := sameWorkspace(t), t.TempDir()
	var mu sync.Mutex
	turn := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		n := turn
		turn++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(c string) string {
			return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"local","choices":[` + c + `]}` + "\n\n"
		}
		if n >= len(sameCalls) {
			io.WriteString(w, chunk(`{"index":0,"delta":{"role":"assistant","content":"done"},"finish_reason":null}`)+
				chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`)+"data: [DONE]\n\n")
			return
		}
		c := sameCalls[n]
		args, _ := json.Marshal(c.input)
		io.WriteString(w, chunk(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}`, n, c.name, args))+
			chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`)+"data: [DONE]\n\n")
	}))
	defer ts.Close()
	cmd := exec.CommandContext(ctx, bin, "run", "--provider", "openai-chat", "--model", "local", "--base-url", ts.URL+"/v1",
		"--workspace", ws, "--data-dir", data, "make the calls")
	cmd.Env = append(cmd.Environ(), "OPENAI_API_KEY=test-key")
	cmd.Stdin = strings.NewReader("") // nobody at the terminal
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("aibuddy run: %v\n%s", err, out)
	}
	return records(t, data, func(st store.Store) []string {
		tasks, err := st.Tasks(ctx, 0)
		if err != nil || len(tasks) != 1 {
			t.Fatalf("tasks %v, %v\n%s", tasks, err, out)
		}
		recs, err := st.ListTask(ctx, tasks[0])
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.ToolCallID)
		}
		return ids
	})
}

// recordsViaCall makes each call with its own aibuddy call and reads its
// record by the toolCallId --json prints.
func recordsViaCall(t *testing.T, ctx context.Context) []recordSummary {
	ws, data := sameWorkspace(t), t.TempDir()
	var ids []string
	for _, c := range sameCalls {
		cmd := exec.CommandContext(ctx, bin, "call", "--workspace", ws, "--data-dir", data, "--json", c.name, c.input)
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 0, true: 1}[c.stage != ""]; code != want {
			t.Errorf("aibuddy call %s: exit %d, want %d", c.name, code, want)
		}
		var res struct {
			ToolCallID string         `json:"toolCallId"`
			Stage      string         `json:"stage"`
			Evidence   map[string]any `json:"evidence"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.ToolCallID == "" {
			t.Fatalf("aibuddy call %s --json: %v\n%s", c.name, err, out)
		}
		if res.Stage != string(c.stage) || res.Evidence[string(tool.EvidenceVerified)] != c.verified {
			t.Errorf("aibuddy call %s: printed stage %q verified %v, want %q %v", c.name, res.Stage, res.Evidence[string(tool.EvidenceVerified)], c.stage, c.verified)
		}
		ids = append(ids, res.ToolCallID)
	}
	return records(t, data, func(store.Store) []string { return ids })
}
