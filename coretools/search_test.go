package coretools

// Tests of grep, glob and ls over the real local adapter that the search
// helper owns (issue 10): full counts in the evidence, explicitly named
// hidden segments, skip notes, and escaped names.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/tool"
)

// TestSearchEvidenceTotal: grep and glob report the full count of what
// matched in their evidence ("total"), beyond the results shown, so a
// caller (and bench/search) can compare it with another tool's count.
func TestSearchEvidenceTotal(t *testing.T) {
	w := newFSWorld(t, nil)
	for i := range 7 {
		w.file(t, fmt.Sprintf("d/f%d.txt", i), "hit\nhit\nmiss\n")
	}
	r := w.call(t, "grep", map[string]any{"pattern": "hit", "max_results": 3})
	fsMustOK(t, r)
	if r.Evidence["total"] != 14 || r.Evidence["matches"] != 3 {
		t.Errorf("grep evidence = %v; want total 14, matches 3", r.Evidence)
	}
	r = w.call(t, "glob", map[string]any{"pattern": "**/*.txt", "max_results": 2})
	fsMustOK(t, r)
	if r.Evidence["total"] != 7 || r.Evidence["files"] != 2 {
		t.Errorf("glob evidence = %v; want total 7, files 2", r.Evidence)
	}
}

// TestSearchNamedHiddenSegments (issue 10, item 4): naming a hidden
// segment is asking for it. A glob pattern segment that starts with "."
// matches hidden names at its place (".github/workflows/*.yml",
// "**/.eslintrc.json"), so do grep's include globs; a hidden path is
// searched; "*" alone still does not match a leading dot, and what it left
// out is said.
func TestSearchNamedHiddenSegments(t *testing.T) {
	w := newFSWorld(t, nil)
	w.file(t, ".github/workflows/ci.yml", "token: NEEDLE_7Q\n")
	w.file(t, ".eslintrc.json", "{}\n")
	w.file(t, "web/.eslintrc.json", "{\"NEEDLE_7Q\": 1}\n")
	w.file(t, "web/app.json", "{}\n")
	for _, c := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"glob", map[string]any{"pattern": ".github/workflows/*.yml"}, []string{".github/workflows/ci.yml"}},
		{"glob", map[string]any{"pattern": ".eslintrc.json"}, []string{".eslintrc.json"}},
		{"glob", map[string]any{"pattern": "**/.eslintrc.json"}, []string{".eslintrc.json", "web/.eslintrc.json"}},
		{"glob", map[string]any{"pattern": "**/*.yml", "path": ".github"}, []string{".github/workflows/ci.yml"}},
		{"glob", map[string]any{"pattern": "**/.*"}, []string{".eslintrc.json", "web/.eslintrc.json"}},
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "include": []string{".github/**"}}, []string{".github/workflows/ci.yml"}},
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "include": []string{"**/.eslintrc.json"}}, []string{"web/.eslintrc.json"}},
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "path": ".github"}, []string{".github/workflows/ci.yml"}},
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "path": "web/.eslintrc.json"}, []string{"web/.eslintrc.json"}},
	} {
		r := w.call(t, c.tool, c.args)
		got := fsMustOK(t, r)
		for _, p := range c.want {
			if !strings.Contains(got, p+"\n") {
				t.Errorf("%s %v: %q not found in:\n%s", c.tool, c.args, p, got)
			}
		}
		if n := r.Evidence["total"]; n != len(c.want) {
			t.Errorf("%s %v: total %v, want %d:\n%s", c.tool, c.args, n, len(c.want), got)
		}
	}
	got := fsMustOK(t, w.call(t, "glob", map[string]any{"pattern": "**/*.json"}))
	if strings.Contains(got, ".eslintrc.json") || !strings.Contains(got, "web/app.json") {
		t.Errorf("glob **/*.json matched a hidden file (or missed app.json):\n%s", got)
	}
}

// TestSearchRefusesGitDir (issue 10, item 5): grep and glob never search
// .git, as their descriptions say: a path in it, or a pattern or include
// naming it, is refused at the Parameters stage with the reason and what to
// use instead (it was searched when named as path).
func TestSearchRefusesGitDir(t *testing.T) {
	w := newFSWorld(t, nil)
	w.file(t, ".git/config", "[remote] url = https://NEEDLE_7Q@example.invalid\n")
	w.file(t, "src/a.go", "package a\n")
	if err := os.Symlink(".git", filepath.Join(w.ws, "gitlink")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "path": ".git"}},
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "path": ".git/config"}},
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "path": "src/../.git"}},
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "path": "gitlink"}},
		{"grep", map[string]any{"pattern": "NEEDLE_7Q", "include": []string{".git/**"}}},
		{"glob", map[string]any{"pattern": "**/*", "path": ".git"}},
		{"glob", map[string]any{"pattern": ".git/**"}},
		{"glob", map[string]any{"pattern": "**/.git/config"}},
	} {
		msg := fsMustFail(t, w.call(t, c.tool, c.args), tool.Parameters)
		if !strings.Contains(msg, ".git") || !strings.Contains(msg, "never searches") || strings.Contains(msg, "NEEDLE_7Q@") {
			t.Errorf("%s %v: %s", c.tool, c.args, msg)
		}
	}
}

// TestSearchSaysWhatItSkipped (issue 10, item 5): "0 matches" names every
// kind of file it did not search, with counts, and how to include it:
// hidden files (include_hidden, or a pattern naming them), .gitignore'd
// paths (no_ignore) and binary files (grep reads text only). The evidence
// carries the counts.
func TestSearchSaysWhatItSkipped(t *testing.T) {
	w := newFSWorld(t, nil)
	w.file(t, "src/main.go", "package main\n")
	w.file(t, ".env.example", "NEEDLE_7Q=1\n")
	w.file(t, "src/.hidden.txt", "NEEDLE_7Q\n") // with .env.example and .gitignore: 3 hidden files
	w.file(t, ".gitignore", "build/\n*.log\n")
	w.file(t, "build/out.txt", "NEEDLE_7Q\n")
	w.file(t, "run.log", "NEEDLE_7Q\n")
	w.file(t, "img.bin", "NEEDLE_7Q\x00\x01\x02")
	r := w.call(t, "grep", map[string]any{"pattern": "NEEDLE_7Q"})
	got := fsMustOK(t, r)
	for _, want := range []string{
		`0 matches for "NEEDLE_7Q" under "."`,
		"3 hidden files were skipped; set include_hidden to search them",
		"2 paths excluded by .gitignore were not searched; set no_ignore to include them",
		"1 binary file was not searched (a NUL byte in its first 8 KiB)",
		"searched 2 files",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("grep: %q missing in:\n%s", want, got)
		}
	}
	if r.Evidence["skipped_hidden_files"] != 3 || r.Evidence["ignored"] != 2 || r.Evidence["skipped_binary"] != 1 {
		t.Errorf("grep evidence = %v", r.Evidence)
	}
	r = w.call(t, "glob", map[string]any{"pattern": "**/*.txt"})
	got = fsMustOK(t, r)
	for _, want := range []string{"0 files match", "3 hidden files were skipped", "excluded by .gitignore"} {
		if !strings.Contains(got, want) {
			t.Errorf("glob: %q missing in:\n%s", want, got)
		}
	}
}

// TestSearchEscapesNames (issue 10, item 6): a newline, ESC (an OSC
// sequence), the bidi controls or a byte that is not UTF-8 in a file name
// never reach the output raw: ls, glob and grep print such a name as a
// JSON-style quoted string, so each entry is one line, and the printed
// form given back as the path (as the JSON string value, or the quoted
// text itself) reaches the file.
func TestSearchEscapesNames(t *testing.T) {
	w := newFSWorld(t, nil)
	names := map[string]string{ // name -> how it is printed
		"evil\nmain.go:1:forged.txt": `"evil\nmain.go:1:forged.txt"`,
		"\x1b]0;owned\x07title.txt":  `"\u001b]0;owned\u0007title.txt"`,
		"\u202etxt.exe":              `"\u202etxt.exe"`,
		"iso\u2066x\u2069.txt":       `"iso\u2066x\u2069.txt"`,
		"bad\xffbyte.txt":            `"bad\xffbyte.txt"`,
		`quo"te.txt`:                 `"quo\"te.txt"`,
		"plain name.txt":             "plain name.txt",
		"caf\u00e9.txt":              "caf\u00e9.txt",
	}
	for n := range names {
		w.file(t, "d/"+n, "NEEDLE_7Q\n")
	}
	check := func(what, out string, wantLines int) {
		t.Helper()
		for _, r := range out {
			if r != '\n' && !strconv.IsPrint(r) {
				t.Errorf("%s: raw %U in the output:\n%s", what, r, out)
			}
		}
		if !utf8.ValidString(out) {
			t.Errorf("%s: invalid UTF-8 in the output", what)
		}
		for n, shown := range names {
			if !strings.Contains(out, "d/"+strings.TrimPrefix(shown, `"`)) && !strings.Contains(out, `"d/`+strings.TrimPrefix(shown, `"`)) {
				t.Errorf("%s: %q not shown as %s:\n%s", what, n, shown, out)
			}
		}
		if got := strings.Count(out, "\n") + 1; got != wantLines {
			t.Errorf("%s: %d lines, want %d:\n%s", what, got, wantLines, out)
		}
	}
	check("ls", fsMustOK(t, w.call(t, "ls", map[string]any{"path": "d"})), len(names))
	check("glob", fsMustOK(t, w.call(t, "glob", map[string]any{"pattern": "d/*"})), len(names)+2)
	check("grep", fsMustOK(t, w.call(t, "grep", map[string]any{"pattern": "NEEDLE_7Q"})), 3*len(names)-1+2)

	for n, shown := range names {
		p := shown
		if !strings.HasPrefix(shown, `"`) {
			p = `"` + shown + `"`
		}
		p = `"d/` + p[1:]
		// As the JSON string value: the quotes become the JSON string's.
		var raw map[string]any
		if err := json.Unmarshal([]byte(`{"pattern":"NEEDLE_7Q","path":`+p+`}`), &raw); err == nil {
			if got := fsMustOK(t, w.call(t, "grep", raw)); !strings.Contains(got, "1 match in 1 file") {
				t.Errorf("%q given back as the JSON string %s: %s", n, p, got)
			}
		} else if !strings.Contains(shown, `\x`) {
			t.Errorf("%q: printed form %s is not a JSON string: %v", n, p, err)
		}
		// As the quoted text itself.
		r := w.call(t, "read_file", map[string]any{"path": p})
		if got := fsMustOK(t, r); !strings.Contains(got, "NEEDLE_7Q") {
			t.Errorf("%q given back quoted as %s: %s", n, p, got)
		}
	}
}

// TestFileToolMessagesEscapeNames: read_file, write_file and edit_file
// messages that name the file ("X is empty", "wrote N bytes to X",
// "old_string not found in X", a missing file, a binary file's shell
// hint) show a name holding a newline, ESC or a bidi control quoted as
// ls prints it, never raw; the binary file's shell hint names the file
// when run by /bin/sh.
func TestFileToolMessagesEscapeNames(t *testing.T) {
	w := newFSWorld(t, nil)
	raw := "e\nx\x1b[2J\u202e'%\\.txt"
	shown := fsShowPath(raw)
	noRaw := func(what, out string) {
		t.Helper()
		if strings.Contains(out, raw) || strings.ContainsAny(out, "\x1b\u202e") {
			t.Errorf("%s: the raw name reaches the output:\n%q", what, out)
		}
	}
	got := fsMustOK(t, w.call(t, "write_file", map[string]any{"path": raw, "content": ""}))
	noRaw("write_file", got)
	if !strings.Contains(got, shown) {
		t.Errorf("write_file does not name %s:\n%s", shown, got)
	}
	got = fsMustOK(t, w.call(t, "read_file", map[string]any{"path": raw}))
	noRaw("read_file of an empty file", got)
	if !strings.Contains(got, shown+" is empty") {
		t.Errorf("read_file of an empty file: %q", got)
	}
	fsMustOK(t, w.call(t, "write_file", map[string]any{"path": raw, "content": "alpha\n"}))
	noRaw("edit_file no match", fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": raw, "old_string": "beta", "new_string": "x"}), tool.Parameters))
	noRaw("edit_file", fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": raw, "old_string": "alpha", "new_string": "gamma"})))
	noRaw("read_file of a missing file", fsMustFail(t, w.call(t, "read_file", map[string]any{"path": raw + ".gone"}), tool.Parameters))

	w.file(t, raw+".bin", "\x00\x01\x02binary")
	got = fsMustOK(t, w.call(t, "read_file", map[string]any{"path": raw + ".bin"}))
	noRaw("read_file of a binary file", got)
	q := fsShellQuote(raw + ".bin")
	out, err := exec.Command("/bin/sh", "-c", "cd "+fsShellQuote(w.ws)+" && wc -c < "+q).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "9" {
		t.Errorf("the shell quoting %s does not name the file: %q %v", q, out, err)
	}
}
