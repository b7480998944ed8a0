package coretools

// Tool-level tests against the real local adapter on t.TempDir(), with real
// files, asserting bytes on disk. They follow the field cases in
// shared/cases (1-edit.md, 2-read.md, 3-search.md, 8-escape.md); $WS is the
// workspace and $OUTSIDE a second temporary directory.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// fsWorld is a workspace, an outside directory and the tools over a local
// sandbox rooted at the workspace.
type fsWorld struct {
	ws, outside string
	sb          *localsandbox.Sandbox
	tools       map[string]*tool.Tool
}

// newFSWorld opens a local sandbox on a fresh workspace and builds the
// filesystem tools over it. Every operation the tools use is the adapter's
// own: one it lacks fails the test (sandbox.ErrUnsupported surfaces as an
// Execution error), it is never skipped.
func newFSWorld(t *testing.T, opts *FSOptions) *fsWorld {
	t.Helper()
	w := &fsWorld{ws: t.TempDir(), outside: t.TempDir()}
	sb, err := localsandbox.New(w.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	w.sb = sb
	w.tools = fsToolsByName(t, sb, opts)
	return w
}

// fsToolsByName builds the group over sb and indexes it by name.
func fsToolsByName(t *testing.T, sb sandbox.Sandbox, opts *FSOptions) map[string]*tool.Tool {
	t.Helper()
	m := map[string]*tool.Tool{}
	for _, tl := range Filesystem(sb, opts) {
		m[tl.Name()] = tl
	}
	return m
}

// fsCall runs tools[name] with args marshalled as the JSON input.
func fsCall(t *testing.T, tools map[string]*tool.Tool, name string, args any) *tool.Result {
	t.Helper()
	return fsCallCtx(t, context.Background(), tools, name, args)
}

// fsCallCtx is fsCall under ctx.
func fsCallCtx(t *testing.T, ctx context.Context, tools map[string]*tool.Tool, name string, args any) *tool.Result {
	t.Helper()
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Call(ctx, &tool.Call{ID: "t1", Name: name, Input: raw})
}

// fsMustOK fails the test when r is an error result.
func fsMustOK(t *testing.T, r *tool.Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result (stage %s): %s", r.Stage, r.AllText())
	}
	return r.AllText()
}

// fsMustFail fails the test unless r is an error result at stage.
func fsMustFail(t *testing.T, r *tool.Result, stage tool.Stage) string {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want an error result at stage %s, got success: %s", stage, r.AllText())
	}
	if r.Stage != stage {
		t.Fatalf("stage = %s, want %s; text: %s", r.Stage, stage, r.AllText())
	}
	return r.AllText()
}

func (w *fsWorld) file(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(w.ws, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *fsWorld) bytes(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.ws, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (w *fsWorld) call(t *testing.T, name string, args map[string]any) *tool.Result {
	t.Helper()
	return fsCall(t, w.tools, name, args)
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// --- kind 1: edit ------------------------------------------------------------

func TestLocalEditCRLFWithLFOldString(t *testing.T) { // BH-001
	w := newFSWorld(t, nil)
	for _, old := range []string{"red\ngreen", "red\r\ngreen"} {
		w.file(t, "notes.txt", "red\r\ngreen\r\nblue\r\n")
		got := fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "notes.txt"}))
		if got != "     1→red\n     2→green\n     3→blue" {
			t.Errorf("read_file = %q", got)
		}
		r := w.call(t, "edit_file", map[string]any{"path": "notes.txt", "old_string": old, "new_string": "RED\nGREEN"})
		fsMustOK(t, r)
		if b := w.bytes(t, "notes.txt"); b != "RED\r\nGREEN\r\nblue\r\n" {
			t.Errorf("old %q: bytes = %q", old, b)
		}
		if r.Evidence["replacements"] != 1 || r.Evidence["sha256"] != sha("RED\r\nGREEN\r\nblue\r\n") {
			t.Errorf("evidence = %v", r.Evidence)
		}
	}
	// Mixed endings: each replaced line keeps its own ending.
	w.file(t, "mixed.txt", "a\r\nb\nc\r\n")
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "mixed.txt", "old_string": "b\nc", "new_string": "B\nC"}))
	if b := w.bytes(t, "mixed.txt"); b != "a\r\nB\nC\r\n" {
		t.Errorf("mixed: bytes = %q", b)
	}
}

func TestLocalEditTabIndentedFile(t *testing.T) { // BH-002
	w := newFSWorld(t, nil)
	const src = "func f(x int) int {\n\tif x > 0 {\n\t\treturn x\n\t}\n\treturn 0\n}\n"
	w.file(t, "calc.go", src)
	got := fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "calc.go"}))
	if !strings.Contains(got, "     2→\tif x > 0 {\n     3→\t\treturn x\n") {
		t.Errorf("read_file does not keep raw tabs after the arrow: %q", got)
	}
	// Spaces for tabs: refused, nothing written, the error names the cause.
	msg := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "calc.go",
		"old_string": "    if x > 0 {\n        return x", "new_string": "    if x > 1 {\n        return x"}), tool.Parameters)
	if w.bytes(t, "calc.go") != src {
		t.Fatal("a failed edit changed the file")
	}
	if !strings.Contains(msg, "nothing was written") || !strings.Contains(msg, "TAB") {
		t.Errorf("the error does not point at the tab indentation: %q", msg)
	}
	// The JSON \t escapes survive decoding and match.
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "calc.go",
		"old_string": "\tif x > 0 {\n\t\treturn x", "new_string": "\tif x > 1 {\n\t\treturn x"}))
	if b := w.bytes(t, "calc.go"); b != strings.Replace(src, "x > 0", "x > 1", 1) {
		t.Errorf("bytes = %q", b)
	}
}

func TestLocalEditKeepsTypographicQuotes(t *testing.T) { // BH-003
	w := newFSWorld(t, nil)
	w.file(t, "story.md", "He said, \u201Cwait.\u201D\nShe didn\u2019t.\n")
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "story.md", "old_string": "wait.", "new_string": "stop."}))
	if b := w.bytes(t, "story.md"); b != "He said, \u201Cstop.\u201D\nShe didn\u2019t.\n" {
		t.Errorf("step 2: %q", b)
	}
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "story.md", "old_string": "didn\u2019t", "new_string": "did not"}))
	if b := w.bytes(t, "story.md"); b != "He said, \u201Cstop.\u201D\nShe did not.\n" {
		t.Errorf("step 3: %q", b)
	}
	w.file(t, "run.sh", "x = y\n")
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "run.sh", "old_string": "x = y", "new_string": "x = \"ok\""}))
	if b := w.bytes(t, "run.sh"); b != "x = \"ok\"\n" {
		t.Errorf("step 4: %q", b)
	}
}

func TestLocalEditReplacementTokensLiteral(t *testing.T) { // BH-005
	w := newFSWorld(t, nil)
	const repl = "$& costs $1 or $$ or ${1}"
	w.file(t, "tag.js", "const tag = \"PRICE\";\nconst other = \"PRICE\";\n")
	r := w.call(t, "edit_file", map[string]any{"path": "tag.js", "old_string": "PRICE", "new_string": repl, "replace_all": true})
	fsMustOK(t, r)
	if b := w.bytes(t, "tag.js"); b != "const tag = \""+repl+"\";\nconst other = \""+repl+"\";\n" {
		t.Errorf("replace_all: %q", b)
	}
	if r.Evidence["replacements"] != 2 {
		t.Errorf("replacements = %v", r.Evidence["replacements"])
	}
	w.file(t, "one.js", "const tag = \"PRICE\";\n")
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "one.js", "old_string": "PRICE", "new_string": repl}))
	if b := w.bytes(t, "one.js"); b != "const tag = \""+repl+"\";\n" {
		t.Errorf("single: %q", b)
	}
}

func TestLocalFailedEditWritesNothing(t *testing.T) { // BH-006
	w := newFSWorld(t, nil)
	const src = "source 'repo'\ngem 'alpha'\ngem 'beta'\n"
	w.file(t, "Gemfile", src)
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(filepath.Join(w.ws, "Gemfile"), past, past); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		fi, err := os.Stat(filepath.Join(w.ws, "Gemfile"))
		if err != nil {
			t.Fatal(err)
		}
		if b := w.bytes(t, "Gemfile"); b != src || !fi.ModTime().Equal(past) {
			t.Errorf("%s: bytes %q, mtime %v (want %v)", step, b, fi.ModTime(), past)
		}
		ents, _ := os.ReadDir(w.ws)
		if len(ents) != 1 {
			t.Errorf("%s: directory holds %d entries (a temporary file left behind?)", step, len(ents))
		}
	}
	msg := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "Gemfile", "old_string": "gem 'gamma'", "new_string": "gem 'delta'"}), tool.Parameters)
	check("no match")
	if strings.Contains(msg, "revert") || !strings.Contains(msg, "nothing was written") {
		t.Errorf("message = %q", msg)
	}
	msg = fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "Gemfile", "edits": []map[string]any{
		{"old_string": "gem 'alpha'", "new_string": "gem 'ALPHA'"},
		{"old_string": "gem 'gamma'", "new_string": "gem 'delta'"},
	}}), tool.Parameters)
	check("batch")
	if !strings.HasPrefix(strings.SplitN(msg, ": ", 2)[1], "edit 2: ") {
		t.Errorf("batch error does not name the failing edit: %q", msg)
	}
}

func TestLocalEditKeepsBOMAndReadHidesIt(t *testing.T) { // BH-007
	w := newFSWorld(t, nil)
	w.file(t, "a.md", "# t\r\nold\r\n")
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "a.md", "old_string": "old", "new_string": "new"}))
	if b := w.bytes(t, "a.md"); b != "# t\r\nnew\r\n" {
		t.Errorf("a.md = %q", b)
	}
	w.file(t, "s.ps1", "\xEF\xBB\xBFWrite-Host 'hi'\r\n")
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "s.ps1", "old_string": "Write-Host 'hi'", "new_string": "Write-Host 'bye'"}))
	if b := w.bytes(t, "s.ps1"); b != "\xEF\xBB\xBFWrite-Host 'bye'\r\n" {
		t.Errorf("s.ps1 = % x", b)
	}
	got := fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "s.ps1"}))
	if strings.ContainsRune(got, '\uFEFF') || !strings.Contains(got, "     1→Write-Host 'bye'") || !strings.Contains(got, "byte order mark") {
		t.Errorf("read_file = %q", got)
	}
}

func TestLocalEditSubstringEndingMidLine(t *testing.T) { // BH-009
	w := newFSWorld(t, nil)
	w.file(t, "draw.cpp", "  x = 1;\n  }\n\n  // Build trees with wind and light\n")
	r := w.call(t, "edit_file", map[string]any{"path": "draw.cpp", "old_string": "  }\n\n  // Build trees", "new_string": "  }\n\n  // Grow trees"})
	got := fsMustOK(t, r)
	if b := w.bytes(t, "draw.cpp"); b != "  x = 1;\n  }\n\n  // Grow trees with wind and light\n" {
		t.Errorf("bytes = %q", b)
	}
	// The result shows the region as now on disk, with line numbers.
	if !strings.Contains(got, "     4→  // Grow trees with wind and light") {
		t.Errorf("result does not show the edited region: %q", got)
	}
}

func TestLocalEditEmptyOldAndNoOp(t *testing.T) { // BH-010
	w := newFSWorld(t, nil)
	w.file(t, "w.txt", "abcd\n")
	for _, all := range []bool{false, true} {
		msg := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "w.txt", "old_string": "", "new_string": "X", "replace_all": all}), tool.Parameters)
		if !strings.Contains(msg, "old_string must not be empty; use write_file to create a file") {
			t.Errorf("replace_all=%v: %q", all, msg)
		}
	}
	noop := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "w.txt", "old_string": "ab", "new_string": "ab"}), tool.Parameters)
	notFound := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "w.txt", "old_string": "zz", "new_string": "ab"}), tool.Parameters)
	if noop == notFound || strings.Contains(noop, "not found") {
		t.Errorf("no-op error %q reads like not-found %q", noop, notFound)
	}
	if b := w.bytes(t, "w.txt"); b != "abcd\n" {
		t.Errorf("bytes = %q", b)
	}
}

// Issue 10, item 4: an ambiguous edit names the line of every match (a
// bounded list for many), so the model can add context from those lines.
func TestLocalEditAmbiguousNamesEveryMatchLine(t *testing.T) {
	w := newFSWorld(t, nil)
	lines := make([]string, 120)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i+1)
	}
	lines[11], lines[39], lines[96] = "x := 1", "x := 1", "x := 1"
	w.file(t, "a.go", strings.Join(lines, "\n")+"\n")
	msg := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "a.go", "old_string": "x := 1", "new_string": "x := 2"}), tool.Parameters)
	if !strings.Contains(msg, "old_string matches 3 places in a.go: lines 12, 40 and 97; nothing was written") || !strings.Contains(msg, "replace_all") {
		t.Errorf("msg = %q", msg)
	}

	// Two on one line, in a batch.
	w.file(t, "b.txt", "a\nx x\nb\nx\n")
	msg = fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "b.txt", "edits": []map[string]any{
		{"old_string": "a", "new_string": "A"}, {"old_string": "x", "new_string": "y"}}}), tool.Parameters)
	if !strings.Contains(msg, "edit 2: old_string matches 3 places in b.txt: lines 2 (twice) and 4; nothing was written") {
		t.Errorf("msg = %q", msg)
	}

	// Many: the first 20 lines by number, the rest counted; the message
	// stays short.
	w.file(t, "c.txt", strings.Repeat("TODO\n", 5000))
	msg = fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "c.txt", "old_string": "TODO", "new_string": "DONE"}), tool.Parameters)
	if !strings.Contains(msg, "old_string matches 5,000 places in c.txt: lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 and 4,980 more matches; nothing was written") || len(msg) > 600 {
		t.Errorf("msg (%d bytes) = %q", len(msg), msg)
	}
	if w.bytes(t, "c.txt") != strings.Repeat("TODO\n", 5000) || w.bytes(t, "b.txt") != "a\nx x\nb\nx\n" {
		t.Error("a refused edit changed a file")
	}
}

func TestLocalEditRefusesFileChangedSinceRead(t *testing.T) {
	w := newFSWorld(t, nil)
	w.file(t, "a.txt", "one\ntwo\n")
	fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "a.txt"}))
	w.file(t, "a.txt", "one\ntwo\nthree\n") // changed behind the run's back (e.g. by execute)
	msg := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "a.txt", "old_string": "two", "new_string": "TWO"}), tool.Verification)
	if !strings.Contains(msg, "read the file again, then edit") {
		t.Errorf("msg = %q", msg)
	}
	if b := w.bytes(t, "a.txt"); b != "one\ntwo\nthree\n" {
		t.Errorf("stale edit wrote: %q", b)
	}
	// After a fresh read the same edit goes through; the run's own edits
	// and writes keep the tracker current, so chained edits need no re-read.
	fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "a.txt"}))
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "a.txt", "old_string": "two", "new_string": "TWO"}))
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "a.txt", "old_string": "three", "new_string": "THREE"}))
	fsMustOK(t, w.call(t, "write_file", map[string]any{"path": "a.txt", "content": "fresh\n"}))
	fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "a.txt", "old_string": "fresh", "new_string": "FRESH"}))
	if b := w.bytes(t, "a.txt"); b != "FRESH\n" {
		t.Errorf("bytes = %q", b)
	}
	// A file never read in this run may be edited (exact matching protects it).
	w.file(t, "b.txt", "alpha\n")
	r := w.call(t, "edit_file", map[string]any{"path": "b.txt", "old_string": "alpha", "new_string": "beta"})
	fsMustOK(t, r)
	if r.Evidence["stale_checked"] != false || w.bytes(t, "b.txt") != "beta\n" {
		t.Errorf("never-read edit: %v, %q", r.Evidence, w.bytes(t, "b.txt"))
	}
}

// --- write_file --------------------------------------------------------------

func TestLocalWriteFileEvidenceReadBack(t *testing.T) {
	w := newFSWorld(t, nil)
	const content = "line one\r\n\tline two \u201Cq\u201D\n"
	r := w.call(t, "write_file", map[string]any{"path": "dir/sub/new.txt", "content": content})
	got := fsMustOK(t, r)
	if b := w.bytes(t, "dir/sub/new.txt"); b != content {
		t.Errorf("bytes on disk = %q", b)
	}
	want := fmt.Sprintf("wrote %d bytes to dir/sub/new.txt (created); sha256 %s read back from disk", len(content), sha(content))
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if r.Evidence["bytes"] != int64(len(content)) || r.Evidence["sha256"] != sha(content) || r.Evidence["created"] != true {
		t.Errorf("evidence = %v", r.Evidence)
	}
	r = w.call(t, "write_file", map[string]any{"path": "dir/sub/new.txt", "content": "x"})
	if fsMustOK(t, r); r.Evidence["created"] != false || w.bytes(t, "dir/sub/new.txt") != "x" {
		t.Errorf("replace: %v", r.Evidence)
	}
}

// --- kind 2: read_file ---------------------------------------------------------

func TestLocalReadBinaryNotice(t *testing.T) { // BH-011
	w := newFSWorld(t, nil)
	b := []byte{0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00}
	for i := range 65536 {
		b = append(b, byte(i))
	}
	w.file(t, "bin/tool", string(b))
	r := w.call(t, "read_file", map[string]any{"path": "bin/tool"})
	got := fsMustOK(t, r)
	if !strings.Contains(got, "binary file") || !strings.Contains(got, "ELF") || !strings.Contains(got, "65,544 bytes") || !strings.Contains(got, "xxd") {
		t.Errorf("got %q", got)
	}
	if len(got) > 400 || strings.ContainsRune(got, 0) {
		t.Errorf("notice is %d bytes or holds raw bytes", len(got))
	}
}

func TestLocalReadHugeSingleLine(t *testing.T) { // BH-014
	w := newFSWorld(t, nil)
	w.file(t, "bundle.min.js", strings.Repeat("a;", 1_000_000))
	r := w.call(t, "read_file", map[string]any{"path": "bundle.min.js"})
	got := fsMustOK(t, r)
	if !strings.HasPrefix(got, "     1→a;a;") {
		t.Errorf("starts %q", got[:40])
	}
	if !strings.Contains(got, "line 1 truncated: 2,000 of 2,000,000 characters shown; use grep or execute on a byte range for the rest") {
		t.Errorf("no marker: ...%q", got[len(got)-200:])
	}
	if len(got) > 2300 {
		t.Errorf("result is %d bytes; the line was not bounded", len(got))
	}
}

func TestLocalReadWindowsAndContinues(t *testing.T) {
	w := newFSWorld(t, nil)
	var b strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&b, "%d\n", i) // 2,000 such lines fit the 30,000-character result bound
	}
	w.file(t, "big.txt", b.String())
	got := fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "big.txt"}))
	notice := `[cut by read_file at the 2,000-line bound per call: the file has 5,000 lines; lines 1-2,000 shown; lines 2,001-5,000 omitted; continue with read_file {"path":"big.txt","offset":2001}]`
	if !strings.HasPrefix(got, notice+"\n     1→1\n") || !strings.HasSuffix(got, "  2000→2000\n\n"+notice) {
		t.Errorf("first window ends ...%q", got[len(got)-120:])
	}
	got = fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "big.txt", "offset": 2001, "limit": 3}))
	notice = `[cut by read_file at the 3-line limit of this call: the file has 5,000 lines; lines 2,001-2,003 shown; lines 2,004-5,000 omitted; continue with read_file {"path":"big.txt","offset":2004,"limit":3}]`
	if got != notice+"\n  2001→2001\n  2002→2002\n  2003→2003\n\n"+notice {
		t.Errorf("second window = %q", got)
	}
	got = fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "big.txt", "offset": 4999}))
	if !strings.HasSuffix(got, "showing lines 4999-5000 of 5,000 (end of file)") {
		t.Errorf("last window = %q", got)
	}
	fsMustFail(t, w.call(t, "read_file", map[string]any{"path": "big.txt", "offset": 6000}), tool.Parameters)
}

func TestLocalReadNonUTF8NamesEncoding(t *testing.T) {
	w := newFSWorld(t, nil)
	w.file(t, "latin.txt", "caf\xe9 cr\xe8me br\xfbl\xe9e\nna\xefve\n")
	got := fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "latin.txt"}))
	if !strings.Contains(got, "encoding") || !strings.Contains(strings.ToLower(got), "1252") {
		t.Errorf("encoding not named: %q", got)
	}
}

func noisePNG(t *testing.T, side int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 0xFF
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.NoCompression}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestLocalReadImage(t *testing.T) { // BH-013
	w := newFSWorld(t, &FSOptions{ReadMaxImageBytes: 20_000})
	small := image.NewRGBA(image.Rect(0, 0, 4, 3))
	small.Set(1, 1, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	png.Encode(&buf, small)
	w.file(t, "dot.png", buf.String())
	r := w.call(t, "read_file", map[string]any{"path": "dot.png"})
	fsMustOK(t, r)
	if len(r.Content) != 2 || r.Content[1].Type != tool.ImageContent || r.Content[1].MIMEType != "image/png" ||
		!bytes.Equal(r.Content[1].Data, buf.Bytes()) {
		t.Errorf("content = %+v", r.Content)
	}
	w.file(t, "shot.png", string(noisePNG(t, 100))) // 40,000+ bytes, over the 20,000 set here
	msg := fsMustFail(t, w.call(t, "read_file", map[string]any{"path": "shot.png"}), tool.Projection)
	if !strings.Contains(msg, "100x100") || !strings.Contains(msg, "bytes") || !strings.Contains(msg, "resize") {
		t.Errorf("oversize message lacks dimensions, size or next step: %q", msg)
	}
}

func TestLocalReadImageOverAnthropicLimitByDefault(t *testing.T) { // BH-013, full size
	if testing.Short() {
		t.Skip("encodes a 3000x3000 PNG")
	}
	w := newFSWorld(t, nil)
	w.file(t, "shot.png", string(noisePNG(t, 3000)))
	r := w.call(t, "read_file", map[string]any{"path": "shot.png"})
	msg := fsMustFail(t, r, tool.Projection)
	for _, c := range r.Content {
		if c.Type == tool.ImageContent {
			t.Fatal("an oversized image entered the result")
		}
	}
	if !strings.Contains(msg, "3000x3000") {
		t.Errorf("msg = %q", msg)
	}
}

// --- kind 3: grep / glob -------------------------------------------------------

func TestLocalGrepHiddenDirectories(t *testing.T) { // BH-015
	w := newFSWorld(t, nil)
	w.file(t, ".github/workflows/ci.yml", "on: push\ntoken: NEEDLE_7Q\n")
	w.file(t, "src/main.go", "package main\n")
	w.file(t, ".git/config", "NEEDLE_7Q\n")
	got := fsMustOK(t, w.call(t, "grep", map[string]any{"pattern": "NEEDLE_7Q", "path": "."}))
	if !strings.HasPrefix(got, `0 matches for "NEEDLE_7Q" under "."; 1 hidden directory (.github) was skipped; set include_hidden to search it`) {
		t.Errorf("step 2 = %q", got)
	}
	r := w.call(t, "grep", map[string]any{"pattern": "NEEDLE_7Q", "path": ".github"})
	got = fsMustOK(t, r)
	if !strings.Contains(got, ".github/workflows/ci.yml\n2:token: NEEDLE_7Q") || r.Evidence["matches"] != 1 {
		t.Errorf("step 3 = %q", got)
	}
	got = fsMustOK(t, w.call(t, "grep", map[string]any{"pattern": "NEEDLE_7Q", "include_hidden": true}))
	if !strings.Contains(got, "1 match in 1 file") || strings.Contains(got, ".git/config") {
		t.Errorf("include_hidden = %q", got)
	}
}

func TestLocalSearchCircularSymlink(t *testing.T) { // BH-017
	w := newFSWorld(t, nil)
	w.file(t, "pkg/a.go", "package pkg\n")
	if err := os.MkdirAll(filepath.Join(w.ws, "pkg/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(w.ws, "pkg/sub/loop")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := fsMustOK(t, w.call(t, "glob", map[string]any{"pattern": "**/*.go"}))
	if strings.Count(got, "a.go") != 1 || !strings.HasPrefix(got, "pkg/a.go\n") {
		t.Errorf("glob = %q", got)
	}
	got = fsMustOK(t, w.call(t, "grep", map[string]any{"pattern": "package", "path": "."}))
	if strings.Count(got, "a.go") != 1 {
		t.Errorf("grep = %q", got)
	}
	got = fsMustOK(t, w.call(t, "ls", map[string]any{"path": ".", "depth": 5}))
	if strings.Count(got, "a.go") != 1 || !strings.Contains(got, "pkg/sub/loop@") {
		t.Errorf("ls = %q", got)
	}
	if el := time.Since(start); el > execHangBound { // a loop followed forever would not end
		t.Errorf("took %v", el)
	}
}

func TestLocalGlobPrunesIgnoredTrees(t *testing.T) { // BH-018 (scaled down under -short)
	files := 500 // pruning, not size, is what is checked (2,000 took 23 s to set up under load)
	if testing.Short() {
		files = 200
	}
	w := newFSWorld(t, nil)
	for i := range 20 {
		d := fmt.Sprintf("svc-%02d", i)
		w.file(t, d+"/src/lib/uri.js", "export const uri = 1;\n")
		w.file(t, d+"/.gitignore", "node_modules/\n")
		for j := range files {
			w.file(t, fmt.Sprintf("%s/node_modules/m%d.js", d, j), "export default 1;\n")
		}
	}
	start := time.Now()
	r := w.call(t, "glob", map[string]any{"pattern": "*/src/lib/uri.js"})
	got := fsMustOK(t, r)
	el := time.Since(start)
	if r.Evidence["files"] != 20 || strings.Contains(got, "node_modules") {
		t.Errorf("glob = %v %q", r.Evidence, got)
	}
	r = w.call(t, "grep", map[string]any{"pattern": "export", "path": "."})
	got = fsMustOK(t, r)
	if r.Evidence["matches"] != 20 || strings.Contains(got, "node_modules") {
		t.Errorf("grep searched ignored trees: %v", r.Evidence)
	}
	t.Logf("glob over %d files: %v; grep searched %v files", 20*(files+2), el, r.Evidence["files_searched"])
}

func TestLocalGrepTimeoutIsNeverBare(t *testing.T) { // BH-018
	w := newFSWorld(t, &FSOptions{SearchTimeout: time.Millisecond})
	for i := range 3000 {
		w.file(t, fmt.Sprintf("d%02d/f%d.txt", i%30, i), "export x\n")
	}
	r := w.call(t, "grep", map[string]any{"pattern": "export", "path": "."})
	got := r.AllText()
	switch {
	case r.IsError:
		if r.Stage != tool.Execution || !strings.Contains(got, "timed out after 1 ms") || !strings.Contains(got, "narrow path") {
			t.Errorf("error = %q", got)
		}
	case r.Evidence["partial"] == true:
		if !strings.Contains(got, "timed out after 1 ms; searched") || !strings.Contains(got, "results are partial") {
			t.Errorf("partial = ...%q", got[max(0, len(got)-200):])
		}
	default:
		// 3,000 files cannot be opened and read in 1 ms: a complete
		// result means the deadline was not applied to the walk.
		t.Fatalf("grep over 3,000 files finished within a 1 ms SearchTimeout: %v\n%s", r.Evidence, got[max(0, len(got)-200):])
	}
}

func TestLocalGrepClipsMinifiedLine(t *testing.T) { // BH-019
	w := newFSWorld(t, nil)
	w.file(t, "data.json", `{"k":"FINDME","pad":"`+strings.Repeat("y", 100_000)+`"}`)
	r := w.call(t, "grep", map[string]any{"pattern": "FINDME", "path": "data.json", "max_results": 1})
	got := fsMustOK(t, r)
	if !strings.Contains(got, `1:{"k":"FINDME"`) || !strings.Contains(got, "characters shown]") || !strings.Contains(got, "100,023") {
		t.Errorf("got %q", got)
	}
	if len(got) > 1200 || r.Evidence["matches"] != 1 {
		t.Errorf("%d bytes, evidence %v", len(got), r.Evidence)
	}
}

// --- kind 8: escape ------------------------------------------------------------

// outsideFixture makes $OUTSIDE/secret.txt, $WS/leak -> it and $WS/up -> ..
func outsideFixture(t *testing.T, w *fsWorld) (secret string) {
	t.Helper()
	secret = filepath.Join(w.outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cr3t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(w.ws, "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(w.ws, "up")); err != nil {
		t.Fatal(err)
	}
	return secret
}

func TestLocalReadOutsideIsAuthorization(t *testing.T) { // BH-055
	w := newFSWorld(t, nil)
	secret := outsideFixture(t, w)
	rel, _ := filepath.Rel(w.ws, secret)
	for _, p := range []string{"../outside.txt", filepath.ToSlash(rel), secret, "leak", "up/" + filepath.Base(w.outside) + "/secret.txt"} {
		msg := fsMustFail(t, w.call(t, "read_file", map[string]any{"path": p}), tool.Authorization)
		if strings.Contains(msg, "s3cr3t") || !strings.Contains(msg, "use a path inside the workspace") {
			t.Errorf("read_file %s: %q", p, msg)
		}
	}
	// Control: a symlink inside the workspace works.
	w.file(t, "docs/v2/index.md", "hello\n")
	if err := os.Symlink(filepath.Join(w.ws, "docs/v2"), filepath.Join(w.ws, "docs/current")); err != nil {
		t.Fatal(err)
	}
	if got := fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "docs/current/index.md"})); got != "     1→hello" {
		t.Errorf("inside symlink: %q", got)
	}
}

func TestLocalListAndSearchOutsideAreAuthorization(t *testing.T) { // BH-055
	w := newFSWorld(t, nil)
	outsideFixture(t, w)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"ls", map[string]any{"path": "up"}},
		{"ls", map[string]any{"path": w.outside}},
		{"grep", map[string]any{"pattern": "s3cr3t", "path": "up"}},
		{"grep", map[string]any{"pattern": "s3cr3t", "path": "leak"}},
		{"glob", map[string]any{"pattern": "*", "path": "up"}},
	} {
		msg := fsMustFail(t, w.call(t, tc.tool, tc.args), tool.Authorization)
		if strings.Contains(msg, "s3cr3t") || !strings.Contains(msg, "use a path inside the workspace") {
			t.Errorf("%s %v: %q", tc.tool, tc.args, msg)
		}
	}
	got := fsMustOK(t, w.call(t, "grep", map[string]any{"pattern": "s3cr3t", "path": ".", "include_hidden": true, "no_ignore": true}))
	if strings.Contains(got, ":s3cr3t") || strings.Contains(got, "secret.txt") {
		t.Errorf("grep reported the outside file: %q", got)
	}
	got = fsMustOK(t, w.call(t, "ls", map[string]any{"path": ".", "depth": 3}))
	if strings.Contains(got, "secret.txt") || !strings.Contains(got, "leak@") {
		t.Errorf("ls followed a link outside: %q", got)
	}
}

func TestLocalWritesThroughSymlinksAreRefused(t *testing.T) { // BH-057, BH-058
	w := newFSWorld(t, nil)
	victim := filepath.Join(w.outside, "victim.txt")
	os.WriteFile(victim, []byte("original\n"), 0o644)
	os.Symlink(victim, filepath.Join(w.ws, "notes.md"))
	os.Symlink(filepath.Join(w.outside, "not-yet.txt"), filepath.Join(w.ws, "draft.txt"))
	os.Symlink(w.outside, filepath.Join(w.ws, "link"))
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": "notes.md", "content": "OWNED"}},
		{"write_file", map[string]any{"path": "draft.txt", "content": "OWNED"}},
		{"edit_file", map[string]any{"path": "notes.md", "old_string": "original", "new_string": "OWNED"}},
		{"write_file", map[string]any{"path": "link/newdir/deeper/f.txt", "content": "x"}},
		{"write_file", map[string]any{"path": "../escape.txt", "content": "x"}},
		{"write_file", map[string]any{"path": filepath.Join(w.outside, "abs.txt"), "content": "x"}},
	} {
		fsMustFail(t, w.call(t, tc.tool, tc.args), tool.Authorization)
	}
	if b, _ := os.ReadFile(victim); string(b) != "original\n" {
		t.Errorf("victim.txt = %q", b)
	}
	ents, _ := os.ReadDir(w.outside)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("$OUTSIDE holds %v; want only victim.txt", names)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(w.ws), "escape.txt")); err == nil {
		t.Error("../escape.txt was written")
	}
}
