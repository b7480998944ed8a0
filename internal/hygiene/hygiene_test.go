package hygiene_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func TestEveryPackageHasDocGo(t *testing.T) {
	root := repoRoot(t)
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "./...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, _ := filepath.Rel(root, dir)
		if strings.HasPrefix(rel, "cmd") || strings.HasPrefix(rel, "bench") {
			continue // commands document themselves in main.go
		}
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			t.Errorf("package %s has no doc.go saying its one job", rel)
		}
	}
}

func TestGoModTidy(t *testing.T) {
	cmd := exec.Command("go", "mod", "tidy", "-diff")
	cmd.Dir = repoRoot(t)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("go.mod/go.sum are not tidy (run go mod tidy):\n%s", out.String())
	}
}

func TestNoMachinePaths(t *testing.T) {
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skip("not a git checkout")
	}
	re := regexp.MustCompile(`(^|[^.~A-Za-z0-9_])/(root|home|Users)/[A-Za-z]`)
	for _, f := range strings.Fields(string(out)) {
		if strings.HasSuffix(f, ".sum") || strings.HasSuffix(f, "package-lock.json") || f == "internal/hygiene/hygiene_test.go" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if re.MatchString(line) {
				t.Errorf("%s:%d writes a machine path: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
