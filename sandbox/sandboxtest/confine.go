package sandboxtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
)

// runConfinement: kind 8 (path traversal, symlink escape). Nothing outside
// the workspace is ever read, written or created.
func runConfinement(t *testing.T, newSandbox suite) {
	t.Run("BH-055 read through a symlink to a file outside", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		secret := e.writeOut("secret.txt", "s3cr3t\n")
		e.symlink(secret, "leak")
		e.symlink("..", "up")
		e.write("src/main.go", "package main\n")

		_, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "leak"})
		pe := wantOutside(t, err)
		if !strings.Contains(pe.Reason, "symlink leak") {
			t.Errorf("Reason = %q, want it to name the symlink leak", pe.Reason)
		}
		if pe.Path != "leak" || pe.Op != sandbox.OpRead {
			t.Errorf("PathError = %+v, want Op read, Path leak", pe)
		}

		_, err = e.sb.List(e.ctx, sandbox.ListRequest{Path: "up"})
		wantOutside(t, err)

		res, err := e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "s3cr3t", Path: ".", IncludeHidden: true, NoIgnore: true})
		noError(t, err)
		if len(res.Matches) != 0 || res.Total != 0 {
			t.Errorf("grep reported content from outside: %+v", res.Matches)
		}
		res, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGlob, Pattern: "**", Path: ".", IncludeHidden: true})
		noError(t, err)
		for _, f := range res.Files {
			if f.Path != "src/main.go" {
				t.Errorf("glob ** found %q; only src/main.go is a file inside", f.Path)
			}
		}
		_, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "s3cr3t", Path: "up"})
		wantOutside(t, err)
		_, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "s3cr3t", Path: "leak"})
		wantOutside(t, err)
		_, err = e.sb.Edit(e.ctx, sandbox.EditRequest{Path: "leak", Edits: []sandbox.Replacement{{Old: "s3cr3t", New: "x"}}})
		wantOutside(t, err)
		if b := e.readAbs(secret); b != "s3cr3t\n" {
			t.Errorf("outside file changed: %q", b)
		}
	})

	t.Run("BH-055 control: symlink that stays inside works", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("docs/v2/guide.md", "v2 guide\n")
		e.symlink(filepath.Join(e.ws, "docs", "v2"), "docs/current")
		e.symlink("v2/guide.md", "docs/latest.md")

		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "docs/current/guide.md"})
		noError(t, err)
		if got := texts(r.Lines); !equalStrings(got, []string{"v2 guide"}) {
			t.Errorf("read via inside link = %q", got)
		}
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "docs/latest.md"})
		noError(t, err)
		if got := texts(r.Lines); !equalStrings(got, []string{"v2 guide"}) {
			t.Errorf("read via relative inside link = %q", got)
		}
		l, err := e.sb.List(e.ctx, sandbox.ListRequest{Path: "docs/current"})
		noError(t, err)
		if len(l.Entries) != 1 || l.Entries[0].Path != "docs/current/guide.md" || l.Entries[0].Type != sandbox.TypeFile {
			t.Errorf("ls docs/current = %+v", l.Entries)
		}
		res, err := e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "guide", Path: "docs/current"})
		noError(t, err)
		if len(res.Matches) != 1 || res.Matches[0].Path != "docs/current/guide.md" {
			t.Errorf("grep via inside link = %+v", res.Matches)
		}
		w, err := e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "docs/current/new.md", Content: []byte("new\n")})
		noError(t, err)
		if !w.Created || e.read("docs/v2/new.md") != "new\n" {
			t.Errorf("write via inside dir link: %+v, v2/new.md = %q", w, e.read("docs/v2/new.md"))
		}
		// Writing through a final-component link that stays inside writes
		// its target and keeps the link.
		_, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "docs/latest.md", Content: []byte("v2 guide, revised\n")})
		noError(t, err)
		if got := e.read("docs/v2/guide.md"); got != "v2 guide, revised\n" {
			t.Errorf("target of inside link = %q", got)
		}
		if !e.isLink(filepath.Join(e.ws, "docs", "latest.md")) {
			t.Errorf("docs/latest.md is no longer a symlink")
		}
		_, err = e.sb.Edit(e.ctx, sandbox.EditRequest{Path: "docs/latest.md", Edits: []sandbox.Replacement{{Old: "revised", New: "edited"}}})
		noError(t, err)
		if got := e.read("docs/v2/guide.md"); got != "v2 guide, edited\n" {
			t.Errorf("edit via inside link: target = %q", got)
		}
	})

	t.Run("dot-dot and absolute paths", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.writeOut("x.txt", "outside\n")
		e.write("a/in.txt", "inside\n")
		rel, err := filepath.Rel(e.ws, filepath.Join(e.outside, "x.txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"../x.txt", "a/../../x.txt", filepath.ToSlash(rel), filepath.Join(e.outside, "x.txt"), "/etc/passwd"} {
			_, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: p})
			wantOutside(t, err)
			_, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: p, Content: []byte("x")})
			wantOutside(t, err)
			_, err = e.sb.List(e.ctx, sandbox.ListRequest{Path: p})
			wantOutside(t, err)
			_, err = e.sb.Search(e.ctx, sandbox.SearchRequest{Mode: sandbox.ModeGlob, Pattern: "*", Path: p})
			wantOutside(t, err)
		}
		if b := e.readAbs(filepath.Join(e.outside, "x.txt")); b != "outside\n" {
			t.Errorf("outside file changed: %q", b)
		}
		// An absolute path inside the workspace is accepted.
		r, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: filepath.Join(e.ws, "a", "in.txt")})
		noError(t, err)
		if got := texts(r.Lines); !equalStrings(got, []string{"inside"}) {
			t.Errorf("absolute inside read = %q", got)
		}
		// ".." that stays inside is fine.
		r, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "a/../a/in.txt"})
		noError(t, err)
		if got := texts(r.Lines); !equalStrings(got, []string{"inside"}) {
			t.Errorf("a/../a/in.txt = %q", got)
		}
	})

	t.Run("relative symlink climbing out", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.writeOut("secret.txt", "s3cr3t\n")
		rel, err := filepath.Rel(filepath.Join(e.ws, "deep"), filepath.Join(e.outside, "secret.txt"))
		if err != nil {
			t.Fatal(err)
		}
		e.symlink(rel, "deep/esc")
		e.symlink("../..", "deep/parent")
		_, err = e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "deep/esc"})
		wantOutside(t, err)
		_, err = e.sb.List(e.ctx, sandbox.ListRequest{Path: "deep/parent"})
		wantOutside(t, err)
		_, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "deep/parent/planted.txt", Content: []byte("x")})
		wantOutside(t, err)
		if e.exists(filepath.Join(filepath.Dir(e.ws), "planted.txt")) {
			t.Error("write created a file outside the workspace")
		}
	})

	t.Run("BH-057 final component is a symlink, or a dangling one", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		victim := e.writeOut("victim.txt", "original\n")
		notYet := filepath.Join(e.outside, "not-yet.txt")
		e.symlink(victim, "notes.md")
		e.symlink(notYet, "draft.txt")

		_, err := e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "notes.md", Content: []byte("OWNED")})
		wantOutside(t, err)
		_, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "draft.txt", Content: []byte("OWNED")})
		wantOutside(t, err)
		_, err = e.sb.Edit(e.ctx, sandbox.EditRequest{Path: "notes.md", Edits: []sandbox.Replacement{{Old: "original", New: "OWNED"}}})
		wantOutside(t, err)

		if b := e.readAbs(victim); b != "original\n" {
			t.Errorf("victim.txt = %q, want original", b)
		}
		if e.exists(notYet) {
			t.Error("not-yet.txt was created outside")
		}
		for _, l := range []string{"notes.md", "draft.txt"} {
			if !e.isLink(filepath.Join(e.ws, l)) {
				t.Errorf("%s was replaced", l)
			}
		}
	})

	t.Run("dangling symlink inside the workspace", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.symlink("missing.txt", "dangling")
		_, err := e.sb.Read(e.ctx, sandbox.ReadRequest{Path: "dangling"})
		wantErr(t, err, sandbox.ErrNotFound)
		// Writing through any dangling link is refused (treated as outside).
		_, err = e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "dangling", Content: []byte("x")})
		wantOutside(t, err)
		if e.exists(filepath.Join(e.ws, "missing.txt")) {
			t.Error("write through a dangling link created its target")
		}
	})

	t.Run("BH-058 symlinked ancestor plus missing subdirectories", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.symlink(e.outside, "link")
		_, err := e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "link/newdir/deeper/f.txt", Content: []byte("x")})
		wantOutside(t, err)
		if e.exists(filepath.Join(e.outside, "newdir")) {
			t.Error("$OUTSIDE/newdir was created")
		}
		if names := e.names(e.outside); len(names) != 0 {
			t.Errorf("$OUTSIDE holds %q, want nothing", names)
		}
		// Inside, missing parents are created.
		e.write("real/keep.txt", "")
		e.symlink("real", "alias")
		w, err := e.sb.Write(e.ctx, sandbox.WriteRequest{Path: "alias/newdir/deeper/f.txt", Content: []byte("x")})
		noError(t, err)
		if !w.Created || e.read("real/newdir/deeper/f.txt") != "x" {
			t.Errorf("write below an inside link: %+v", w)
		}
	})

	t.Run("BH-017 ls does not follow a symlink cycle", func(t *testing.T) {
		e := newEnv(t, newSandbox)
		e.write("pkg/a.go", "package pkg\n")
		e.symlink("../..", "pkg/sub/loop")
		l, err := e.sb.List(e.ctx, sandbox.ListRequest{Path: ".", Depth: 50})
		noError(t, err)
		var got []string
		for _, en := range l.Entries {
			got = append(got, en.Path+":"+string(en.Type))
		}
		want := []string{"pkg:dir", "pkg/a.go:file", "pkg/sub:dir", "pkg/sub/loop:symlink"}
		if !equalStrings(got, want) {
			t.Errorf("ls -R = %q, want %q", got, want)
		}
	})
}
