package coretools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

func TestFilesystemToolsOrderAnnotationsAndSchemas(t *testing.T) {
	tools := Filesystem(&fsFake{}, nil)
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
	byName := fsToolsByName(t, &fsFake{}, &FSOptions{ReadMaxLines: 1234, SearchMaxResults: 77, SearchTimeout: 3 * time.Second})
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
	if o != want {
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
	want := "     3→c\n     4→d\n\nshowing lines 3-4 of 10; call read_file with offset=5 to continue"
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
	if !strings.Contains(got, "showing lines 1-2 of 10 (stopped at the 25-byte bound per call); call read_file with offset=3 to continue") {
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
	if !strings.Contains(got, "note: the file's text encoding is windows-1252; lines are shown converted to UTF-8") {
		t.Errorf("encoding not named: %q", got)
	}
	if !strings.Contains(got, "     1→caf\uFFFD") {
		t.Errorf("invalid byte not replaced: %q", got)
	}
}

// --- read_file through the tool ---------------------------------------------

func TestReadFileBinaryIsAShortNotice(t *testing.T) { // BH-011
	fake := &fsFake{read: func(_ context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
		return &sandbox.ReadResult{Path: req.Path, Kind: sandbox.KindBinary, Size: 65544, Description: "ELF executable"}, nil
	}}
	got := fsMustOK(t, fsCall(t, fsToolsByName(t, fake, nil), "read_file", map[string]any{"path": "bin/tool"}))
	want := "bin/tool: binary file (ELF executable), 65,544 bytes, not shown; use execute with xxd or strings for a bounded view, e.g. `xxd -l 512 bin/tool`"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got %q\nwant prefix %q", got, want)
	}
	// The adapter's own wording is not repeated.
	fake.read = func(_ context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
		return &sandbox.ReadResult{Kind: sandbox.KindBinary, Size: 65544,
			Description: "binary file (ELF header), 65,544 bytes, not shown; use execute with xxd or strings for a bounded view"}, nil
	}
	got = fsMustOK(t, fsCall(t, fsToolsByName(t, fake, nil), "read_file", map[string]any{"path": "bin/tool"}))
	if want := "bin/tool: binary file (ELF header), 65,544 bytes, not shown; use execute with xxd or strings for a bounded view, e.g."; !strings.HasPrefix(got, want) {
		t.Errorf("got %q", got)
	}
}

func TestReadFilePassesBoundsToTheSandbox(t *testing.T) {
	fake := &fsFake{read: func(_ context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
		return &sandbox.ReadResult{Lines: []sandbox.Line{{Number: req.Offset, Text: "x"}}}, nil
	}}
	tools := fsToolsByName(t, fake, &FSOptions{ReadMaxLines: 50, ReadMaxLineChars: 80, ReadMaxBytes: 1000, ReadMaxImageBytes: 99})
	fsMustOK(t, fsCall(t, tools, "read_file", map[string]any{"path": "a", "offset": 7, "limit": 10}))
	// limit above the maximum is refused by the schema.
	fsMustFail(t, fsCall(t, tools, "read_file", map[string]any{"path": "a", "limit": 51}), tool.Parameters)
	want := sandbox.ReadRequest{Path: "a", Offset: 7, Limit: 10, MaxLineChars: 80, MaxBytes: 1000, MaxImageBytes: 99}
	if len(fake.reads) != 1 || fake.reads[0] != want {
		t.Errorf("reads = %+v, want [%+v]", fake.reads, want)
	}
}

// --- edit_file: read tracker and pre-checks ----------------------------------

func TestEditFilePassesDigestOfLastRead(t *testing.T) {
	fake := &fsFake{
		workspace: "/ws",
		read: func(_ context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
			return &sandbox.ReadResult{Path: "a.txt", SHA256: "sha-read", Lines: []sandbox.Line{{Number: 1, Text: "x"}}}, nil
		},
		edit: func(_ context.Context, req sandbox.EditRequest) (*sandbox.EditResult, error) {
			return &sandbox.EditResult{Path: "a.txt", Replacements: 1, SHA256: "sha-edit"}, nil
		},
	}
	tools := fsToolsByName(t, fake, nil)
	edit := map[string]any{"path": "never-read.txt", "old_string": "a", "new_string": "b"}
	fsMustOK(t, fsCall(t, tools, "edit_file", edit))
	fsMustOK(t, fsCall(t, tools, "read_file", map[string]any{"path": "./a.txt"}))
	// Three spellings of the same path share the tracker entry.
	for _, p := range []string{"a.txt", "/ws/a.txt"} {
		edit["path"] = p
		fsMustOK(t, fsCall(t, tools, "edit_file", edit))
	}
	want := []string{"", "sha-read", "sha-edit"}
	for i, e := range fake.edits {
		if e.ExpectedSHA256 != want[i] {
			t.Errorf("edit %d (%s): ExpectedSHA256 = %q, want %q", i, e.Path, e.ExpectedSHA256, want[i])
		}
	}
	// A fresh group has a fresh tracker.
	fresh := fsToolsByName(t, fake, nil)
	edit["path"] = "a.txt"
	fsMustOK(t, fsCall(t, fresh, "edit_file", edit))
	if got := fake.edits[len(fake.edits)-1].ExpectedSHA256; got != "" {
		t.Errorf("a new run inherited digest %q", got)
	}
}

func TestEditFileStaleIsVerification(t *testing.T) {
	fake := &fsFake{edit: func(_ context.Context, req sandbox.EditRequest) (*sandbox.EditResult, error) {
		return nil, &sandbox.PathError{Op: sandbox.OpEdit, Path: req.Path, Err: sandbox.ErrStale}
	}}
	got := fsMustFail(t, fsCall(t, fsToolsByName(t, fake, nil), "edit_file",
		map[string]any{"path": "a.txt", "old_string": "a", "new_string": "b"}), tool.Verification)
	if !strings.Contains(got, "changed on disk") || !strings.Contains(got, "(next: read the file again, then edit)") {
		t.Errorf("got %q", got)
	}
}

func TestEditFileEmptyOldAndNoOpRejectedBeforeSandbox(t *testing.T) { // BH-010
	fake := &fsFake{}
	tools := fsToolsByName(t, fake, nil)
	for _, in := range []map[string]any{
		{"path": "w.txt", "old_string": "", "new_string": "X"},
		{"path": "w.txt", "old_string": "", "new_string": "X", "replace_all": true},
		{"path": "w.txt", "edits": []map[string]any{{"old_string": "ab", "new_string": "AB"}, {"old_string": "", "new_string": "X"}}},
	} {
		got := fsMustFail(t, fsCall(t, tools, "edit_file", in), tool.Parameters)
		if !strings.Contains(got, "old_string must not be empty; use write_file to create a file") {
			t.Errorf("%v: got %q", in, got)
		}
	}
	noop := fsMustFail(t, fsCall(t, tools, "edit_file", map[string]any{"path": "w.txt", "old_string": "ab", "new_string": "ab"}), tool.Parameters)
	if !strings.Contains(noop, "would change nothing") || strings.Contains(noop, "not found") {
		t.Errorf("no-op error = %q", noop)
	}
	if len(fake.edits) != 0 {
		t.Errorf("the sandbox was called %d times", len(fake.edits))
	}
}

func TestEditFileInputShape(t *testing.T) {
	fake := &fsFake{edit: func(_ context.Context, req sandbox.EditRequest) (*sandbox.EditResult, error) {
		return &sandbox.EditResult{Replacements: len(req.Edits)}, nil
	}}
	tools := fsToolsByName(t, fake, nil)
	fsMustFail(t, fsCall(t, tools, "edit_file", map[string]any{"path": "a"}), tool.Parameters)
	fsMustFail(t, fsCall(t, tools, "edit_file", map[string]any{"path": "a", "old_string": "x"}), tool.Parameters)
	fsMustFail(t, fsCall(t, tools, "edit_file", map[string]any{"path": "a", "old_string": "x", "new_string": "y",
		"edits": []map[string]any{{"old_string": "p", "new_string": "q"}}}), tool.Parameters)
	fsMustOK(t, fsCall(t, tools, "edit_file", map[string]any{"path": "a",
		"edits": []map[string]any{{"old_string": "p", "new_string": "q"}, {"old_string": "r", "new_string": "s", "replace_all": true}}}))
	want := []sandbox.Replacement{{Old: "p", New: "q"}, {Old: "r", New: "s", ReplaceAll: true}}
	if len(fake.edits) != 1 || fmt.Sprint(fake.edits[0].Edits) != fmt.Sprint(want) {
		t.Errorf("edits = %+v", fake.edits)
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
	if want := "edit 2: old_string matches 2 times in tag.js; nothing was written"; e.Msg != want {
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
	fake := &fsFake{search: func(_ context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
		return &sandbox.SearchResult{FilesSearched: 1, SkippedHidden: []string{".git", ".github"}}, nil
	}}
	tools := fsToolsByName(t, fake, nil)
	got := fsMustOK(t, fsCall(t, tools, "grep", map[string]any{"pattern": "NEEDLE_7Q", "path": "."}))
	want := `0 matches for "NEEDLE_7Q" under "."; 1 hidden directory (.github) was skipped; set include_hidden to search it`
	if !strings.HasPrefix(got, want) {
		t.Errorf("got  %q\nwant %q...", got, want)
	}
	if !strings.Contains(got, "set no_ignore") {
		t.Errorf("does not say ignored paths were skipped: %q", got)
	}
	got = fsMustOK(t, fsCall(t, tools, "glob", map[string]any{"pattern": "**/*.yml"}))
	if !strings.Contains(got, "1 hidden directory (.github) was skipped") {
		t.Errorf("glob: %q", got)
	}
}

func TestSearchTruncatedSaysHowToNarrow(t *testing.T) {
	fake := &fsFake{search: func(_ context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
		r := &sandbox.SearchResult{Truncated: true}
		for i := range req.MaxResults {
			r.Files = append(r.Files, sandbox.FileHit{Path: fmt.Sprintf("f%03d.go", i)})
		}
		return r, nil
	}}
	got := fsMustOK(t, fsCall(t, fsToolsByName(t, fake, nil), "glob", map[string]any{"pattern": "*.go"}))
	if !strings.HasSuffix(got, "showing 100 of at least 101; narrow the pattern or path") {
		t.Errorf("got ...%q", got[len(got)-120:])
	}
	if !strings.Contains(got, "f099.go\n\n100 files match \"*.go\" under \".\" (newest first)\n") {
		t.Errorf("results and summary not separated: ...%q", got[len(got)-200:])
	}
	if fake.searches[0].MaxResults != 100 || fake.searches[0].Mode != sandbox.ModeGlob {
		t.Errorf("request = %+v", fake.searches[0])
	}
}

func TestGrepTimeoutReturnsPartialResults(t *testing.T) { // BH-018
	fake := &fsFake{search: func(ctx context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
		<-ctx.Done() // a walk that only ends at the deadline
		return &sandbox.SearchResult{FilesSearched: 7,
			Matches: []sandbox.Match{{Path: "svc-01/src/lib/uri.js", Line: 1, Text: "export default 1"}}}, ctx.Err()
	}}
	start := time.Now()
	r := fsCall(t, fsToolsByName(t, fake, &FSOptions{SearchTimeout: 50 * time.Millisecond}), "grep", map[string]any{"pattern": "export"})
	got := fsMustOK(t, r)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v", el)
	}
	if !strings.Contains(got, "1:export default 1") ||
		!strings.Contains(got, "timed out after 50 ms; searched 7 files; results are partial; narrow path or add a pattern") {
		t.Errorf("got %q", got)
	}
	if r.Evidence["partial"] != true {
		t.Errorf("evidence = %v", r.Evidence)
	}

	// Nothing found before the deadline: an Execution error that still says what to do.
	fake.search = func(ctx context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	got = fsMustFail(t, fsCall(t, fsToolsByName(t, fake, &FSOptions{SearchTimeout: 20 * time.Millisecond}), "glob",
		map[string]any{"pattern": "**"}), tool.Execution)
	if !strings.Contains(got, "timed out after 20 ms") || !strings.Contains(got, "narrow path") {
		t.Errorf("got %q", got)
	}
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
	fake := &fsFake{search: func(_ context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
		r := &sandbox.SearchResult{}
		for i := range 100 {
			r.Matches = append(r.Matches, sandbox.Match{Path: fmt.Sprintf("f%d.txt", i), Line: 1, Text: strings.Repeat("x", 400), Chars: 400})
		}
		return r, nil
	}}
	r := fsCall(t, fsToolsByName(t, fake, &FSOptions{MaxOutputChars: 5000}), "grep", map[string]any{"pattern": "x"})
	got := fsMustOK(t, r)
	if len(got) > 5500 {
		t.Errorf("output is %d bytes, bound 5,000 characters", len(got))
	}
	if !strings.Contains(got, "output cut at 5,000 characters after") || r.Evidence["truncated"] != true {
		t.Errorf("no cut marker: ...%q", got[len(got)-200:])
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
	f := &fsTools{sb: &fsFake{workspace: "/ws"}, seen: map[string]string{}}
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
