package coretools

// Tests of grep, glob and ls over the real local adapter that the search
// helper owns (issue 10): full counts in the evidence, explicitly named
// hidden segments, skip notes, and escaped names.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
