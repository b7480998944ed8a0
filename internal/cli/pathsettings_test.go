package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/internal/cli"
)

// sandbox.maxPathDepth, sandbox.maxPathBytes and sandbox.maxReadBytes reach
// the file tools through `aibuddy call` (issue 11): a path deeper or longer
// than the setting is refused at the Parameters stage naming it, and a file
// larger than the read bound is read and hashed only that far, and says so.
func TestPathAndReadBoundSettingsReachTheFileTools(t *testing.T) {
	ws, data := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, body := range map[string]string{"a/b/c/deep.txt": "deep\n", "big.txt": strings.Repeat("0123456789abcde\n", 4096)} {
		if err := os.WriteFile(filepath.Join(ws, filepath.FromSlash(p)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"--workspace", ws, "--data-dir", data, "--config", writeConfig(t,
		`{"sandbox": {"maxPathDepth": 3, "maxPathBytes": 12, "maxReadBytes": 1024}}`)}
	call := func(tool, input string) (int, callJSON, string) {
		t.Helper()
		code, out, errs := runCLI(t, cli.Options{}, append([]string{"call", tool, input, "--json"}, common...)...)
		var res callJSON
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) == 0 {
			t.Fatalf("%s %s: exit %d, %v\n%s\n%s", tool, input, code, err, out, errs)
		}
		return code, res, res.Content[0].Text
	}
	if code, _, text := call("read_file", `{"path":"a/b/c/deep.txt"}`); code == 0 ||
		!strings.Contains(text, "Parameters") || !strings.Contains(text, "sandbox.maxPathDepth") {
		t.Errorf("a 4-component path with maxPathDepth 3: exit %d: %s", code, text)
	}
	if code, _, text := call("read_file", `{"path":"a/b/verylongname.txt"}`); code == 0 || !strings.Contains(text, "sandbox.maxPathBytes") {
		t.Errorf("a 20-byte path with maxPathBytes 12: exit %d: %s", code, text)
	}
	code, res, text := call("read_file", `{"path":"big.txt"}`)
	if code != 0 || res.Evidence["sha256_bytes"] != float64(1024) || res.Evidence["read_truncated"] != true ||
		!strings.Contains(text, "sha256 covers those bytes only") || !strings.Contains(text, "sandbox.maxReadBytes") {
		t.Errorf("a 65,536-byte file with maxReadBytes 1024: exit %d, evidence %v:\n%.2000s", code, res.Evidence, text)
	}
	if got := strings.Count(text, "→"); got != 64 {
		t.Errorf("%d lines shown, want the 64 whole lines in the first 1,024 bytes", got)
	}
}
