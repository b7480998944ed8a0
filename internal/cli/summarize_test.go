package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// lockedBuffer is a bytes.Buffer for an output the run writes while a
// background compaction logs to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runWithCompaction is runCLI for a run whose background compactions log
// (to stderr) while the run prints its summary there.
func runWithCompaction(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb lockedBuffer
	code = cli.Main(context.Background(), args, cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// anthropicText is anthropicEndTurn answering text instead.
func anthropicText(text string) string {
	q, _ := json.Marshal(text)
	return strings.Replace(anthropicEndTurn, `"Nothing to do."`, string(q), 1)
}

// anthropicToolUse is a Messages API stream asking for one tool call.
func anthropicToolUse(id, name, input string) string {
	q, _ := json.Marshal(input)
	return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_0\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"" + id + "\",\"name\":\"" + name + "\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":" + string(q) + "}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
}

// replayAPI is a model API on an httptest server replaying one wire
// format: a request carrying the summary instruction gets summary; the
// agent's first step gets toolUse, every later one done. It keeps the
// summary requests' bodies.
type replayAPI struct {
	mu        sync.Mutex
	steps     int
	summaries []string
	// refuse, when set, answers the summary request with HTTP 400 and
	// this body.
	refuse string
}

func (a *replayAPI) serve(t *testing.T, path, toolUse, done, summary string) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != path {
			http.Error(w, `{"error":{"message":"unexpected path"}}`, http.StatusNotFound)
			return
		}
		a.mu.Lock()
		reply := done
		switch {
		case strings.Contains(string(b), "You condense the output of one tool call"):
			a.summaries = append(a.summaries, string(b))
			if a.refuse != "" {
				a.mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, a.refuse)
				return
			}
			reply = summary
		case a.steps == 0:
			reply = toolUse
			a.steps++
		default:
			a.steps++
		}
		a.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, reply)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// soleRecord is the one record of the data folder's only task whose tool
// is name.
func soleRecord(t *testing.T, data, name string) *store.Record {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	tasks, err := st.Tasks(ctx, 10)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	recs, err := st.ListTask(ctx, tasks[0])
	if err != nil {
		t.Fatal(err)
	}
	var found []*store.Record
	for _, r := range recs {
		if r.Tool == name {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s records in %d", len(found), name, len(recs))
	}
	return found[0]
}

// checkSummarized asserts that rec's model form is summary, headed by a
// stub saying "summarized by <by>" with the recovery pointer, smaller
// than the raw result, and that view_tool_call recovers the raw output.
func checkSummarized(t *testing.T, rec *store.Record, by, summary, ws, data string) {
	t.Helper()
	m, err := result.ModelOf(rec)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := result.Decode(rec.Output)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Compaction != store.CompactionSummarize || rec.Pointer != compact.OffloadPath(rec.TaskID, rec.ToolCallID) ||
		!strings.Contains(m.Text, "summarized by "+by+" (aibuddy precompaction, summarize)") ||
		!strings.HasSuffix(m.Text, "]\n"+summary) || !strings.Contains(m.Text, `view_tool_call {"id":"`+rec.ToolCallID+`"`) {
		t.Fatalf("compaction %q pointer %q, model form:\n%.800s", rec.Compaction, rec.Pointer, m.Text)
	}
	if len(m.Text) >= len(raw.Text()) || !strings.Contains(raw.Text(), "\n4000") {
		t.Errorf("model form %d bytes, raw output %d bytes", len(m.Text), len(raw.Text()))
	}
	code, out, errs := runCLI(t, cli.Options{}, "call", "view_tool_call", `{"id":"`+rec.ToolCallID+`","part":"result","pattern":"^3999$"}`,
		"--workspace", ws, "--data-dir", data)
	if code != 0 || !strings.Contains(out, "3999") {
		t.Errorf("view_tool_call: %d %s %s", code, out, errs)
	}
}

// TestRunSummarizesThroughItsProvider: `aibuddy run` with the summarize
// strategy for execute asks the run's own provider, over its wire format,
// for a summary of a large result: Anthropic with its default cheaper
// model (claude-haiku-4-5), a chat-completions endpoint with
// compaction.summaryModel. The request is bounded (max tokens, the input
// cut to compaction.summaryInputMaxChars, no tools); the record holds the
// summary with the pointer and says who wrote it.
func TestRunSummarizesThroughItsProvider(t *testing.T) {
	const summary = "The numbers 1 to 4000, one per line, in order; nothing else."
	for _, c := range []struct {
		name, provider, model, path, settings, by, wantModel string
		toolUse, done, answer                                string
		keyEnv                                               string
	}{
		{name: "anthropic", provider: "anthropic", model: "claude-sonnet-4-5", path: "/v1/messages",
			by: "claude-haiku-4-5 via anthropic", wantModel: `"model":"claude-haiku-4-5"`, keyEnv: "ANTHROPIC_API_KEY",
			toolUse: anthropicToolUse("toolu_1", "execute", `{"command":"seq 1 4000"}`), done: anthropicEndTurn, answer: anthropicText(summary)},
		{name: "openai-chat", provider: "openai-chat", model: "local", path: "/v1/chat/completions",
			settings: `"summaryModel": "local-small",`, by: "local-small via openai-chat", wantModel: `"model":"local-small"`, keyEnv: "OPENAI_API_KEY",
			toolUse: chatSSE(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"execute","arguments":"{\"command\":\"seq 1 4000\"}"}}]},"finish_reason":null}`,
				`{"index":0,"delta":{},"finish_reason":"tool_calls"}`),
			done:   chatSSE(`{"index":0,"delta":{"role":"assistant","content":"Done."},"finish_reason":null}`, `{"index":0,"delta":{},"finish_reason":"stop"}`),
			answer: chatSSE(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","content":%q},"finish_reason":null}`, summary), `{"index":0,"delta":{},"finish_reason":"stop"}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := &replayAPI{}
			ts := api.serve(t, c.path, c.toolUse, c.done, c.answer)
			t.Setenv(c.keyEnv, "test-key")
			t.Setenv("ANTHROPIC_BASE_URL", "")
			cfg := writeConfig(t, `{"compaction": {`+c.settings+` "summaryMaxTokens": 300, "summaryInputMaxChars": 6000,
				"strategies": {"execute": "summarize"}}}`)
			ws, data := t.TempDir(), t.TempDir()
			base := ts.URL
			if c.provider == "openai-chat" {
				base += "/v1"
			}
			code, out, errs := runWithCompaction(t, "run", "--provider", c.provider, "--model", c.model, "--base-url", base,
				"--config", cfg, "--workspace", ws, "--data-dir", data, "count to 4000")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			api.mu.Lock()
			sums := api.summaries
			api.mu.Unlock()
			if len(sums) != 1 {
				t.Fatalf("%d summary requests, want 1", len(sums))
			}
			compactBody := strings.ReplaceAll(sums[0], " ", "")
			if !strings.Contains(compactBody, c.wantModel) || strings.Contains(compactBody, `"tools"`) ||
				!strings.Contains(sums[0], "only its first 3,000 and last 3,000 are shown") || !strings.Contains(sums[0], `seq 1 4000`) {
				t.Errorf("summary request:\n%.1500s", sums[0])
			}
			if !strings.Contains(compactBody, `"max_tokens":300`) && !strings.Contains(compactBody, `"max_completion_tokens":300`) {
				t.Errorf("summary request without max tokens 300:\n%.600s", sums[0])
			}
			checkSummarized(t, soleRecord(t, data, "execute"), c.by, summary, ws, data)
		})
	}
}

// When `aibuddy run` cannot have a summary the result is trimmed (with
// the pointer) and the record says why: compaction.summaryModel "none"
// (no request), or the provider refusing the summary request.
func TestRunSummaryFallsBackToTrim(t *testing.T) {
	for _, c := range []struct {
		name, summaryModel, refuse, why string
		requests                        int
	}{
		{"none", "none", "", `trimmed: compaction.summaryModel is "none"`, 0},
		{"refused", "", `{"type":"error","error":{"type":"invalid_request_error","message":"model: claude-haiku-4-5 is not available to this key"}}`,
			"trimmed: the summary request failed: ", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := &replayAPI{refuse: c.refuse}
			ts := api.serve(t, "/v1/messages", anthropicToolUse("toolu_1", "execute", `{"command":"seq 1 4000"}`), anthropicEndTurn, anthropicText("never"))
			t.Setenv("ANTHROPIC_API_KEY", "test-key")
			t.Setenv("ANTHROPIC_BASE_URL", "")
			cfg := writeConfig(t, `{"compaction": {"summaryModel": "`+c.summaryModel+`", "strategies": {"execute": "summarize"}}}`)
			ws, data := t.TempDir(), t.TempDir()
			code, out, errs := runWithCompaction(t, "run", "--base-url", ts.URL, "--config", cfg, "--workspace", ws, "--data-dir", data, "count")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			if len(api.summaries) != c.requests {
				t.Errorf("%d summary requests, want %d", len(api.summaries), c.requests)
			}
			rec := soleRecord(t, data, "execute")
			m, _ := result.ModelOf(rec)
			if rec.Compaction != store.CompactionTrim || rec.Pointer == "" || !strings.Contains(m.Text, c.why) ||
				(c.refuse != "" && !strings.Contains(m.Text, "is not available to this key")) {
				t.Errorf("%s %q:\n%.700s", rec.Compaction, rec.Pointer, m.Text)
			}
		})
	}
}
