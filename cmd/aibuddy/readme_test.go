package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readme returns README.md of the repository.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The Go version the quick start asks for is the one go.mod's go line
// needs (an older go tries to download that toolchain).
func TestREADMEGoVersionIsGoMods(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	want := "Go " + string(m[1]) + " or newer"
	if !strings.Contains(readme(t), want) {
		t.Errorf("README.md does not say %q", want)
	}
}

// The quick start's "try a tool" block runs as written (with the built
// binary for `go run ./cmd/aibuddy`) and writes nothing into the
// repository: its examples use a scratch workspace.
func TestREADMEQuickStartWritesNothingIntoTheRepo(t *testing.T) {
	doc := readme(t)
	start := strings.Index(doc, "Try a tool without a host")
	if start < 0 {
		t.Fatal("README.md has no \"Try a tool without a host\" block")
	}
	block := doc[start:]
	open := strings.Index(block, "```sh\n")
	end := strings.Index(block[open+6:], "```")
	if open < 0 || end < 0 {
		t.Fatal("no sh block after \"Try a tool without a host\"")
	}
	script := strings.ReplaceAll(block[open+6:open+6+end], "go run ./cmd/aibuddy", bin)
	root := repoRoot(t)
	status := func() string {
		out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=all", "--ignored").Output()
		if err != nil {
			t.Fatalf("git status: %v", err)
		}
		return string(out)
	}
	before := status()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "AIBUDDY_DATA_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s\nscript:\n%s", err, out, script)
	}
	if after := status(); after != before {
		t.Errorf("the quick start changed the repository:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
