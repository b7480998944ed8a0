package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

func runSearch(t *testing.T, newSandbox suite) {
	grep := func(pattern, p string) sandbox.SearchRequest {
		return sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: pattern, Path: p}
	}
	glob := func(pattern, p string) sandbox.SearchRequest {
		return sandbox.SearchRequest{Mode: sandbox.ModeGlob, Pattern: pattern, Path: p}
	}
	files := func(r *sandbox.SearchResult) []string {
		var out []string
		for _, f := range r.Files {
			out = append(out, f.Path)
		}
		return out
	}
	sorted := func(s []string) []string {
		s = append([]string(nil), s...)
		sort.Strings(s)
		return s
	}

	t.Run("BH-015 hidden directories: skipped and said so; named root searched", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write(".github/workflows/ci.yml", "on: push\ntoken: NEEDLE_7Q\n")
		e.write("src/main.go", "package main\n")
		e.write(".git/config", "NEEDLE_7Q\n")

		r, err := e.sb.Search(e.ctx, grep("NEEDLE_7Q", "."))
		noError(t, err)
		if len(r.Matches) != 0 || !equalStrings(r.SkippedHidden, []string{".github"}) {
			t.Errorf("grep .: matches %+v, SkippedHidden %q; want none and [.github]", r.Matches, r.SkippedHidden)
		}
		if r.FilesSearched != 1 {
			t.Errorf("FilesSearched = %d, want 1 (src/main.go)", r.FilesSearched)
		}
		r, err = e.sb.Search(e.ctx, grep("NEEDLE_7Q", ".github"))
		noError(t, err)
		if len(r.Matches) != 1 || r.Matches[0].Path != ".github/workflows/ci.yml" || r.Matches[0].Line != 2 || r.Matches[0].Text != "token: NEEDLE_7Q" {
			t.Errorf("grep .github: %+v", r.Matches)
		}
		req := grep("NEEDLE_7Q", ".")
		req.IncludeHidden = true
		r, err = e.sb.Search(e.ctx, req)
		noError(t, err)
		if len(r.Matches) != 1 || r.Matches[0].Path != ".github/workflows/ci.yml" || len(r.SkippedHidden) != 0 {
			t.Errorf("include_hidden: %+v (.git must never be searched)", r.Matches)
		}
	})

	t.Run("BH-017 circular directory symlink", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("pkg/a.go", "package pkg\n")
		e.symlink("../..", "pkg/sub/loop")
		r, err := e.sb.Search(e.ctx, glob("**/*.go", "."))
		noError(t, err)
		if got := files(r); !equalStrings(got, []string{"pkg/a.go"}) {
			t.Errorf("glob = %q, want [pkg/a.go]", got)
		}
		r, err = e.sb.Search(e.ctx, grep("package", "."))
		noError(t, err)
		if len(r.Matches) != 1 || r.Matches[0].Path != "pkg/a.go" || r.Total != 1 {
			t.Errorf("grep = %+v", r.Matches)
		}
	})

	t.Run("BH-018 nested .gitignore prunes before descending", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		var want []string
		for i := range 20 {
			svc := fmt.Sprintf("svc-%02d", i)
			e.write(svc+"/src/lib/uri.js", "export const uri = 1;\n")
			e.write(svc+"/.gitignore", "node_modules/\n")
			for j := range 5 {
				e.write(fmt.Sprintf("%s/node_modules/m%d/index.js", svc, j), "export default 0;\n")
			}
			want = append(want, svc+"/src/lib/uri.js")
		}
		r, err := e.sb.Search(e.ctx, glob("*/src/lib/uri.js", "."))
		noError(t, err)
		if got := sorted(files(r)); !equalStrings(got, want) || r.Total != 20 || r.Truncated {
			t.Errorf("glob = %q (Total %d)", got, r.Total)
		}
		if r.FilesSearched != 20 {
			t.Errorf("glob tested %d files, want 20 (node_modules pruned)", r.FilesSearched)
		}
		r, err = e.sb.Search(e.ctx, grep("export", "."))
		noError(t, err)
		if r.Total != 20 || r.FilesSearched != 20 || r.Ignored != 20 || r.Partial {
			t.Errorf("grep: Total %d FilesSearched %d Ignored %d Partial %v, want 20 20 20 false", r.Total, r.FilesSearched, r.Ignored, r.Partial)
		}
		req := grep("export", ".")
		req.NoIgnore = true
		req.MaxResults = 1000
		r, err = e.sb.Search(e.ctx, req)
		noError(t, err)
		if r.Total != 120 || r.Ignored != 0 {
			t.Errorf("no_ignore: Total %d Ignored %d, want 120 0", r.Total, r.Ignored)
		}
		// An ignored directory named as the root is searched.
		r, err = e.sb.Search(e.ctx, grep("export", "svc-03/node_modules"))
		noError(t, err)
		if r.Total != 5 {
			t.Errorf("grep in named ignored dir: Total %d, want 5", r.Total)
		}
	})

	t.Run("gitignore rules: anchors, negation, files, info/exclude", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write(".gitignore", "*.log\n!keep.log\n/build\n")
		e.write(".git/info/exclude", "secret.txt\n")
		e.write("a.log", "hit\n")
		e.write("keep.log", "hit\n")
		e.write("build/out.txt", "hit\n")
		e.write("src/build/gen.txt", "hit\n")
		e.write("secret.txt", "hit\n")
		e.write("src/x.txt", "hit\n")
		r, err := e.sb.Search(e.ctx, grep("hit", "."))
		noError(t, err)
		var got []string
		for _, m := range r.Matches {
			got = append(got, m.Path)
		}
		if want := []string{"keep.log", "src/build/gen.txt", "src/x.txt"}; !equalStrings(sorted(got), want) {
			t.Errorf("matches in %q, want %q", sorted(got), want)
		}
		if r.Ignored != 3 || r.SkippedHiddenFiles != 1 {
			t.Errorf("Ignored %d SkippedHiddenFiles %d, want 3 and 1 (.gitignore)", r.Ignored, r.SkippedHiddenFiles)
		}
	})

	t.Run("BH-019 huge line clipped around the match", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("data.json", `{"k":"FINDME","pad":"`+strings.Repeat("y", 100_000)+`"}`)
		req := grep("FINDME", "data.json")
		req.MaxResults = 1
		r, err := e.sb.Search(e.ctx, req)
		noError(t, err)
		if len(r.Matches) != 1 || r.Total != 1 || r.Truncated {
			t.Fatalf("matches %d Total %d Truncated %v", len(r.Matches), r.Total, r.Truncated)
		}
		m := r.Matches[0]
		if m.Chars != 100_023 || len([]rune(m.Text)) != 400 || !strings.Contains(m.Text, "FINDME") || m.TextStart != 0 || m.Line != 1 {
			t.Errorf("match: Chars %d, %d chars of text, TextStart %d", m.Chars, len([]rune(m.Text)), m.TextStart)
		}
		e.write("tail.json", strings.Repeat("y", 100_000)+"FINDME"+strings.Repeat("z", 1000))
		r, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "FINDME", Path: "tail.json", MaxLineChars: 100})
		noError(t, err)
		m = r.Matches[0]
		if m.Chars != 101_006 || len(m.Text) != 100 || m.TextStart != 100_000-47 || m.Text[47:53] != "FINDME" {
			t.Errorf("tail: Chars %d TextStart %d Text %q", m.Chars, m.TextStart, m.Text)
		}
	})

	t.Run("MaxResults, Total, newest first", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		base := time.Now().Add(-time.Hour)
		for i, name := range []string{"old.txt", "mid.txt", "new.txt"} {
			e.write(name, "hit 1\nhit 2\n")
			mt := base.Add(time.Duration(i) * time.Minute)
			if err := e.fx.chtimes(filepath.Join(e.ws, name), mt); err != nil {
				t.Fatal(err)
			}
		}
		r, err := e.sb.Search(e.ctx, grep("hit", "."))
		noError(t, err)
		if got := files(r); !equalStrings(got, []string{"new.txt", "mid.txt", "old.txt"}) {
			t.Errorf("files = %q, want newest first", got)
		}
		req := grep("hit", ".")
		req.MaxResults = 3
		r, err = e.sb.Search(e.ctx, req)
		noError(t, err)
		var got []string
		for _, m := range r.Matches {
			got = append(got, fmt.Sprintf("%s:%d", m.Path, m.Line))
		}
		if !equalStrings(got, []string{"new.txt:1", "new.txt:2", "mid.txt:1"}) || !r.Truncated || r.Total != 6 {
			t.Errorf("matches %q Truncated %v Total %d", got, r.Truncated, r.Total)
		}
		r, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGlob, Pattern: "*.txt", MaxResults: 2})
		noError(t, err)
		if got := files(r); !equalStrings(got, []string{"new.txt", "mid.txt"}) || !r.Truncated || r.Total != 3 {
			t.Errorf("glob max 2: %q Truncated %v Total %d", got, r.Truncated, r.Total)
		}
	})

	t.Run("literal, ignore case, include, exclude, context", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("a.go", "x := a.b\nx := aXb\nFoo\n")
		e.write("sub/b.go", "a.b\n")
		e.write("sub/c.txt", "a.b\n")
		e.write("vendor/d.go", "a.b\n")

		r, err := e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "a.b", Path: "a.go"})
		noError(t, err)
		if r.Total != 2 {
			t.Errorf("regexp a.b: Total %d, want 2", r.Total)
		}
		r, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "a.b", Path: "a.go", Literal: true})
		noError(t, err)
		if r.Total != 1 || r.Matches[0].Line != 1 {
			t.Errorf("literal a.b: %+v", r.Matches)
		}
		r, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "foo", IgnoreCase: true})
		noError(t, err)
		if r.Total != 1 || r.Matches[0].Text != "Foo" {
			t.Errorf("ignore case: %+v", r.Matches)
		}
		r, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "a.b", Literal: true, Include: []string{"*.go"}, Exclude: []string{"vendor"}})
		noError(t, err)
		if got := sorted(files(r)); !equalStrings(got, []string{"a.go", "sub/b.go"}) {
			t.Errorf("include *.go exclude vendor: %q", got)
		}
		r, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGlob, Pattern: "**/*.GO", IgnoreCase: true, Exclude: []string{"sub/**"}})
		noError(t, err)
		if got := sorted(files(r)); !equalStrings(got, []string{"a.go", "vendor/d.go"}) {
			t.Errorf("glob ignore case, exclude sub/**: %q", got)
		}
		r, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "aXb", Path: "a.go", ContextLines: 1})
		noError(t, err)
		if len(r.Matches) != 1 || !equalStrings(texts(r.Matches[0].Before), []string{"x := a.b"}) || !equalStrings(texts(r.Matches[0].After), []string{"Foo"}) {
			t.Errorf("context: %+v", r.Matches)
		}
		if r.Matches[0].Before[0].Number != 1 || r.Matches[0].After[0].Number != 3 {
			t.Errorf("context line numbers: %+v", r.Matches[0])
		}
	})

	t.Run("binary files skipped, CRLF stripped", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("blob.bin", "needle\x00\x01\x02")
		e.write("dos.txt", "a needle\r\n")
		r, err := e.sb.Search(e.ctx, grep("needle$", "."))
		noError(t, err)
		if len(r.Matches) != 1 || r.Matches[0].Path != "dos.txt" || r.Matches[0].Text != "a needle" || r.SkippedBinary != 1 || r.FilesSearched != 2 {
			t.Errorf("matches %+v SkippedBinary %d FilesSearched %d", r.Matches, r.SkippedBinary, r.FilesSearched)
		}
	})

	t.Run("errors", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("a.txt", "x\n")
		for _, req := range []sandbox.SearchRequest{
			grep("(unclosed", "."),
			glob("[", "."),
			{Mode: "find", Pattern: "x"},
			{Mode: sandbox.ModeGrep, Pattern: "x", Include: []string{"["}},
		} {
			_, err := e.sb.Search(e.ctx, req)
			wantErr(t, err, sandbox.ErrBadPattern)
		}
		_, err := e.sb.Search(e.ctx, grep("x", "missing"))
		wantErr(t, err, sandbox.ErrNotFound)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r, err := e.sb.Search(ctx, grep("x", "."))
		if err == nil && (r == nil || !r.Partial) {
			t.Errorf("cancelled ctx: %+v, nil error; want an error or a Partial result", r)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled ctx: error %v does not wrap context.Canceled", err)
		}
	})
}
