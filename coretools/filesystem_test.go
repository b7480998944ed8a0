package coretools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

func TestFilesystemToolsOrderAnnotationsAndSchemas(t *testing.T) {
	tools := Filesystem(newFSWorld(t, nil).sb, nil)
	if len(tools) != len(FilesystemToolNames) {
		t.Fatalf("got %d tools, want %d", len(tools), len(FilesystemToolNames))
	}
	for i, tl := range tools {
		name := FilesystemToolNames[i]
		if tl.Name() != name {
			t.Errorf("tool %d = %s, want %s", i, tl.Name(), name)
		}
		a := tl.Annotations()
		if a == nil {
			t.Fatalf("%s: no annotations", name)
		}
		mutates := name == "write_file" || name == "edit_file"
		if a.ReadOnlyHint == mutates {
			t.Errorf("%s: readOnlyHint = %v", name, a.ReadOnlyHint)
		}
		if mutates && (a.DestructiveHint == nil || !*a.DestructiveHint) {
			t.Errorf("%s: destructiveHint not set", name)
		}
		var schema struct {
			Type                 string                     `json:"type"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Properties           map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.InputSchema(), &schema); err != nil {
			t.Fatalf("%s: schema: %v", name, err)
		}
		if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: additionalProperties is not false", name)
		}
		for prop, raw := range schema.Properties {
			if prop != strings.ToLower(prop) || strings.Contains(prop, "-") {
				t.Errorf("%s: property %q is not snake_case", name, prop)
			}
			if !strings.Contains(string(raw), `"description"`) {
				t.Errorf("%s: property %q has no description", name, prop)
			}
		}
	}
}

func TestDescriptionsShowTheBoundsInForce(t *testing.T) {
	byName := newFSWorld(t, &FSOptions{ReadMaxLines: 1234, SearchMaxResults: 77, SearchTimeout: 3 * time.Second}).tools
	for name, tl := range byName {
		d := tl.Description()
		if d == "" || strings.Contains(d, "{{") {
			t.Errorf("%s: description not rendered: %q", name, d)
		}
	}
	if d := byName["read_file"].Description(); !strings.Contains(d, "At most 1,234 lines") || !strings.Contains(d, "→") {
		t.Errorf("read_file description lacks the configured line bound or the prefix form:\n%s", d)
	}
	if d := byName["grep"].Description(); !strings.Contains(d, "At most 77 matching lines") || !strings.Contains(d, "after 3 s") {
		t.Errorf("grep description lacks the configured bounds:\n%s", d)
	}
	if d := byName["edit_file"].Description(); !strings.Contains(d, "never read can still be edited") {
		t.Errorf("edit_file description does not document the never-read policy:\n%s", d)
	}
}

func TestFSOptionsDefaults(t *testing.T) {
	o := (*FSOptions)(nil).withDefaults()
	want := FSOptions{
		LsMaxEntries: 1000, LsMaxDepth: 5, ReadMaxLines: 2000, ReadMaxLineChars: 2000,
		ReadMaxBytes: 256 << 10, ReadMaxImageBytes: 3932160, SearchMaxResults: 100,
		SearchMaxLineChars: 400, SearchTimeout: 10 * time.Second, MaxOutputChars: 30000,
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("defaults = %+v, want %+v", o, want)
	}
	// 3.75 MiB raw is the largest image whose base64 fits Anthropic's 5 MiB.
	if b64 := (o.ReadMaxImageBytes + 2) / 3 * 4; b64 > 5<<20 {
		t.Errorf("default image limit encodes to %d base64 bytes, over 5 MiB", b64)
	}
}

// --- read_file formatting ---------------------------------------------------

func TestFormatReadKeepsTabsAndUsesArrowPrefix(t *testing.T) { // BH-002
	res := &sandbox.ReadResult{Kind: sandbox.KindText, TotalLines: 3, Size: 30, Lines: []sandbox.Line{
		{Number: 1, Text: "func f(x int) int {", Chars: 19},
		{Number: 2, Text: "\tif x > 0 {", Chars: 11},
		{Number: 3, Text: "\t\treturn x", Chars: 10},
	}}
	o := (*FSOptions)(nil).withDefaults()
	got, _, err := formatRead("calc.go", res, 1, 2000, &o)
	if err != nil {
		t.Fatal(err)
	}
	want := "     1→func f(x int) int {\n     2→\tif x > 0 {\n     3→\t\treturn x"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestFormatReadBOMIsANoteNeverU_FEFF(t *testing.T) { // BH-007
	o := (*FSOptions)(nil).withDefaults()
	for _, tc := range []struct {
		name string
		res  sandbox.ReadResult
	}{
		{"adapter strips and flags", sandbox.ReadResult{BOM: true, Lines: []sandbox.Line{{Number: 1, Text: "Write-Host 'hi'"}}}},
		{"adapter leaves it in line 1", sandbox.ReadResult{Lines: []sandbox.Line{{Number: 1, Text: "\uFEFFWrite-Host 'hi'"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ev, _ := formatRead("s.ps1", &tc.res, 1, 2000, &o)
			if strings.ContainsRune(got, '\uFEFF') {
				t.Errorf("U+FEFF reached the output: %q", got)
			}
			if !strings.Contains(got, "byte order mark") || ev["bom"] != true {
				t.Errorf("no BOM note: %q", got)
			}
			if !strings.Contains(got, "     1→Write-Host 'hi'") {
				t.Errorf("line 1 not shown clean: %q", got)
			}
		})
	}
}

func TestFormatReadHugeLineMarker(t *testing.T) { // BH-014
	o := (*FSOptions)(nil).withDefaults()
	for _, adapterClips := range []bool{true, false} {
		t.Run(fmt.Sprintf("adapterClips=%v", adapterClips), func(t *testing.T) {
			text := strings.Repeat("a;", 1_000_000)
			if adapterClips {
				text = text[:2000]
			}
			res := &sandbox.ReadResult{TotalLines: 1, Size: 2_000_000,
				Lines: []sandbox.Line{{Number: 1, Text: text, Chars: 2_000_000}}}
			got, ev, _ := formatRead("bundle.min.js", res, 1, 2000, &o)
			want := "line 1 truncated: 2,000 of 2,000,000 characters shown; use grep or execute on a byte range for the rest"
			if !strings.Contains(got, want) {
				t.Errorf("missing marker %q in %q", want, got[len(got)-300:])
			}
			if len(got) > 2500 {
				t.Errorf("output is %d bytes; the line was not cut", len(got))
			}
			if ev["truncated_lines"] != 1 {
				t.Errorf("evidence truncated_lines = %v", ev["truncated_lines"])
			}
		})
	}
}

func TestFormatReadManyCutLinesAreCounted(t *testing.T) {
	o := (*FSOptions)(nil).withDefaults()
	o.ReadMaxLineChars = 5
	var lines []sandbox.Line
	for i := 1; i <= 9; i++ {
		lines = append(lines, sandbox.Line{Number: i, Text: "0123456789", Chars: 10})
	}
	got, _, _ := formatRead("f", &sandbox.ReadResult{Lines: lines, TotalLines: 9}, 1, 100, &o)
	if n := strings.Count(got, "truncated: 5 of 10 characters shown"); n != maxTruncationNotes {
		t.Errorf("%d per-line notes, want %d:\n%s", n, maxTruncationNotes, got)
	}
	if !strings.Contains(got, "4 more lines also truncated to 5 characters") {
		t.Errorf("remaining cut lines not counted:\n%s", got)
	}
}

func TestFormatReadWindowEndMarker(t *testing.T) {
	o := (*FSOptions)(nil).withDefaults()
	res := &sandbox.ReadResult{TotalLines: 10, More: true, NextOffset: 5,
		Lines: []sandbox.Line{{Number: 3, Text: "c"}, {Number: 4, Text: "d"}}}
	got, ev, _ := formatRead("f.txt", res, 3, 2, &o)
	notice := `[cut by read_file at the 2-line limit of this call: the file has 10 lines; lines 3-4 shown; lines 5-10 omitted; continue with read_file {"path":"f.txt","offset":5,"limit":2}]`
	want := notice + "\n     3→c\n     4→d\n\n" + notice
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if ev["next_offset"] != 5 || ev["more"] != true {
		t.Errorf("evidence = %v", ev)
	}

	// The last window says it reached the end.
	res = &sandbox.ReadResult{TotalLines: 4, Lines: []sandbox.Line{{Number: 3, Text: "c"}, {Number: 4, Text: "d"}}}
	got, _, _ = formatRead("f.txt", res, 3, 2, &o)
	if !strings.HasSuffix(got, "showing lines 3-4 of 4 (end of file)") {
		t.Errorf("got %q", got)
	}
}

func TestFormatReadStopsAtByteBound(t *testing.T) {
	o := (*FSOptions)(nil).withDefaults()
	o.ReadMaxBytes = 25
	var lines []sandbox.Line
	for i := 1; i <= 10; i++ {
		lines = append(lines, sandbox.Line{Number: i, Text: "0123456789"})
	}
	got, _, _ := formatRead("f.txt", &sandbox.ReadResult{Lines: lines, TotalLines: 10}, 1, 2000, &o)
	if strings.Contains(got, "     3→") {
		t.Errorf("line 3 passes the 25-byte bound but was shown:\n%s", got)
	}
	if !strings.HasPrefix(got, `[cut by read_file at the 25-byte bound per call: the file has 10 lines; lines 1-2 shown; lines 3-10 omitted; continue with read_file {"path":"f.txt","offset":3}]`+"\n") {
		t.Errorf("no byte-bound marker:\n%s", got)
	}
}

func TestFormatReadOffsetPastEndIsParameters(t *testing.T) {
	o := (*FSOptions)(nil).withDefaults()
	_, _, err := formatRead("f.txt", &sandbox.ReadResult{Size: 10, TotalLines: 3}, 50, 2000, &o)
	if err == nil || err.Stage != tool.Parameters || !strings.Contains(err.Error(), "offset between 1 and 3") {
		t.Errorf("err = %v", err)
	}
	got, _, err := formatRead("e.txt", &sandbox.ReadResult{}, 1, 2000, &o)
	if err != nil || got != "e.txt is empty (0 bytes)" {
		t.Errorf("empty file: %q, %v", got, err)
	}
}

func TestFormatReadNamesNonUTF8Encoding(t *testing.T) {
	o := (*FSOptions)(nil).withDefaults()
	res := &sandbox.ReadResult{Encoding: "windows-1252", Lines: []sandbox.Line{{Number: 1, Text: "caf\xe9"}}}
	got, _, _ := formatRead("latin.txt", res, 1, 2000, &o)
	if !strings.Contains(got, "note: the file's text encoding is windows-1252, not UTF-8 (detected from its content); lines are shown converted to UTF-8, and edit_file matches and writes in windows-1252") {
		t.Errorf("encoding not named: %q", got)
	}
	if !strings.Contains(got, "     1→caf\uFFFD") {
		t.Errorf("invalid byte not replaced: %q", got)
	}
}

// --- read_file through the tool ---------------------------------------------

func TestReadFileBinaryIsAShortNotice(t *testing.T) { // BH-011
	w := newFSWorld(t, nil)
	elf := string(append([]byte{0x7F, 'E', 'L', 'F', 2, 1, 1, 0}, make([]byte, 65536)...))
	w.file(t, "bin/tool", elf)
	r := w.call(t, "read_file", map[string]any{"path": "bin/tool"})
	got := fsMustOK(t, r)
	// The adapter's own wording ("binary file (ELF header), 65,544 bytes,
	// not shown; use execute ...") is kept, not repeated.
	want := "bin/tool: binary file (ELF header), 65,544 bytes, not shown; use execute with xxd or strings for a bounded view, e.g. `xxd -l 512 bin/tool`"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got %q\nwant prefix %q", got, want)
	}
	for _, once := range []string{"binary file", "65,544", "not shown", "use execute"} {
		if n := strings.Count(got, once); n != 1 {
			t.Errorf("%q appears %d times in %q", once, n, got)
		}
	}
	if r.Evidence["kind"] != "binary" || r.Evidence["bytes"] != int64(65544) {
		t.Errorf("evidence = %v", r.Evidence)
	}
	if b := w.bytes(t, "bin/tool"); b != elf {
		t.Error("reading changed the file")
	}

	// Another adapter's wording without the word "binary" is wrapped. This
	// is the pure formatter on a literal result: the local adapter always
	// says "binary file".
	got = formatBinary("bin/tool", &sandbox.ReadResult{Kind: sandbox.KindBinary, Size: 65544, Description: "ELF executable"}).AllText()
	want = "bin/tool: binary file (ELF executable), 65,544 bytes, not shown; use execute with xxd or strings for a bounded view, e.g. `xxd -l 512 bin/tool`"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got %q\nwant prefix %q", got, want)
	}
}

// readRecorder is the real local sandbox with the requests its Read is
// given recorded: every operation runs in localsandbox on real files;
// nothing is replaced or answered by the test.
type readRecorder struct {
	*localsandbox.Sandbox
	reads []sandbox.ReadRequest
}

func (r *readRecorder) Read(ctx context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
	r.reads = append(r.reads, req)
	return r.Sandbox.Read(ctx, req)
}

func TestReadFilePassesBoundsToTheSandbox(t *testing.T) {
	w := newFSWorld(t, nil)
	rec := &readRecorder{Sandbox: w.sb}
	tools := fsToolsByName(t, rec, &FSOptions{ReadMaxLines: 50, ReadMaxLineChars: 80, ReadMaxBytes: 1000, ReadMaxImageBytes: 99})
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "%02d:%s\n", i, strings.Repeat("x", 120)) // 123 characters
	}
	w.file(t, "a", b.String())

	// offset and limit pick lines 7-16; each is cut to 80 characters.
	got := fsMustOK(t, fsCall(t, tools, "read_file", map[string]any{"path": "a", "offset": 7, "limit": 10}))
	notice := `[cut by read_file at the 10-line limit of this call: the file has 30 lines; lines 7-16 shown; lines 17-30 omitted; continue with read_file {"path":"a","offset":17,"limit":10}]`
	if !strings.HasPrefix(got, notice+"\n     7→07:"+strings.Repeat("x", 77)+"\n     8→08:") {
		t.Errorf("window does not start at line 7 cut to 80 characters: %q", got[:min(len(got), 400)])
	}
	if !strings.Contains(got, "    16→16:"+strings.Repeat("x", 77)+"\n\nline 7 truncated") || !strings.HasSuffix(got, "\n"+notice) ||
		strings.Contains(got, "    17→") {
		t.Errorf("window does not end at line 16: %q", got)
	}
	if !strings.Contains(got, "line 7 truncated: 80 of 123 characters shown") || !strings.Contains(got, "5 more lines also truncated to 80 characters") {
		t.Errorf("cut lines not reported: %q", got)
	}

	// 12 cut lines of 80 bytes fit in 1,000 bytes; the 13th does not.
	got = fsMustOK(t, fsCall(t, tools, "read_file", map[string]any{"path": "a"}))
	if !strings.Contains(got, "    12→12:") || strings.Contains(got, "    13→") ||
		!strings.HasPrefix(got, `[cut by read_file at the 1,000-byte bound per call: the file has 30 lines; lines 1-12 shown; lines 13-30 omitted; continue with read_file {"path":"a","offset":13}]`) {
		t.Errorf("byte bound: %q", got)
	}

	// limit above the maximum is refused by the schema, before the sandbox.
	fsMustFail(t, fsCall(t, tools, "read_file", map[string]any{"path": "a", "limit": 51}), tool.Parameters)

	// The 99-byte image bound is the adapter's: it names it in its refusal.
	w.file(t, "dot.png", string(noisePNG(t, 10)))
	msg := fsMustFail(t, fsCall(t, tools, "read_file", map[string]any{"path": "dot.png"}), tool.Projection)
	if !strings.Contains(msg, "over the 99-byte image limit") {
		t.Errorf("image bound not applied by the sandbox: %q", msg)
	}

	want := []sandbox.ReadRequest{
		{Path: "a", Offset: 7, Limit: 10, MaxLineChars: 80, MaxBytes: 1000, MaxImageBytes: 99},
		{Path: "a", Offset: 1, Limit: 50, MaxLineChars: 80, MaxBytes: 1000, MaxImageBytes: 99},
		{Path: "dot.png", Offset: 1, Limit: 50, MaxLineChars: 80, MaxBytes: 1000, MaxImageBytes: 99},
	}
	if fmt.Sprint(rec.reads) != fmt.Sprint(want) {
		t.Errorf("reads = %+v\nwant    %+v", rec.reads, want)
	}
}

// --- edit_file: read tracker and pre-checks ----------------------------------

func TestEditFilePassesDigestOfLastRead(t *testing.T) {
	w := newFSWorld(t, nil)
	edit := func(tools map[string]*tool.Tool, p, old, new string) *tool.Result {
		t.Helper()
		return fsCall(t, tools, "edit_file", map[string]any{"path": p, "old_string": old, "new_string": new})
	}
	abs := filepath.Join(w.sb.Workspace(), "a.txt")

	// Never read in this run: edited without a digest check.
	w.file(t, "never-read.txt", "a\n")
	r := edit(w.tools, "never-read.txt", "a", "b")
	if fsMustOK(t, r); r.Evidence["stale_checked"] != false {
		t.Errorf("never-read edit: evidence %v", r.Evidence)
	}
	if b := w.bytes(t, "never-read.txt"); b != "b\n" {
		t.Errorf("never-read.txt = %q", b)
	}

	// The digest of a read through "./a.txt" is checked by an edit through
	// "a.txt": the file changed on disk since, so the edit is refused.
	w.file(t, "a.txt", "one\n")
	fsMustOK(t, fsCall(t, w.tools, "read_file", map[string]any{"path": "./a.txt"}))
	w.file(t, "a.txt", "one\ntwo\n")
	fsMustFail(t, edit(w.tools, "a.txt", "one", "ONE"), tool.Verification)
	if b := w.bytes(t, "a.txt"); b != "one\ntwo\n" {
		t.Fatalf("stale edit wrote %q", b)
	}

	// Read again; the read's digest matches, so the edit through the
	// absolute spelling goes through, checked.
	fsMustOK(t, fsCall(t, w.tools, "read_file", map[string]any{"path": "a.txt"}))
	r = edit(w.tools, abs, "one", "ONE")
	if fsMustOK(t, r); r.Evidence["stale_checked"] != true {
		t.Errorf("edit after read: evidence %v", r.Evidence)
	}
	// The edit's read-back digest replaced the read's: a chained edit
	// needs no re-read (the read's digest would now be stale).
	r = edit(w.tools, "a.txt", "two", "TWO")
	if fsMustOK(t, r); r.Evidence["stale_checked"] != true {
		t.Errorf("chained edit: evidence %v", r.Evidence)
	}
	if b := w.bytes(t, "a.txt"); b != "ONE\nTWO\n" || r.Evidence["sha256"] != sha("ONE\nTWO\n") {
		t.Errorf("a.txt = %q, evidence %v", b, r.Evidence)
	}
	// And it is checked through the absolute spelling too.
	w.file(t, "a.txt", "changed\n")
	fsMustFail(t, edit(w.tools, abs, "changed", "CHANGED"), tool.Verification)
	if b := w.bytes(t, "a.txt"); b != "changed\n" {
		t.Fatalf("stale edit wrote %q", b)
	}

	// A fresh group has a fresh tracker: the file changed since the old
	// group's last look, yet the new run edits it unchecked.
	fresh := fsToolsByName(t, w.sb, nil)
	r = edit(fresh, "a.txt", "changed", "fresh")
	if fsMustOK(t, r); r.Evidence["stale_checked"] != false {
		t.Errorf("a new run inherited a digest: evidence %v", r.Evidence)
	}
	if b := w.bytes(t, "a.txt"); b != "fresh\n" {
		t.Errorf("a.txt = %q", b)
	}
}

func TestEditFileStaleIsVerification(t *testing.T) {
	w := newFSWorld(t, nil)
	w.file(t, "a.txt", "a\n")
	fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "a.txt"}))
	w.file(t, "a.txt", "a\nb\n") // changed on disk between read and edit
	got := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "a.txt", "old_string": "a", "new_string": "b"}), tool.Verification)
	if !strings.Contains(got, "a.txt changed on disk since this run last read it; nothing was written") ||
		!strings.Contains(got, "(next: read the file again, then edit)") {
		t.Errorf("got %q", got)
	}
	if b := w.bytes(t, "a.txt"); b != "a\nb\n" {
		t.Errorf("stale edit wrote %q", b)
	}
}

func TestEditFileEmptyOldAndNoOpRejectedBeforeSandbox(t *testing.T) { // BH-010
	w := newFSWorld(t, nil)
	w.file(t, "w.txt", "abcd\n")
	// Under a cancelled context every sandbox call fails at the Execution
	// stage, so a Parameters error under it was raised before the sandbox
	// was called.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ctl := fsMustFail(t, fsCallCtx(t, cancelled, w.tools, "edit_file", map[string]any{"path": "w.txt", "old_string": "ab", "new_string": "AB"}), tool.Execution)
	if !strings.Contains(ctl, "cancel") {
		t.Errorf("control: a valid edit under a cancelled context = %q", ctl)
	}
	for _, ctx := range []context.Context{cancelled, context.Background()} {
		for _, in := range []map[string]any{
			{"path": "w.txt", "old_string": "", "new_string": "X"},
			{"path": "w.txt", "old_string": "", "new_string": "X", "replace_all": true},
			{"path": "w.txt", "edits": []map[string]any{{"old_string": "ab", "new_string": "AB"}, {"old_string": "", "new_string": "X"}}},
		} {
			got := fsMustFail(t, fsCallCtx(t, ctx, w.tools, "edit_file", in), tool.Parameters)
			if !strings.Contains(got, "old_string must not be empty; use write_file to create a file") {
				t.Errorf("%v: got %q", in, got)
			}
		}
		noop := fsMustFail(t, fsCallCtx(t, ctx, w.tools, "edit_file", map[string]any{"path": "w.txt", "old_string": "ab", "new_string": "ab"}), tool.Parameters)
		if !strings.Contains(noop, "would change nothing") || strings.Contains(noop, "not found") {
			t.Errorf("no-op error = %q", noop)
		}
	}
	if b := w.bytes(t, "w.txt"); b != "abcd\n" {
		t.Errorf("w.txt = %q", b)
	}
}

func TestEditFileInputShape(t *testing.T) {
	w := newFSWorld(t, nil)
	const src = "p q\nq\n"
	w.file(t, "a", src)
	for _, in := range []map[string]any{
		{"path": "a"},
		{"path": "a", "old_string": "p"},
		{"path": "a", "old_string": "p", "new_string": "y", "edits": []map[string]any{{"old_string": "p", "new_string": "q"}}},
	} {
		fsMustFail(t, w.call(t, "edit_file", in), tool.Parameters)
		if b := w.bytes(t, "a"); b != src {
			t.Fatalf("%v wrote %q", in, b)
		}
	}
	// In order, p->q then every q->s gives "s s\ns\n" (4 replacements).
	// Reversed it would give "q s\ns\n"; without replace_all the second
	// edit would be ambiguous.
	r := w.call(t, "edit_file", map[string]any{"path": "a",
		"edits": []map[string]any{{"old_string": "p", "new_string": "q"}, {"old_string": "q", "new_string": "s", "replace_all": true}}})
	fsMustOK(t, r)
	if b := w.bytes(t, "a"); b != "s s\ns\n" || r.Evidence["replacements"] != 4 {
		t.Errorf("a = %q, evidence %v", b, r.Evidence)
	}
}

func TestFormatEditShowsRegionWithLineNumbers(t *testing.T) {
	got := formatEdit("notes.txt", &sandbox.EditResult{Replacements: 1, Bytes: 18, SHA256: "abc",
		Region:    []sandbox.Line{{Number: 1, Text: "RED"}, {Number: 2, Text: "GREEN"}, {Number: 3, Text: "blue"}},
		StartLine: 1, EndLine: 3}, 2000)
	want := "edited notes.txt: 1 replacement; 18 bytes on disk; sha256 abc read back from disk\n" +
		"lines 1-3 as now on disk:\n     1→RED\n     2→GREEN\n     3→blue"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	var long []sandbox.Line
	for i := 1; i <= 100; i++ {
		long = append(long, sandbox.Line{Number: i, Text: "x"})
	}
	got = formatEdit("f", &sandbox.EditResult{Replacements: 100, Region: long, StartLine: 1, EndLine: 100}, 2000)
	if !strings.Contains(got, "region cut at line 60 of 1-100; call read_file with offset=61 to see the rest") {
		t.Errorf("long region not cut: %s", got[len(got)-200:])
	}
}

// --- error mapping ----------------------------------------------------------

func TestFSErrorStages(t *testing.T) {
	wrap := func(e error) error { return &sandbox.PathError{Op: sandbox.OpRead, Path: "p", Err: e} }
	for _, tc := range []struct {
		err   error
		stage tool.Stage
		hint  string
	}{
		{wrap(sandbox.ErrOutsideWorkspace), tool.Authorization, "use a path inside the workspace"},
		{wrap(sandbox.ErrNotFound), tool.Parameters, hintNotFound},
		{wrap(sandbox.ErrIsDir), tool.Parameters, hintIsDir},
		{wrap(sandbox.ErrNotDir), tool.Parameters, hintNotDir},
		{&sandbox.EditError{Err: sandbox.ErrNoMatch}, tool.Parameters, hintNoMatch},
		{&sandbox.EditError{Err: sandbox.ErrAmbiguous, Matches: 3}, tool.Parameters, hintAmbiguous},
		{&sandbox.EditError{Err: sandbox.ErrNoOp}, tool.Parameters, hintNoOp},
		{&sandbox.EditError{Err: sandbox.ErrEmptyOld}, tool.Parameters, hintEmptyOld},
		{fmt.Errorf("bad: %w", sandbox.ErrBadPattern), tool.Parameters, hintBadPattern},
		{wrap(sandbox.ErrStale), tool.Verification, "read the file again, then edit"},
		{wrap(sandbox.ErrChanged), tool.Execution, hintChanged},
		{context.Canceled, tool.Execution, hintCancelled},
		{fmt.Errorf("walk: %w", context.DeadlineExceeded), tool.Execution, hintCancelled},
		{sandbox.ErrUnsupported, tool.Execution, hintUnsupported},
		{errors.New("disk on fire"), tool.Execution, hintExecution},
	} {
		e := fsError(tc.err, "edit_file", "p")
		if e.Stage != tc.stage || !strings.HasPrefix(e.Hint, tc.hint) {
			t.Errorf("%v: stage %s hint %q, want %s %q", tc.err, e.Stage, e.Hint, tc.stage, tc.hint)
		}
		if !errors.Is(e, tc.err) {
			t.Errorf("%v: the cause is not in the chain", tc.err)
		}
	}
}

func TestFSErrorEditDetails(t *testing.T) {
	e := fsError(&sandbox.EditError{Err: sandbox.ErrNoMatch,
		Candidates: []string{"lines 2-3 match if whitespace is ignored; the file indents with TAB (0x09)", "b", "c", "d", "e"}}, "edit_file", "calc.go")
	if want := "old_string not found in calc.go; nothing was written; closest: lines 2-3 match if whitespace is ignored; the file indents with TAB (0x09); b; c; and 2 more"; e.Msg != want {
		t.Errorf("no match: %q\nwant      %q", e.Msg, want)
	}
	e = fsError(&sandbox.EditError{Err: sandbox.ErrAmbiguous, Matches: 2, Index: 1}, "edit_file", "tag.js")
	if want := "edit 2: old_string matches 2 places in tag.js; nothing was written"; e.Msg != want {
		t.Errorf("ambiguous: %q", e.Msg)
	}
	if !strings.Contains(e.Hint, "replace_all") || !strings.Contains(e.Hint, "surrounding lines") {
		t.Errorf("ambiguous hint: %q", e.Hint)
	}
}

// --- ls, glob and grep formatting --------------------------------------------

func TestFormatList(t *testing.T) {
	res := &sandbox.ListResult{Skipped: 2, Entries: []sandbox.Entry{
		{Path: "docs", Type: sandbox.TypeDir},
		{Path: "docs/a.md", Type: sandbox.TypeFile, Size: 1234},
		{Path: "up", Type: sandbox.TypeSymlink},
	}}
	got, n := formatList(".", res, 1000, 30000, time.Second)
	want := "docs/\ndocs/a.md  (1,234 bytes)\nup@  (symlink, not followed)\n\n2 hidden entries were skipped; set include_hidden to see them"
	if got != want || n != 3 {
		t.Errorf("got %q (%d)\nwant %q", got, n, want)
	}
	res.Truncated, res.Skipped = true, 0
	got, _ = formatList(".", res, 3, 30000, time.Second)
	if !strings.HasSuffix(got, "showing 3 of at least 4 (max_entries 3); list a subdirectory or lower depth for the rest") {
		t.Errorf("truncated: %q", got)
	}
	got, n = formatList(".", res, 1000, 35, time.Second)
	if n != 2 || !strings.Contains(got, "output cut at 35 characters after 2 of 3 entries") {
		t.Errorf("output bound: %q (%d)", got, n)
	}
}

func TestSearchZeroResultsNeverReadsComplete(t *testing.T) { // BH-015
	w := newFSWorld(t, nil)
	w.file(t, ".github/workflows/ci.yml", "on: push\ntoken: NEEDLE_7Q\n")
	w.file(t, ".git/config", "NEEDLE_7Q\n")
	w.file(t, "src/main.go", "package main\n")
	w.file(t, ".gitignore", "build/\n")
	w.file(t, "build/out.txt", "NEEDLE_7Q\n")
	r := w.call(t, "grep", map[string]any{"pattern": "NEEDLE_7Q", "path": "."})
	got := fsMustOK(t, r)
	want := `0 matches for "NEEDLE_7Q" under "."; 1 hidden directory (.github) was skipped; set include_hidden to search it`
	if !strings.HasPrefix(got, want) {
		t.Errorf("got  %q\nwant %q...", got, want)
	}
	if !strings.Contains(got, "1 path excluded by .gitignore was not searched; set no_ignore") || !strings.HasSuffix(got, "; searched 1 file") {
		t.Errorf("does not say ignored paths were skipped or what was searched: %q", got)
	}
	if fmt.Sprint(r.Evidence["skipped_hidden"]) != "[.github]" || r.Evidence["files_searched"] != 1 {
		t.Errorf("evidence = %v", r.Evidence)
	}
	got = fsMustOK(t, w.call(t, "glob", map[string]any{"pattern": "**/*.yml"}))
	if !strings.HasPrefix(got, `0 files match "**/*.yml" under "."; 1 hidden directory (.github) was skipped`) {
		t.Errorf("glob: %q", got)
	}
}

// The local adapter never reports .git (it is never entered); another
// adapter may list it among the skipped directories. include_hidden would
// not open it, so the note leaves it out. Pure formatting of a literal
// result.
func TestSearchSummaryLeavesGitOutOfHiddenNote(t *testing.T) {
	s := searchSummary{what: "matches", one: "match", max: 100, outChars: 30000, timeout: time.Second,
		res: &sandbox.SearchResult{FilesSearched: 1, Ignored: 2, SkippedHidden: []string{".git", ".github", "sub/.git"}}}
	got := s.render(`0 matches for "N" under "."`, "")
	want := `0 matches for "N" under "."; 1 hidden directory (.github) was skipped; set include_hidden to search it; ` +
		`2 paths excluded by .gitignore were not searched; set no_ignore to include them; searched 1 file`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if ev := s.evidence(); fmt.Sprint(ev["skipped_hidden"]) != "[.github]" {
		t.Errorf("evidence = %v", ev)
	}
}

func TestSearchTruncatedSaysHowToNarrow(t *testing.T) {
	w := newFSWorld(t, nil)
	now := time.Now().Truncate(time.Second)
	for i := range 150 { // f000.go newest, f149.go oldest
		name := fmt.Sprintf("f%03d.go", i)
		w.file(t, name, "package p\n")
		mt := now.Add(-time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(w.ws, name), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	w.file(t, "notes.txt", "not go\n")
	r := w.call(t, "glob", map[string]any{"pattern": "*.go"})
	got := fsMustOK(t, r)
	if !strings.HasPrefix(got, "f000.go\nf001.go\n") || strings.Contains(got, "f100.go") || strings.Contains(got, "notes.txt") {
		t.Errorf("not the 100 newest .go files: %q...", got[:min(len(got), 100)])
	}
	if !strings.HasSuffix(got, "showing 100 of at least 101; narrow the pattern or path") {
		t.Errorf("got ...%q", got[max(0, len(got)-120):])
	}
	if !strings.Contains(got, "f099.go\n\n100 files match \"*.go\" under \".\" (newest first)\n") {
		t.Errorf("results and summary not separated: ...%q", got[max(0, len(got)-200):])
	}
	if r.Evidence["files"] != 100 || r.Evidence["shown"] != 100 || r.Evidence["truncated"] != true {
		t.Errorf("evidence = %v", r.Evidence)
	}
	// A smaller max_results is the bound in force.
	got = fsMustOK(t, w.call(t, "glob", map[string]any{"pattern": "*.go", "max_results": 5}))
	if !strings.HasPrefix(got, "f000.go\nf001.go\nf002.go\nf003.go\nf004.go\n\n5 files match") ||
		!strings.HasSuffix(got, "showing 5 of at least 6; narrow the pattern or path") {
		t.Errorf("max_results 5: %q", got)
	}
}

// BH-018: a SearchTimeout that passes mid-walk returns what was found,
// marked partial. In a synctest bubble the deadline passes at a known point
// of the walk: the sandbox's ctx waits, from its 50th poll on, for the
// deadline, and the fake clock jumps to it. Every file matches once, so
// "what was found" is exact: one match per file searched. (Before, a real
// deadline at a quarter of a measured walk was retried until one try came
// back partial.)
func TestGrepTimeoutReturnsPartialResults(t *testing.T) { // BH-018
	synctest.Test(t, func(t *testing.T) {
		w := newFSWorld(t, nil)
		const files = 6000
		for i := range files {
			w.file(t, fmt.Sprintf("svc-%02d/f%d.txt", i%30, i), "export default 1\n")
		}
		args := map[string]any{"pattern": "export"}
		opts := &FSOptions{SearchTimeout: 2 * time.Second, SearchMaxResults: files} // every match counted
		r := fsCall(t, fsToolsByName(t, w.sb, opts), "grep", args)
		if fsMustOK(t, r); r.Evidence["partial"] != false || r.Evidence["files_searched"] != files || r.Evidence["matches"] != files {
			t.Fatalf("full walk: evidence %v", r.Evidence)
		}

		timeout := opts.SearchTimeout
		start := time.Now()
		r = fsCall(t, fsToolsByName(t, &deadlineAtPoll{Sandbox: w.sb, poll: 50}, opts), "grep", args)
		if d := time.Since(start); d != timeout {
			t.Errorf("the walk ended %v after it started, want at the %v deadline", d, timeout)
		}
		got := fsMustOK(t, r)
		n, _ := r.Evidence["files_searched"].(int)
		if r.Evidence["partial"] != true || n < 1 || n > files/2 || r.Evidence["matches"] != n {
			t.Fatalf("partial walk: evidence %v, want partial with one match per file searched (of %d files)", r.Evidence, files)
		}
		want := fmt.Sprintf("timed out after %s; searched %s; results are partial; narrow path or add a pattern",
			fsDuration(timeout), fsPlural(n, "file", "files"))
		if !strings.Contains(got, "\n1:export default 1\n") || !strings.Contains(got, want) {
			t.Errorf("got %q\nwant matches and %q", got, want)
		}
	})

	// A deadline already expired when the walk starts (real clock: the
	// fake one stands still while the walk runs): nothing found, an
	// Execution error that still says what to do.
	w := newFSWorld(t, nil)
	for i := range 30 {
		w.file(t, fmt.Sprintf("d%02d/f.txt", i), "x\n")
	}
	got := fsMustFail(t, fsCall(t, fsToolsByName(t, w.sb, &FSOptions{SearchTimeout: time.Nanosecond}), "glob",
		map[string]any{"pattern": "**"}), tool.Execution)
	if !strings.Contains(got, "timed out after 0 ms before any result came back") || !strings.Contains(got, "narrow path") {
		t.Errorf("got %q", got)
	}
}

// deadlineAtPoll is the local sandbox with a Search whose ctx, from its
// poll-th Err call on, waits until ctx's own deadline has passed: in a
// synctest bubble the fake clock jumps there once every walker waits, so
// the deadline passes at a known point of the walk.
type deadlineAtPoll struct {
	*localsandbox.Sandbox
	poll int64
}

func (d *deadlineAtPoll) Search(ctx context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
	c := &waitAtPoll{Context: ctx}
	c.left.Store(d.poll)
	return d.Sandbox.Search(c, req)
}

type waitAtPoll struct {
	context.Context
	left atomic.Int64
}

func (c *waitAtPoll) Err() error {
	if c.left.Add(-1) <= 0 { // from then on: parallel walkers all wait
		<-c.Done()
	}
	return c.Context.Err()
}

func TestFormatMatchesClipsLongLine(t *testing.T) { // BH-019
	line := `{"k":"FINDME","pad":"` + strings.Repeat("y", 100_000) + `"}`
	for _, adapterClips := range []bool{false, true} {
		text := line
		if adapterClips {
			text = line[:400]
		}
		got, shown := formatMatches([]sandbox.Match{{Path: "data.json", Line: 1, Text: text, Chars: len(line)}},
			grepRegexp(grepInput{Pattern: "FINDME"}), 400, 30000)
		if shown != 1 || !strings.Contains(got, "1:{\"k\":\"FINDME\"") ||
			!strings.Contains(got, "…[line 1 clipped: 400 of 100,023 characters shown]") {
			t.Errorf("adapterClips=%v: got %q", adapterClips, got)
		}
		if len(got) > 600 {
			t.Errorf("adapterClips=%v: %d bytes of output", adapterClips, len(got))
		}
	}
	// A match far into the line keeps a window around it.
	far := strings.Repeat("y", 5000) + "FINDME" + strings.Repeat("z", 5000)
	got, _ := formatMatches([]sandbox.Match{{Path: "d", Line: 3, Text: far}}, grepRegexp(grepInput{Pattern: "findme", IgnoreCase: true}), 400, 30000)
	if !strings.Contains(got, "3:…y") || !strings.Contains(got, "FINDME") {
		t.Errorf("window lost the match: %q", got)
	}
}

func TestFormatMatchesGroupsAndMergesContext(t *testing.T) {
	ms := []sandbox.Match{
		{Path: "b.go", Line: 2, Text: "m2", Before: []sandbox.Line{{Number: 1, Text: "c1"}}, After: []sandbox.Line{{Number: 3, Text: "m3"}}},
		{Path: "b.go", Line: 3, Text: "m3", Before: []sandbox.Line{{Number: 2, Text: "m2"}}, After: []sandbox.Line{{Number: 4, Text: "c4"}}},
		{Path: "b.go", Line: 9, Text: "m9"},
		{Path: "a.go", Line: 1, Text: "\tx"},
	}
	got, shown := formatMatches(ms, nil, 400, 30000)
	want := "b.go\n1-c1\n2:m2\n3:m3\n4-c4\n--\n9:m9\n\na.go\n1:\tx"
	if got != want || shown != 4 {
		t.Errorf("got %q (%d)\nwant %q", got, shown, want)
	}
}

func TestGrepOutputStaysWithinBound(t *testing.T) {
	w := newFSWorld(t, &FSOptions{MaxOutputChars: 5000})
	for i := range 100 {
		w.file(t, fmt.Sprintf("f%d.txt", i), strings.Repeat("x", 400)+"\n")
	}
	r := w.call(t, "grep", map[string]any{"pattern": "x"})
	got := fsMustOK(t, r)
	if r.Evidence["matches"] != 100 {
		t.Fatalf("the adapter found %v matches, want 100", r.Evidence["matches"])
	}
	if len(got) > 5500 {
		t.Errorf("output is %d bytes, bound 5,000 characters", len(got))
	}
	if !strings.Contains(got, "output cut at 5,000 characters after") || r.Evidence["truncated"] != true {
		t.Errorf("no cut marker: ...%q", got[max(0, len(got)-200):])
	}
}

func TestFSCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 65544: "65,544", 2000000: "2,000,000", -1234: "-1,234"} {
		if got := fsCount(n); got != want {
			t.Errorf("fsCount(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestReadTrackerIsSafeForConcurrentUse(t *testing.T) {
	f := &fsTools{sb: newFSWorld(t, nil).sb, seen: map[string]string{}}
	done := make(chan bool)
	for i := range 8 {
		go func() {
			for j := range 200 {
				p := fmt.Sprintf("f%d.txt", (i+j)%5)
				f.remember("s-"+p, p)
				if sha, ok := f.lastSeen(p); ok && sha != "s-"+p {
					t.Errorf("lastSeen(%s) = %s", p, sha)
				}
			}
			done <- true
		}()
	}
	for range 8 {
		<-done
	}
}
