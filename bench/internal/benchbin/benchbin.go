package benchbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Aibuddy returns the absolute path of the aibuddy binary to measure: bin
// when given (a binary of another commit, to compare), else a fresh
// `go build ./cmd/aibuddy` of this module into dir. The build runs in the
// module root (found with `go env GOMOD`), so a bench may be started from
// any folder of the repository; its output goes to stderr.
//
// Errors: the go command fails or the build fails (the error names it).
func Aibuddy(dir, bin string) (string, error) {
	if bin != "" {
		return filepath.Abs(bin)
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not inside the aibuddy module (run from the repository, or give the binary): %v", err)
	}
	bin = filepath.Join(dir, "aibuddy")
	build := exec.Command("go", "build", "-o", bin, "./cmd/aibuddy")
	build.Dir = filepath.Dir(mod)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/aibuddy: %w", err)
	}
	return bin, nil
}
