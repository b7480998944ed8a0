package coretools_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// verifyTools are the real built-in tools over a workspace folder, by name.
func verifyTools(t *testing.T, ws string) map[string]*tool.Tool {
	t.Helper()
	sb, err := localsandbox.New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	out := map[string]*tool.Tool{}
	for _, tl := range append(coretools.Filesystem(sb, nil), coretools.Execute(sb, nil)) {
		out[tl.Name()] = tl
	}
	return out
}

// callReal runs one call through the real built-in tool.
func callReal(t *testing.T, tl *tool.Tool, input string) (*tool.Call, *tool.Result) {
	t.Helper()
	call := &tool.Call{ID: "v_" + tl.Name(), Name: tl.Name(), Input: json.RawMessage(input)}
	return call, tl.Call(context.Background(), call)
}

// withEvidence is a copy of res with evidence k set to v (delete when v
// is nil): a tool whose evidence contradicts its claim.
func withEvidence(res *tool.Result, k tool.EvidenceKey, v any) *tool.Result {
	cp := *res
	cp.Evidence = maps.Clone(res.Evidence)
	if v == nil {
		delete(cp.Evidence, k)
	} else {
		cp.Evidence[k] = v
	}
	return &cp
}

// wantVerified: the tool's declared check holds, and the Verification
// stage says so in the evidence, keeping the result otherwise.
func wantVerified(t *testing.T, tl *tool.Tool, call *tool.Call, res *tool.Result) {
	t.Helper()
	got := pipeline.Verify(tl, call, res)
	if res.IsError {
		if got != res {
			t.Errorf("%s: an error result was changed: %s", call.Name, got.AllText())
		}
		return
	}
	if got.IsError || got.Evidence[tool.EvidenceVerified] != true || got.AllText() != res.AllText() {
		t.Errorf("%s %s: a true result was refused or changed: %v %s", call.Name, call.Input, got.Evidence, got.AllText())
	}
	if s, _ := got.Evidence[tool.EvidenceVerification].(string); !strings.HasPrefix(s, call.Name+": ") {
		t.Errorf("%s: verification evidence %q does not say what was checked", call.Name, s)
	}
}

func wantRefused(t *testing.T, tl *tool.Tool, call *tool.Call, res *tool.Result, why string) {
	t.Helper()
	got := pipeline.Verify(tl, call, res)
	problem, _ := got.Evidence[tool.EvidenceVerification].(string)
	if !got.IsError || got.Stage != tool.Verification || got.Evidence[tool.EvidenceVerified] != false ||
		!strings.Contains(problem, why) || !strings.Contains(got.AllText(), res.AllText()) {
		t.Errorf("%s: want a Verification error about %q, got %+v", call.Name, why, got)
	}
}

func TestVerifyWriteFile(t *testing.T) {
	tools := verifyTools(t, t.TempDir())
	w := tools["write_file"]
	call, res := callReal(t, w, `{"path":"notes/a.txt","content":"héllo\nworld\n"}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, w, call, res)
	// The bytes on disk differ from those sent: hash and size say so.
	lie := &tool.Call{Name: "write_file", Input: json.RawMessage(`{"path":"notes/a.txt","content":"hello\nworld\n"}`)}
	wantRefused(t, w, lie, res, "sha256")
	wantRefused(t, w, call, withEvidence(res, tool.EvidenceBytes, 3), "3 bytes, but 13 were sent")
	wantRefused(t, w, call, withEvidence(res, tool.EvidenceSHA256, nil), "without a read-back sha256")
}

func TestVerifyEditFile(t *testing.T) {
	ws := t.TempDir()
	tools := verifyTools(t, ws)
	e := tools["edit_file"]
	var src strings.Builder
	for i := range 30 {
		src.WriteString("line " + strings.Repeat("x", i) + "\n")
	}
	src.WriteString("func old() {\n\treturn 1\n}\n")
	if err := os.WriteFile(filepath.Join(ws, "m.go"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	call, res := callReal(t, e, `{"path":"m.go","old_string":"func old() {\n\treturn 1\n}","new_string":"func renamed() {\n\treturn 2\n}"}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, e, call, res)
	// The region read back lacks what the call asked to write.
	other := &tool.Call{Name: "edit_file", Input: json.RawMessage(`{"path":"m.go","old_string":"func old() {","new_string":"func other() {"}`)}
	wantRefused(t, e, other, res, `does not contain new_string "func other() {"`)
	wantRefused(t, e, call, withEvidence(res, tool.EvidenceReplacements, 0), "made no replacement")

	// A batch: each new_string lands in the region; one that is not there
	// at all (with the others missing too) is refused.
	call, res = callReal(t, e, `{"path":"m.go","edits":[{"old_string":"return 2","new_string":"return 3"},{"old_string":"renamed","new_string":"final"}]}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, e, call, res)
	ghost := &tool.Call{Name: "edit_file", Input: json.RawMessage(`{"path":"m.go","edits":[{"old_string":"a","new_string":"ghost one"},{"old_string":"b","new_string":"ghost two"}]}`)}
	wantRefused(t, e, ghost, res, "ghost one")

	// A deletion has nothing to look for, and the evidence says so.
	call, res = callReal(t, e, `{"path":"m.go","old_string":"line xx\n","new_string":""}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, e, call, res)
	if got := pipeline.Verify(e, call, res); !strings.Contains(got.Evidence[tool.EvidenceVerification].(string), "new_string not compared") {
		t.Errorf("a deletion's verification claims to have compared new_string: %v", got.Evidence)
	}
}

// An edit whose new text is longer than the region the sandbox reads back
// is verified by what is shown (the region runs off its end).
func TestVerifyEditFileLongRegion(t *testing.T) {
	ws := t.TempDir()
	e := verifyTools(t, ws)["edit_file"]
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte("head\nMARK\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 100 {
		b.WriteString("new line " + strings.Repeat("n", i%7) + "\n")
	}
	in, _ := json.Marshal(map[string]string{"path": "big.txt", "old_string": "MARK\n", "new_string": b.String()})
	call, res := callReal(t, e, string(in))
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, e, call, res)
}

func TestVerifyExecute(t *testing.T) {
	x := verifyTools(t, t.TempDir())["execute"]
	call, res := callReal(t, x, `{"command":"echo built; exit 3"}`)
	if res.IsError || res.Evidence[tool.EvidenceExitCode] != 3 {
		t.Fatalf("%v %s", res.Evidence, res.AllText())
	}
	wantVerified(t, x, call, res) // a non-zero exit code is a normal result
	wantRefused(t, x, call, withEvidence(res, tool.EvidenceExitCode, 0), "header says exit code 3, but its evidence says 0")
	wantRefused(t, x, call, withEvidence(res, tool.EvidenceExitCode, nil), "without an exit code")
	wantRefused(t, x, call, withEvidence(res, tool.EvidenceTimedOut, true), "timed out")
	wantRefused(t, x, call, withEvidence(res, tool.EvidenceCancelled, true), "cancelled")

	// A real timeout is an error result already: verification leaves it.
	call, res = callReal(t, x, `{"command":"sleep 5","timeout_ms":200}`)
	if !res.IsError || res.Evidence[tool.EvidenceTimedOut] != true {
		t.Fatalf("%v %s", res.Evidence, res.AllText())
	}
	wantVerified(t, x, call, res)
}

// Which built-in tools declare a check and an output file is the tools'
// own declaration, not a list elsewhere.
func TestBuiltinDeclarations(t *testing.T) {
	tools := verifyTools(t, t.TempDir())
	for name, tl := range tools {
		_, declares := tl.Verify(&tool.Call{Name: name, Input: json.RawMessage(`{}`)}, tool.Text(""))
		want := name == "write_file" || name == "edit_file" || name == "execute"
		if declares != want {
			t.Errorf("%s declares a verification: %v, want %v", name, declares, want)
		}
		if p := tl.OutputFile("task", "call"); p != "" {
			t.Errorf("%s without an output folder declares an output file %q", name, p)
		}
	}
	out := t.TempDir()
	sb, err := localsandbox.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	x := coretools.Execute(sb, &coretools.ExecuteOptions{OutputDir: out})
	if got, want := x.OutputFile("mcp-1", "c/1"), filepath.Join(out, "mcp-1", tool.SafeFileName("c/1")+".log"); got != want {
		t.Errorf("execute's output file = %q, want %q", got, want)
	}
	// The file execute really writes is the one it declares.
	ctx := tool.WithTaskID(context.Background(), "task-a")
	res := x.Call(ctx, &tool.Call{ID: "call_a", Name: "execute", Input: json.RawMessage(`{"command":"echo hi"}`)})
	if p, _ := res.Evidence[tool.EvidenceFullOutputPath].(string); p != x.OutputFile("task-a", "call_a") {
		t.Errorf("execute wrote %q, declares %q", p, x.OutputFile("task-a", "call_a"))
	}
}
