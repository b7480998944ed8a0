package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// execRig runs the real execute tool on the local sandbox, keeping full
// output under the data folder, through the recorder.
func execRig(t *testing.T) (*rig, *tool.Tool, string) {
	t.Helper()
	r := newRig(t, compact.Options{})
	sb, err := localsandbox.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	outDir := filepath.Join(r.dir, "exec_output")
	r.view = compact.ViewToolCall(r.st, r.dir, &compact.ViewOptions{FullOutputDir: outDir})
	// The compactor knows the same folder, as the aibuddy program wires it.
	c, err := compact.New(r.st, &compact.Options{DataDir: r.dir, FullOutputDir: outDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r.c, r.rec = c, result.New(r.st, &result.Options{Now: fixedClock(), Compactor: c})
	return r, coretools.Execute(sb, &coretools.ExecuteOptions{OutputDir: outDir}), outDir
}

// BH-045: the exit code sits in a header no cut touches, and the tail keeps
// the decisive error line, through execute's cap and then precompaction.
func TestBH045ExitCodeHeaderAndTailSurviveCompaction(t *testing.T) {
	r, execute, _ := execRig(t)
	in := `{"command":"python3 -c \"import sys; sys.stdout.write('w'*60000); sys.stderr.write('\\nerror[E42]: type mismatch in build\\n'); sys.exit(101)\""}`
	call := &tool.Call{ID: "call_045", Name: "execute", Input: json.RawMessage(in)}
	res := r.rec.Call(context.Background(), "task", call, execute.Call)
	if !strings.Contains(res.AllText(), "exit code: 101") {
		t.Fatalf("execute: %s", res.AllText()[:300])
	}
	r.c.Wait()
	rec := r.get("call_045")
	if rec.Compaction != store.CompactionTrim {
		t.Fatalf("compaction %q (%+v)", rec.Compaction, must(r.c.Last("call_045")))
	}
	m := modelText(t, rec)
	for _, want := range []string{"exit code: 101", "error[E42]: type mismatch in build", "omitted", "cut by aibuddy precompaction (trim)", `view_tool_call {"id":"call_045"}`} {
		if !strings.Contains(m, want) {
			t.Errorf("compact form lacks %q:\n%s", want, m)
		}
	}
	if strings.Index(m, "exit code: 101") > strings.Index(m, "---") {
		t.Error("the exit code is not in the header")
	}
}

// BH-046: the decisive error in execute's omitted middle is recovered by
// view_tool_call with a pattern, from the full output kept under the call.
func TestBH046FatalInOmittedMiddleRecoveredByPattern(t *testing.T) {
	r, execute, _ := execRig(t)
	script := `for i in range(1, 1501): print(f'compiling unit {i} ... ok')
print('FATAL: symbol rotate_key undefined (unit 1500)')
for i in range(1501, 3001): print(f'compiling unit {i} ... ok')`
	input, _ := json.Marshal(map[string]string{"command": "python3 -c \"" + script + "\""})
	res := r.rec.Call(context.Background(), "task", &tool.Call{ID: "call_046", Name: "execute", Input: input}, execute.Call)
	out := res.AllText()
	if strings.Contains(out, "FATAL") || !strings.Contains(out, "[49,940 characters omitted: lines 582-2,446]") {
		t.Fatalf("execute projection: %s", out[:400])
	}
	r.c.Wait()
	text, ev := r.viewText(`{"toolCallId":"call_046","pattern":"FATAL"}`)
	if body(text) != "1501: FATAL: symbol rotate_key undefined (unit 1500)" || ev["matches"] != 1 {
		t.Fatalf("view: %s", text)
	}
	// A line range of the omitted region, from the same full output.
	text, _ = r.viewText(`{"id":"call_046","lines":"1500-1502"}`)
	if body(text) != "compiling unit 1500 ... ok\nFATAL: symbol rotate_key undefined (unit 1500)\ncompiling unit 1501 ... ok\n" {
		t.Fatalf("lines: %q", body(text))
	}
	// part=result is the result text exactly as execute returned it.
	if got := r.recoverAll("call_046", `,"part":"result"`); got != out {
		t.Fatal("part=result is not the result text")
	}
}

// BH-047 / BH-049: one 1,200,000-character block (an MCP tool, not the
// shell) goes through the same bounded projection: head and tail, true
// totals in the stub read first, the raw output kept under the call.
func TestBH049HugeSingleBlockBoundedWithTotals(t *testing.T) {
	r := newRig(t, compact.Options{})
	var b strings.Builder
	for i := 0; b.Len() < 1_200_000; i++ {
		fmt.Fprintf(&b, "row %07d ", i)
	}
	text := b.String()[:1_200_000]
	r.rec.Call(context.Background(), "task", &tool.Call{ID: "call_049", Name: "srv__dump", Input: json.RawMessage(`{"table":"rows"}`)}, returning(tool.Text(text)))
	r.c.Wait()
	rec := r.get("call_049")
	m := modelText(t, rec)
	if !strings.HasPrefix(m, `[result of srv__dump {"table":"rows"} trimmed by aibuddy precompaction`) ||
		!strings.Contains(m, "1,200,000 characters in 1 line") || !strings.Contains(m, "omitted") {
		t.Fatalf("stub: %s", m[:min(len(m), 600)])
	}
	if n := compact.Count(m); n > compact.DefaultTarget {
		t.Errorf("compact form is %d tokens", n)
	}
	if !strings.Contains(m, "row 0000000") || !strings.HasSuffix(m, text[len(text)-40:]) {
		t.Error("head or tail missing")
	}
	text2, _ := r.viewText(`{"id":"call_049","offset":600000,"limit":24}`)
	if body(text2) != text[600000:600024] {
		t.Errorf("slice: %q", body(text2))
	}
}

// BH-050: a compacted read_file result leaves a stub with the tool name and
// arguments, and view_tool_call returns the original bytes exactly.
func TestBH050StubNamesToolAndArgsAndRecoversExactly(t *testing.T) {
	r := newRig(t, compact.Options{})
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "service_%03d:\n  image: registry.example/app:%d\n  replicas: 2\n", i, i)
		if i == 150 {
			b.WriteString("  listen_port: 8443\n")
		}
	}
	yaml := b.String()
	r.rec.Call(context.Background(), "task", &tool.Call{ID: "call_03", Name: "read_file", Input: json.RawMessage(`{"path":"deploy.yaml"}`)}, returning(tool.Text(yaml)))
	r.c.Wait()
	rec := r.get("call_03")
	m := modelText(t, rec)
	if !strings.HasPrefix(m, `[result of read_file {"path":"deploy.yaml"}`) || !strings.Contains(m, "toolCallId=call_03") ||
		!strings.Contains(m, `view_tool_call {"id":"call_03"}`) || !strings.Contains(m, fmt.Sprintf("%s characters", commas(len(yaml)))) {
		t.Fatalf("stub: %s", m[:400])
	}
	if strings.Contains(m, "8443") {
		t.Fatal("test premise: the port should be in the cut part")
	}
	if got := r.recoverAll("call_03", ""); got != yaml {
		t.Fatal("not recovered exactly")
	}
	text, _ := r.viewText(`{"toolCallId":"call_03","pattern":"listen_port"}`)
	if body(text) != "454:   listen_port: 8443" {
		t.Fatalf("pattern: %s", text)
	}
	in, _ := r.viewText(`{"id":"call_03","part":"input"}`)
	if body(in) != `{"path":"deploy.yaml"}` {
		t.Fatalf("input: %s", in)
	}
}

func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// BH-047: a compacted execute result whose full output is kept in a file.
// The stub states the true totals of the command's output, and its
// recovery hint, followed literally, returns the omitted part of the
// compacted text (not other lines of the full output file).
func TestBH047CompactedExecuteStubTotalsAndHintFollowedLiterally(t *testing.T) {
	r, execute, _ := execRig(t)
	in := `{"command":"python3 -c \"[print('row', i) for i in range(400000)]\""}`
	res := r.rec.Call(context.Background(), "task", &tool.Call{ID: "call_047", Name: "execute", Input: json.RawMessage(in)}, execute.Call)
	out := res.AllText()
	if !strings.Contains(out, "4,288,890 characters in 400,000 lines produced; 30,000 characters shown") {
		t.Fatalf("execute header: %s", out[:400])
	}
	r.c.Wait()
	rec := r.get("call_047")
	if rec.Compaction != store.CompactionTrim {
		t.Fatalf("compaction %q", rec.Compaction)
	}
	m := modelText(t, rec)
	stub, _, _ := strings.Cut(m, "\n")
	for _, want := range []string{"4,288,890 characters in 400,000 lines", `view_tool_call {"id":"call_047","part":"result"} returns this result text`,
		`view_tool_call {"id":"call_047"} reads the command's full output from its file`} {
		if !strings.Contains(stub, want) {
			t.Errorf("the stub lacks %q: %s", want, stub)
		}
	}
	// Follow the marker's hint literally: <call> with "lines":"a-b".
	re := regexp.MustCompile(`; (view_tool_call (\{[^\n]*?\})) with "lines":"(\d+)-(\d+)" shows them\]`)
	g := re.FindStringSubmatch(m)
	if g == nil {
		t.Fatalf("no line hint in the compact form:\n%s", m)
	}
	var call map[string]any
	if err := json.Unmarshal([]byte(g[2]), &call); err != nil {
		t.Fatal(err)
	}
	call["lines"] = g[3] + "-" + g[4]
	first, _ := strconv.Atoi(g[3])
	last, _ := strconv.Atoi(g[4])
	lines := strings.SplitAfter(out, "\n")
	want := strings.Join(lines[first-1:last], "")
	var got strings.Builder
	for i := 0; ; i++ {
		b, _ := json.Marshal(call)
		text, ev := r.viewText(string(b))
		got.WriteString(body(text))
		if ev["next_offset"].(int) < 0 || i > 100 {
			break
		}
		call["offset"] = ev["next_offset"]
	}
	if got.String() != want {
		t.Fatalf("following the hint returned %d characters starting %q, want the %d omitted characters starting %q",
			got.Len(), got.String()[:min(got.Len(), 80)], len(want), want[:min(len(want), 80)])
	}
	// The full output the stub names is the command's whole output.
	text, _ := r.viewText(`{"id":"call_047","lines":"200001-200002"}`)
	if body(text) != "row 200000\nrow 200001\n" || !strings.Contains(text, "full output file") {
		t.Fatalf("full output: %s", text)
	}
	// A pattern within a line range numbers lines as the whole output does.
	text, _ = r.viewText(`{"id":"call_047","lines":"300000-300010","pattern":"row 30000[5-7]$"}`)
	if body(text) != "300006: row 300005\n300007: row 300006\n300008: row 300007" {
		t.Fatalf("pattern in lines: %s", text)
	}
}
