package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
)

func runWrite(t *testing.T, newSandbox suite) {
	t.Run("create with parents, evidence read back", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		w, err := e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "a/b/c.txt", Content: []byte("hello\n")})
		noError(t, err)
		if got := e.read("a/b/c.txt"); got != "hello\n" {
			t.Errorf("on disk %q", got)
		}
		if !w.Created || w.Bytes != 6 || w.SHA256 != sha("hello\n") || w.Path != "a/b/c.txt" {
			t.Errorf("result = %+v", w)
		}
		if names := e.names(filepath.Join(e.ws, "a", "b")); !equalStrings(names, []string{"c.txt"}) {
			t.Errorf("directory holds %q, want only c.txt", names)
		}
	})

	t.Run("replace keeps mode, no temporary file", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("run.sh", "old\n")
		p := filepath.Join(e.ws, "run.sh")
		if err := e.fx.chmod(p, 0o751); err != nil {
			t.Fatal(err)
		}
		w, err := e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "run.sh", Content: []byte("#!/bin/sh\necho new\n")})
		noError(t, err)
		fi, err := e.fx.lstat(p)
		noError(t, err)
		if fi.mode.Perm() != 0o751 {
			t.Errorf("mode = %v, want 0751", fi.mode.Perm())
		}
		if w.Created || w.Bytes != 19 || e.read("run.sh") != "#!/bin/sh\necho new\n" {
			t.Errorf("result %+v, disk %q", w, e.read("run.sh"))
		}
		if names := e.names(e.ws); !equalStrings(names, []string{"run.sh"}) {
			t.Errorf("workspace holds %q", names)
		}
		// Empty content is a valid write.
		w, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "run.sh"})
		noError(t, err)
		if w.Bytes != 0 || w.SHA256 != sha("") || e.read("run.sh") != "" {
			t.Errorf("empty write: %+v", w)
		}
	})

	t.Run("errors leave nothing behind", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("file.txt", "x")
		e.write("dir/keep", "")
		_, err := e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "missing/f.txt", Content: []byte("x"), NoCreateParents: true})
		wantErr(t, err, sandbox.ErrNotFound)
		if e.exists(filepath.Join(e.ws, "missing")) {
			t.Error("NoCreateParents created the parent")
		}
		_, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "dir", Content: []byte("x")})
		wantErr(t, err, sandbox.ErrIsDir)
		_, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "file.txt/sub.txt", Content: []byte("x")})
		wantErr(t, err, sandbox.ErrNotDir)
		_, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: ".", Content: []byte("x")})
		wantErr(t, err, sandbox.ErrIsDir)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = e.sb.Write(ctx, sandbox.WriteRequest{Path: "file.txt", Content: []byte("y")})
		wantErr(t, err, context.Canceled)
		if e.read("file.txt") != "x" {
			t.Error("cancelled write changed the file")
		}
		if names := e.names(e.ws); !equalStrings(names, []string{"dir", "file.txt"}) {
			t.Errorf("workspace holds %q", names)
		}
	})
}

func runEdit(t *testing.T, newSandbox suite) {
	edit := func(e *env, p string, reps ...sandbox.Replacement) (*sandbox.EditResult, error) {
		return e.sb.Edit(e.ctx, sandbox.EditRequest{Path: p, Edits: reps})
	}
	one := func(old, nw string) sandbox.Replacement { return sandbox.Replacement{Old: old, New: nw} }

	t.Run("BH-001 CRLF file, LF old_string", func(t *testing.T) {
		for _, old := range []string{"red\ngreen", "red\r\ngreen"} {
			e := newEnv(t, newSandbox)
			e.write("notes.txt", "red\r\ngreen\r\nblue\r\n")
			r, err := edit(e, "notes.txt", one(old, "RED\nGREEN"))
			noError(t, err)
			want := "RED\r\nGREEN\r\nblue\r\n"
			if got := e.read("notes.txt"); got != want {
				t.Errorf("old %q: bytes %s, want %s", old, hexBytes([]byte(got)), hexBytes([]byte(want)))
			}
			if r.Replacements != 1 || r.Bytes != int64(len(want)) || r.SHA256 != sha(want) {
				t.Errorf("result = %+v", r)
			}
		}
	})

	t.Run("BH-001 mixed endings: each replaced line keeps its ending", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("m.txt", "a\r\nb\nc\r\n")
		_, err := edit(e, "m.txt", one("b\nc", "B\nC"))
		noError(t, err)
		if got := e.read("m.txt"); got != "a\r\nB\nC\r\n" {
			t.Errorf("got %q, want %q", got, "a\r\nB\nC\r\n")
		}
		e.write("m2.txt", "a\r\nb\nc\r\nd\n")
		_, err = edit(e, "m2.txt", one("a\nb\n", "1\n2\n"))
		noError(t, err)
		if got := e.read("m2.txt"); got != "1\r\n2\nc\r\nd\n" {
			t.Errorf("got %q, want %q", got, "1\r\n2\nc\r\nd\n")
		}
		// New lines beyond the replaced ones take the file's local ending.
		e.write("crlf.txt", "x\r\ny\r\n")
		_, err = edit(e, "crlf.txt", one("x", "x1\nx2\nx3"))
		noError(t, err)
		if got := e.read("crlf.txt"); got != "x1\r\nx2\r\nx3\r\ny\r\n" {
			t.Errorf("got %q", got)
		}
	})

	t.Run("BH-001 uniqueness is counted after adapting endings", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("u.txt", "red\r\ngreen\nred\ngreen\n")
		s := e.snap("u.txt")
		_, err := edit(e, "u.txt", one("red\ngreen", "X"))
		wantErr(t, err, sandbox.ErrAmbiguous)
		var ee *sandbox.EditError
		if !errors.As(err, &ee) || ee.Matches != 2 || ee.Index != 0 {
			t.Errorf("EditError = %+v", ee)
		}
		e.unchanged("u.txt", s)
		r, err := e.sb.Edit(e.ctx, sandbox.EditRequest{Path: "u.txt", Edits: []sandbox.Replacement{{Old: "red\r\ngreen", New: "X", ReplaceAll: true}}})
		noError(t, err)
		if got := e.read("u.txt"); got != "X\nX\n" || r.Replacements != 2 {
			t.Errorf("replace_all: %q, %d replacements", got, r.Replacements)
		}
	})

	t.Run("BH-002 tab-indented file", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		orig := "func f(x int) int {\n\tif x > 0 {\n\t\treturn x\n\t}\n\treturn 0\n}\n"
		e.write("calc.go", orig)
		s := e.snap("calc.go")
		_, err := edit(e, "calc.go", one("    if x > 0 {\n        return x", "    if x > 1 {\n        return x"))
		wantErr(t, err, sandbox.ErrNoMatch)
		var ee *sandbox.EditError
		if !errors.As(err, &ee) {
			t.Fatalf("%v is not an *EditError", err)
		}
		if len(ee.Candidates) == 0 || !strings.Contains(ee.Candidates[0], "lines 2-3 match if whitespace is ignored; the file indents with TAB (0x09)") {
			t.Errorf("Candidates = %q", ee.Candidates)
		}
		e.unchanged("calc.go", s)
		r, err := edit(e, "calc.go", one("\tif x > 0 {\n\t\treturn x", "\tif x > 1 {\n\t\treturn x"))
		noError(t, err)
		want := "func f(x int) int {\n\tif x > 1 {\n\t\treturn x\n\t}\n\treturn 0\n}\n"
		if got := e.read("calc.go"); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		// Region: the changed line 2 with up to 3 lines of context, as on disk.
		if r.StartLine != 1 || r.EndLine != 5 || len(r.Region) != 5 || r.Region[1].Text != "\tif x > 1 {" || r.Region[1].Number != 2 {
			t.Errorf("Region %d-%d = %+v", r.StartLine, r.EndLine, r.Region)
		}
	})

	t.Run("BH-003 typographic quotes are never rewritten", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("story.md", "He said, \u201Cwait.\u201D\nShe didn\u2019t.\n")
		_, err := edit(e, "story.md", one("wait.", "stop."))
		noError(t, err)
		if got := e.read("story.md"); got != "He said, \u201Cstop.\u201D\nShe didn\u2019t.\n" {
			t.Errorf("step 2: %s", hexBytes([]byte(got)))
		}
		_, err = edit(e, "story.md", one("didn\u2019t", "did not"))
		noError(t, err)
		if got := e.read("story.md"); got != "He said, \u201Cstop.\u201D\nShe did not.\n" {
			t.Errorf("step 3: %q", got)
		}
		// An ASCII quote in old_string does not match the curly one; the
		// hint says why, and nothing is written.
		s := e.snap("story.md")
		_, err = edit(e, "story.md", one("said, \"stop.\"", "x"))
		wantErr(t, err, sandbox.ErrNoMatch)
		var ee *sandbox.EditError
		if errors.As(err, &ee); ee == nil || len(ee.Candidates) == 0 || !strings.Contains(ee.Candidates[0], "line 1") || !strings.Contains(ee.Candidates[0], "U+201C") {
			t.Errorf("Candidates = %+v", ee)
		}
		e.unchanged("story.md", s)
		e.write("q.sh", "x = 1\n")
		_, err = edit(e, "q.sh", one("x = 1", "x = \"ok\""))
		noError(t, err)
		if got := e.read("q.sh"); got != "x = \x22ok\x22\n" {
			t.Errorf("q.sh = %s", hexBytes([]byte(got)))
		}
	})

	t.Run("BH-005 replacement tokens are literal", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("tag.js", "const tag = \"PRICE\";\nconst other = \"PRICE\";\n")
		nw := "$& costs $1 or $$ or ${1}"
		r, err := e.sb.Edit(e.ctx, sandbox.EditRequest{Path: "tag.js", Edits: []sandbox.Replacement{{Old: "PRICE", New: nw, ReplaceAll: true}}})
		noError(t, err)
		want := "const tag = \"" + nw + "\";\nconst other = \"" + nw + "\";\n"
		if got := e.read("tag.js"); got != want || r.Replacements != 2 {
			t.Errorf("replace_all: %q (%d)", got, r.Replacements)
		}
		e.write("one.js", "const tag = \"PRICE\";\n")
		_, err = edit(e, "one.js", one("PRICE", nw))
		noError(t, err)
		if got := e.read("one.js"); got != "const tag = \"$& costs $1 or $$ or ${1}\";\n" {
			t.Errorf("single: %q", got)
		}
	})

	t.Run("BH-006 failed match writes nothing", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("Gemfile", "source 'repo'\ngem 'alpha'\ngem 'beta'\n")
		s := e.snap("Gemfile")
		_, err := edit(e, "Gemfile", one("gem 'gamma'", "gem 'delta'"))
		wantErr(t, err, sandbox.ErrNoMatch)
		if strings.Contains(strings.ToLower(err.Error()), "revert") {
			t.Errorf("error claims a revert: %v", err)
		}
		e.unchanged("Gemfile", s)
		_, err = edit(e, "Gemfile", one("gem 'alpha'", "gem 'ALPHA'"), one("gem 'gamma'", "gem 'delta'"))
		wantErr(t, err, sandbox.ErrNoMatch)
		var ee *sandbox.EditError
		if !errors.As(err, &ee) || ee.Index != 1 {
			t.Errorf("EditError = %+v, want Index 1", ee)
		}
		e.unchanged("Gemfile", s)
		// A batch that matches throughout applies in order, once.
		r, err := edit(e, "Gemfile", one("gem 'alpha'", "gem 'ALPHA'"), one("gem 'ALPHA'\ngem 'beta'", "gem 'ab'"))
		noError(t, err)
		if got := e.read("Gemfile"); got != "source 'repo'\ngem 'ab'\n" || r.Replacements != 2 {
			t.Errorf("batch: %q (%d)", got, r.Replacements)
		}
	})

	t.Run("BH-007 BOM neither added nor removed", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("a.md", "# t\r\nold\r\n")
		_, err := edit(e, "a.md", one("old", "new"))
		noError(t, err)
		if got := e.read("a.md"); got != "# t\r\nnew\r\n" {
			t.Errorf("a.md = %s", hexBytes([]byte(got)))
		}
		e.write("s.ps1", "\xEF\xBB\xBFWrite-Host 'hi'\r\n")
		r, err := edit(e, "s.ps1", one("Write-Host 'hi'", "Write-Host 'bye'"))
		noError(t, err)
		if got := e.read("s.ps1"); got != "\xEF\xBB\xBFWrite-Host 'bye'\r\n" {
			t.Errorf("s.ps1 = %s", hexBytes([]byte(got)))
		}
		if len(r.Region) != 1 || r.Region[0].Text != "Write-Host 'bye'" {
			t.Errorf("Region = %+v", r.Region)
		}
		rd, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "s.ps1"})
		noError(t, err)
		if !rd.BOM || rd.Lines[0].Text != "Write-Host 'bye'" {
			t.Errorf("read: BOM=%v line 1 %q", rd.BOM, rd.Lines[0].Text)
		}
	})

	t.Run("BH-009 substring that ends mid-line", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("draw.cpp", "  x = 1;\n  }\n\n  // Build trees with wind and light\n")
		_, err := edit(e, "draw.cpp", one("  }\n\n  // Build trees", "  }\n\n  // Grow trees"))
		noError(t, err)
		if got := e.read("draw.cpp"); got != "  x = 1;\n  }\n\n  // Grow trees with wind and light\n" {
			t.Errorf("got %q", got)
		}
	})

	t.Run("BH-010 empty old_string and no-op", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("w.txt", "abcd\n")
		s := e.snap("w.txt")
		for _, all := range []bool{false, true} {
			_, err := e.sb.Edit(e.ctx, sandbox.EditRequest{Path: "w.txt", Edits: []sandbox.Replacement{{Old: "", New: "X", ReplaceAll: all}}})
			wantErr(t, err, sandbox.ErrEmptyOld)
			e.unchanged("w.txt", s)
		}
		_, err := edit(e, "w.txt", one("ab", "ab"))
		wantErr(t, err, sandbox.ErrNoOp)
		if errors.Is(err, sandbox.ErrNoMatch) || err.Error() == sandbox.ErrNoMatch.Error() {
			t.Errorf("no-op error %v reads like not found", err)
		}
		e.unchanged("w.txt", s)
	})

	t.Run("ExpectedSHA256", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("f.txt", "one\n")
		s := e.snap("f.txt")
		_, err := e.sb.Edit(e.ctx, sandbox.EditRequest{Path: "f.txt", Edits: []sandbox.Replacement{one("one", "two")}, ExpectedSHA256: sha("something else")})
		wantErr(t, err, sandbox.ErrStale)
		e.unchanged("f.txt", s)
		r, err := e.sb.Edit(e.ctx, sandbox.EditRequest{Path: "f.txt", Edits: []sandbox.Replacement{one("one", "two")}, ExpectedSHA256: sha("one\n")})
		noError(t, err)
		if r.SHA256 != sha("two\n") || e.read("f.txt") != "two\n" {
			t.Errorf("result %+v", r)
		}
	})

	t.Run("ambiguous, mode kept, missing file", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("d.txt", "x\nx\n")
		if err := e.fx.chmod(filepath.Join(e.ws, "d.txt"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := e.snap("d.txt")
		_, err := edit(e, "d.txt", one("x", "y"))
		wantErr(t, err, sandbox.ErrAmbiguous)
		var ee *sandbox.EditError
		if !errors.As(err, &ee) || ee.Matches != 2 || fmt.Sprint(ee.MatchLines) != "[1 2]" || len(ee.Candidates) == 0 || !strings.Contains(ee.Candidates[0], "1, 2") {
			t.Errorf("EditError = %+v", ee)
		}
		e.unchanged("d.txt", s)
		_, err = edit(e, "d.txt", one("x\nx", "y"))
		noError(t, err)
		if fi, _ := e.fx.lstat(filepath.Join(e.ws, "d.txt")); fi.mode.Perm() != 0o600 {
			t.Errorf("mode = %v, want 0600", fi.mode.Perm())
		}
		_, err = edit(e, "nope.txt", one("a", "b"))
		wantErr(t, err, sandbox.ErrNotFound)
		if e.exists(filepath.Join(e.ws, "nope.txt")) {
			t.Error("edit created a file")
		}
		if names := e.names(e.ws); !equalStrings(names, []string{"d.txt"}) {
			t.Errorf("workspace holds %q", names)
		}
	})

	t.Run("no Unicode normalization", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		// "é" decomposed (e + U+0301) next to precomposed U+00E9.
		e.write("n.txt", "cafe\u0301 caf\u00e9\n")
		_, err := edit(e, "n.txt", one("caf\u00e9", "CAFE"))
		noError(t, err)
		if got := e.read("n.txt"); got != "cafe\u0301 CAFE\n" {
			t.Errorf("got %q", got)
		}
	})

	t.Run("text in another encoding is edited in it", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		// GBK: "name = 张三 # 用户的名字" and "# 这是我们的数据库设置。"
		gbk := "# \xd5\xe2\xca\xc7\xce\xd2\xc3\xc7\xb5\xc4\xca\xfd\xbe\xdd\xbf\xe2\xc9\xe8\xd6\xc3\xa1\xa3\nname = \xd5\xc5\xc8\xfd # \xd3\xc3\xbb\xa7\xb5\xc4\xc3\xfb\xd7\xd6\n"
		e.write("g.txt", gbk)
		res, err := edit(e, "g.txt", one("张三", "李四"))
		noError(t, err)
		if got := e.read("g.txt"); got != strings.Replace(gbk, "\xd5\xc5\xc8\xfd", "\xc0\xee\xcb\xc4", 1) {
			t.Errorf("bytes %q", got)
		}
		if len(res.Region) != 2 || res.Region[1].Text != "name = 李四 # 用户的名字" || res.Region[1].Chars != 17 {
			t.Errorf("region %+v", res.Region)
		}
	})
}
