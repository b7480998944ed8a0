package skills_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/skills"
)

// write creates root/rel with content, making parent folders.
func write(t *testing.T, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func skillMD(name, description, body string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\n---\n" + body
}

// problemFor returns the reason of the problem whose path ends with suffix.
func problemFor(problems []skills.Problem, suffix string) (string, bool) {
	for _, p := range problems {
		if strings.HasSuffix(filepath.ToSlash(p.Path), suffix) {
			return p.Reason, true
		}
	}
	return "", false
}

func TestLoadValidSkill(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "pdf/SKILL.md", `---
name: pdf
description: >
  Extract text and tables from PDF files.
  Use when the user mentions PDFs.
license: Apache-2.0
allowed-tools: [read_file, execute]
metadata:
  author: example
  version: "1.0"
x-custom: kept
---

# PDF

Run scripts/extract.py on the file.
`)
	write(t, dir, "pdf/scripts/extract.py", "print('hi')\n")
	write(t, dir, "pdf/reference.md", "# Reference\n")
	write(t, dir, "pdf/a-b/c.txt", "x")
	write(t, dir, "pdf/.hidden", "x")
	write(t, dir, "pdf/.git/config", "x")
	write(t, dir, "notes/README.md", "not a skill") // no SKILL.md: ignored
	write(t, dir, "loose.md", "a file, not a folder")

	c, problems := skills.Load([]string{dir})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	got := c.Skills()
	if len(got) != 1 {
		t.Fatalf("got %d skills, want 1", len(got))
	}
	s := got[0]
	if s.Name != "pdf" || s.Description != "Extract text and tables from PDF files. Use when the user mentions PDFs." {
		t.Errorf("name/description: %q / %q", s.Name, s.Description)
	}
	if s.Dir != filepath.Join(dir, "pdf") || s.Path != filepath.Join(dir, "pdf", "SKILL.md") {
		t.Errorf("dir/path: %s %s", s.Dir, s.Path)
	}
	if want := []string{"a-b/c.txt", "reference.md", "scripts/extract.py"}; !reflect.DeepEqual(s.Files, want) {
		t.Errorf("files = %v, want %v", s.Files, want)
	}
	if s.Meta["license"] != "Apache-2.0" || s.Meta["x-custom"] != "kept" {
		t.Errorf("meta = %v", s.Meta)
	}
	if tools, _ := s.Meta["allowed-tools"].([]any); len(tools) != 2 {
		t.Errorf("allowed-tools = %#v", s.Meta["allowed-tools"])
	}
	if md, _ := s.Meta["metadata"].(map[string]any); md["version"] != "1.0" {
		t.Errorf("metadata = %#v", s.Meta["metadata"])
	}
	if _, ok := s.Meta["name"]; ok {
		t.Error("meta repeats name")
	}
	if !strings.HasPrefix(s.Instructions(), "# PDF\n") || strings.Contains(s.Instructions(), "license") {
		t.Errorf("instructions = %q", s.Instructions())
	}
	want := "- pdf: Extract text and tables from PDF files. Use when the user mentions PDFs.\n"
	if c.Summary() != want {
		t.Errorf("summary = %q, want %q", c.Summary(), want)
	}
}

func TestLoadProblems(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		folder, content, reason string
	}{
		{"bad-yaml", "---\nname: bad-yaml\ndescription: [unclosed\n---\n", "bad YAML front matter"},
		{"dup-key", "---\nname: dup-key\nname: again\ndescription: d\n---\n", "bad YAML front matter"},
		{"no-name", "---\ndescription: d\n---\nbody", "has no name"},
		{"no-desc", "---\nname: no-desc\n---\nbody", "has no description"},
		{"empty-desc", "---\nname: empty-desc\ndescription: \"  \"\n---\n", "description is empty"},
		{"long-desc", skillMD("long-desc", strings.Repeat("d", 1025), ""), "1025 characters long; at most 1024"},
		{"upper", skillMD("Upper-Case", "d", ""), "lowercase letters, digits and hyphens"},
		{"spaces", skillMD("has space", "d", ""), "lowercase letters"},
		{"hyphens", skillMD("-lead", "d", ""), "without a leading"},
		{"double", skillMD("a--b", "d", ""), "doubled hyphen"},
		{"long-name", skillMD(strings.Repeat("a", 65), "d", ""), "65 characters long; at most 64"},
		{"number-name", skillMD("123", "d", ""), "must be a string"},
		{"no-front", "# Just markdown\n", "no YAML front matter"},
		{"unclosed", "---\nname: unclosed\ndescription: d\n", "not closed"},
		{"list-front", "---\n- a\n- b\n---\n", "bad YAML front matter"},
		{"empty-front", "---\n---\nbody", "front matter is empty"},
		{"latin1", "---\nname: latin1\ndescription: caf\xe9\n---\n", "not UTF-8"},
	}
	for _, tc := range cases {
		write(t, dir, tc.folder+"/SKILL.md", tc.content)
	}
	write(t, dir, "lower/skill.md", skillMD("lower", "d", ""))
	write(t, dir, "ok/SKILL.md", skillMD("ok", "fine", ""))

	c, problems := skills.Load([]string{dir})
	if names := c.Names(); !reflect.DeepEqual(names, []string{"ok"}) {
		t.Errorf("loaded %v, want only ok", names)
	}
	for _, tc := range cases {
		reason, ok := problemFor(problems, tc.folder+"/SKILL.md")
		if !ok {
			t.Errorf("%s: no problem reported", tc.folder)
			continue
		}
		if !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: reason %q, want it to contain %q", tc.folder, reason, tc.reason)
		}
	}
	if reason, _ := problemFor(problems, "lower/SKILL.md"); !strings.Contains(reason, `found "skill.md"`) {
		t.Errorf("lower-case skill.md: %q", reason)
	}
	if len(problems) != len(cases)+1 {
		t.Errorf("%d problems, want %d: %v", len(problems), len(cases)+1, problems)
	}
}

func TestLoadDuplicateKeepsFirst(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	write(t, first, "deploy/SKILL.md", skillMD("deploy", "first", ""))
	write(t, second, "deploy/SKILL.md", skillMD("deploy", "second", ""))
	write(t, second, "other-folder/SKILL.md", skillMD("deploy", "third", ""))
	write(t, second, "extra/SKILL.md", skillMD("extra", "more", ""))

	c, problems := skills.Load([]string{first, second})
	if got := c.Names(); !reflect.DeepEqual(got, []string{"deploy", "extra"}) {
		t.Fatalf("names = %v", got)
	}
	if s, _ := c.Lookup("deploy"); s.Description != "first" {
		t.Errorf("deploy came from %s (%q); the first folder must win", s.Dir, s.Description)
	}
	if len(problems) != 2 {
		t.Fatalf("problems = %v, want 2 duplicates", problems)
	}
	for _, p := range problems {
		if !strings.Contains(p.Reason, `duplicate skill name "deploy"`) || !strings.Contains(p.Reason, filepath.Join(first, "deploy", "SKILL.md")) {
			t.Errorf("problem %v does not name the duplicate and the first one", p)
		}
	}
}

func TestLoadSymlinks(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "evil/SKILL.md", skillMD("evil", "from outside", ""))
	write(t, outside, "secret.txt", "TOP SECRET")
	write(t, outside, "SKILL.md", skillMD("stolen", "SKILL.md outside", ""))

	dir := t.TempDir()
	write(t, dir, "real/SKILL.md", skillMD("real", "inside", ""))
	write(t, dir, "linked-md/notes.md", "x")
	symlink(t, filepath.Join(outside, "evil"), filepath.Join(dir, "evil"))                      // skill folder escapes
	symlink(t, filepath.Join(outside, "SKILL.md"), filepath.Join(dir, "linked-md", "SKILL.md")) // SKILL.md escapes
	symlink(t, "real", filepath.Join(dir, "z-alias"))                                           // inside: allowed, but a duplicate
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(dir, "real", "secret.txt"))
	symlink(t, "../linked-md/notes.md", filepath.Join(dir, "real", "sibling.md")) // leaves the skill folder
	write(t, dir, "real/doc.md", "doc")
	symlink(t, "doc.md", filepath.Join(dir, "real", "doc-link.md")) // inside the skill folder

	c, problems := skills.Load([]string{dir})
	if got := c.Names(); !reflect.DeepEqual(got, []string{"real"}) {
		t.Fatalf("names = %v, want [real]", got)
	}
	if r, _ := problemFor(problems, "evil/SKILL.md"); !strings.Contains(r, "leading outside the skills folder") {
		t.Errorf("escaping skill folder: %q (problems %v)", r, problems)
	}
	if r, _ := problemFor(problems, "linked-md/SKILL.md"); !strings.Contains(r, "leading outside the skill folder") {
		t.Errorf("escaping SKILL.md: %q", r)
	}
	if r, _ := problemFor(problems, "z-alias/SKILL.md"); !strings.Contains(r, "duplicate") {
		t.Errorf("alias: %q", r)
	}
	s, _ := c.Lookup("real")
	if want := []string{"doc-link.md", "doc.md"}; !reflect.DeepEqual(s.Files, want) {
		t.Errorf("files = %v, want %v (links leaving the folder are not listed)", s.Files, want)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

func TestLoadBounds(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "huge/SKILL.md", skillMD("huge", "big", strings.Repeat("x", skills.MaxSkillFileBytes)))
	for i := range skills.MaxFiles + 5 {
		write(t, dir, fmt.Sprintf("many/refs/f%03d.md", i), "x")
	}
	write(t, dir, "many/SKILL.md", skillMD("many", "lots of files", ""))

	c, problems := skills.Load([]string{dir})
	if r, _ := problemFor(problems, "huge/SKILL.md"); !strings.Contains(r, "larger than 1048576 bytes") {
		t.Errorf("huge: %q", r)
	}
	s, ok := c.Lookup("many")
	if !ok {
		t.Fatal("many not loaded")
	}
	if len(s.Files) != skills.MaxFiles || s.FilesOmitted != 5 {
		t.Errorf("files %d omitted %d, want %d and 5", len(s.Files), s.FilesOmitted, skills.MaxFiles)
	}
}

func TestLoadMaxSkills(t *testing.T) {
	dir := t.TempDir()
	for i := range skills.MaxSkills + 2 {
		n := fmt.Sprintf("s%04d", i)
		write(t, dir, n+"/SKILL.md", skillMD(n, "d", ""))
	}
	c, problems := skills.Load([]string{dir})
	if c.Len() != skills.MaxSkills || len(problems) != 2 || !strings.Contains(problems[0].Reason, "catalogue is full") {
		t.Errorf("len %d, problems %v", c.Len(), problems)
	}
}

func TestLoadMissingAndUnreadableFolders(t *testing.T) {
	dir := t.TempDir()
	file := write(t, dir, "not-a-dir", "x")
	c, problems := skills.Load([]string{filepath.Join(dir, "absent"), file})
	if c == nil || c.Len() != 0 {
		t.Fatalf("catalog %v", c)
	}
	if len(problems) != 1 || problems[0].Path != file {
		t.Errorf("problems = %v, want one for the file (a missing folder is skipped)", problems)
	}
	var nilCat *skills.Catalog
	if nilCat.Len() != 0 || nilCat.Summary() != "" || nilCat.Skills() != nil {
		t.Error("nil catalog is not empty")
	}
}

func TestParseCRLFAndBOM(t *testing.T) {
	s, err := skills.Parse([]byte("\xef\xbb\xbf---\r\nname: win\r\ndescription: Windows line ends\r\n---\r\nBody\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "win" || s.Description != "Windows line ends" || s.Instructions() != "Body\n" {
		t.Errorf("got %+v %q", s, s.Instructions())
	}
}

func TestLoadFIFONotOpened(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pipe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(dir, "pipe", "SKILL.md")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, problems := skills.Load([]string{dir}) // must not block
	if r, _ := problemFor(problems, "pipe/SKILL.md"); !strings.Contains(r, "not a regular file") {
		t.Errorf("fifo: %q", r)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(skillMD("pdf", "PDF tools.", "# Body\n")))
	f.Add([]byte("---\nname: a\ndescription: b\nmetadata: {x: [1, 2]}\n---\n"))
	f.Add([]byte("---\n&a [*a]\n---\n"))
	f.Add([]byte("---\r\nname: x\r\n...\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := skills.Parse(data)
		if err != nil {
			return
		}
		if s.Name == "" || len(s.Name) > skills.MaxNameLen || strings.ToLower(s.Name) != s.Name || strings.Contains(s.Name, "--") {
			t.Errorf("accepted name %q", s.Name)
		}
		if s.Description == "" || len([]rune(s.Description)) > skills.MaxDescriptionLen {
			t.Errorf("accepted description of %d characters", len([]rune(s.Description)))
		}
	})
}
