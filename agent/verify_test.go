package agent_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/tool"
)

// callReal runs one call through the real built-in tool and returns the
// call and its result.
func callReal(t *testing.T, set *capability.Set, name, input string) (*tool.Call, *tool.Result) {
	t.Helper()
	call := &tool.Call{ID: "v_" + name, Name: name, Input: json.RawMessage(input)}
	return call, set.Call(context.Background(), call)
}

// withEvidence is a copy of res with evidence k set to v (delete when v
// is nil): a tool whose evidence contradicts its claim.
func withEvidence(res *tool.Result, k string, v any) *tool.Result {
	cp := *res
	cp.Evidence = maps.Clone(res.Evidence)
	if v == nil {
		delete(cp.Evidence, k)
	} else {
		cp.Evidence[k] = v
	}
	return &cp
}

func wantVerified(t *testing.T, call *tool.Call, res *tool.Result) {
	t.Helper()
	if got := agent.VerifyEvidence(call, res); got != res {
		t.Errorf("%s %s: a true result was refused: %s", call.Name, call.Input, got.AllText())
	}
}

func wantRefused(t *testing.T, call *tool.Call, res *tool.Result, why string) {
	t.Helper()
	got := agent.VerifyEvidence(call, res)
	if !got.IsError || got.Stage != tool.Verification || !strings.Contains(got.Evidence["verification"].(string), why) ||
		!strings.Contains(got.AllText(), res.AllText()) {
		t.Errorf("%s: want a Verification error about %q, got %+v", call.Name, why, got)
	}
}

func TestVerifyWriteFile(t *testing.T) {
	ws := t.TempDir()
	set := newSet(t, ws, nil, nil)
	call, res := callReal(t, set, "write_file", `{"path":"notes/a.txt","content":"héllo\nworld\n"}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, call, res)
	// The bytes on disk differ from those sent: hash and size say so.
	lie := &tool.Call{Name: "write_file", Input: json.RawMessage(`{"path":"notes/a.txt","content":"hello\nworld\n"}`)}
	wantRefused(t, lie, res, "sha256")
	wantRefused(t, call, withEvidence(res, "bytes", 3), "3 bytes, but 13 were sent")
	wantRefused(t, call, withEvidence(res, "sha256", nil), "without a read-back sha256")
}

func TestVerifyEditFile(t *testing.T) {
	ws := t.TempDir()
	set := newSet(t, ws, nil, nil)
	var src strings.Builder
	for i := range 30 {
		src.WriteString("line " + strings.Repeat("x", i) + "\n")
	}
	src.WriteString("func old() {\n\treturn 1\n}\n")
	if err := os.WriteFile(filepath.Join(ws, "m.go"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	call, res := callReal(t, set, "edit_file", `{"path":"m.go","old_string":"func old() {\n\treturn 1\n}","new_string":"func renamed() {\n\treturn 2\n}"}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, call, res)
	// The region read back lacks what the call asked to write.
	other := &tool.Call{Name: "edit_file", Input: json.RawMessage(`{"path":"m.go","old_string":"func old() {","new_string":"func other() {"}`)}
	wantRefused(t, other, res, `does not contain new_string "func other() {"`)
	wantRefused(t, call, withEvidence(res, "replacements", 0), "made no replacement")

	// A batch: each new_string lands in the region; one that is not there
	// at all (with the others missing too) is refused.
	call, res = callReal(t, set, "edit_file", `{"path":"m.go","edits":[{"old_string":"return 2","new_string":"return 3"},{"old_string":"renamed","new_string":"final"}]}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, call, res)
	ghost := &tool.Call{Name: "edit_file", Input: json.RawMessage(`{"path":"m.go","edits":[{"old_string":"a","new_string":"ghost one"},{"old_string":"b","new_string":"ghost two"}]}`)}
	wantRefused(t, ghost, res, "ghost one")

	// A deletion has nothing to look for.
	call, res = callReal(t, set, "edit_file", `{"path":"m.go","old_string":"line xx\n","new_string":""}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, call, res)
}

// An edit whose new text is longer than the region the sandbox reads back
// is verified by what is shown (the region runs off its end).
func TestVerifyEditFileLongRegion(t *testing.T) {
	ws := t.TempDir()
	set := newSet(t, ws, nil, nil)
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte("head\nMARK\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 100 {
		b.WriteString("new line " + strings.Repeat("n", i%7) + "\n")
	}
	in, _ := json.Marshal(map[string]string{"path": "big.txt", "old_string": "MARK\n", "new_string": b.String()})
	call, res := callReal(t, set, "edit_file", string(in))
	if res.IsError {
		t.Fatal(res.AllText())
	}
	wantVerified(t, call, res)
}

func TestVerifyExecute(t *testing.T) {
	set := newSet(t, t.TempDir(), nil, nil)
	call, res := callReal(t, set, "execute", `{"command":"echo built; exit 3"}`)
	if res.IsError || res.Evidence["exit_code"] != 3 {
		t.Fatalf("%v %s", res.Evidence, res.AllText())
	}
	wantVerified(t, call, res) // a non-zero exit code is a normal result
	wantRefused(t, call, withEvidence(res, "exit_code", 0), "header says exit code 3, but its evidence says 0")
	wantRefused(t, call, withEvidence(res, "exit_code", nil), "without an exit code")
	wantRefused(t, call, withEvidence(res, "timed_out", true), "timed out")
	wantRefused(t, call, withEvidence(res, "cancelled", true), "cancelled")

	// A real timeout is an error result already: verification leaves it.
	call, res = callReal(t, set, "execute", `{"command":"sleep 5","timeout_ms":200}`)
	if !res.IsError || res.Evidence["timed_out"] != true {
		t.Fatalf("%v %s", res.Evidence, res.AllText())
	}
	wantVerified(t, call, res)
}
