package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// config validates limits.execDefaultTimeout against its own copy of the
// default maximum; it must be execute's.
func TestConfigKnowsExecuteDefaultMaxTimeout(t *testing.T) {
	if config.DefaultExecMaxTimeout != coretools.DefaultExecMaxTimeout {
		t.Errorf("config.DefaultExecMaxTimeout %v, coretools.DefaultExecMaxTimeout %v",
			config.DefaultExecMaxTimeout, coretools.DefaultExecMaxTimeout)
	}
}

// config checks limits.execEnv entries with its own copy of the rule the
// local sandbox applies; they must agree.
func TestConfigKnowsExecEnvRule(t *testing.T) {
	for _, e := range []string{"CI", "CI=", "CI=0", "-CI", "_X1=a=b", "", "-", "1X", "-A=b", "A B", "=v", "--A", "é"} {
		_, err := config.Parse([]byte(fmt.Sprintf(`{"limits": {"execEnv": [%q]}}`, e)))
		if ok := localsandbox.ValidEnvOverride(e) == nil; (err == nil) != ok {
			t.Errorf("%q: config says %v, localsandbox ok=%v", e, err, ok)
		}
	}
}

type callJSON struct {
	ToolCallID string
	Content    []struct{ Text string }
	Evidence   map[string]any
}

func callExecute(t *testing.T, args []string, input string) callJSON {
	t.Helper()
	code, out, errs := runCLI(t, cli.Options{}, append([]string{"call", "execute", input, "--json"}, args...)...)
	var res callJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("execute %s: exit %d, %v\n%s\n%s", input, code, err, out, errs)
	}
	return res
}

// A capped execute result names the omitted lines; following its
// view_tool_call hint through the real tool returns exactly those lines
// from the full output file, kept per task as outputs/<taskId>/<toolCallId>.log.
func TestExecuteHintRecoversOmittedLinesThroughViewToolCall(t *testing.T) {
	ws, data := t.TempDir(), t.TempDir()
	common := []string{"--workspace", ws, "--data-dir", data, "--config", writeConfig(t, `{"limits": {"execMaxOutputChars": 200}}`)}
	res := callExecute(t, common, `{"command":"seq 1 500"}`)
	text := res.Content[0].Text
	path, _ := res.Evidence["full_output_path"].(string)
	task := filepath.Base(filepath.Dir(path))
	if filepath.Dir(filepath.Dir(path)) != filepath.Join(data, "outputs") || !strings.HasPrefix(task, "cli-") ||
		filepath.Base(path) != res.ToolCallID+".log" {
		t.Errorf("full output %s: want %s/outputs/<taskId>/%s.log", path, data, res.ToolCallID)
	}
	m := regexp.MustCompile(`recover them with view_tool_call (\{[^}]*\})`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no view_tool_call hint in:\n%.800s", text)
	}
	var hint struct{ ID, Lines string }
	if err := json.Unmarshal([]byte(m[1]), &hint); err != nil || hint.ID != res.ToolCallID {
		t.Fatalf("hint %s: %v", m[1], err)
	}
	var first, last int
	if _, err := fmt.Sscanf(hint.Lines, "%d-%d", &first, &last); err != nil || first < 2 || last <= first || last >= 500 {
		t.Fatalf("hint lines %q", hint.Lines)
	}
	if !strings.Contains(text, fmt.Sprintf("omitted: lines %d-%d]", first, last)) {
		t.Errorf("the hint's lines %q are not the marker's:\n%.800s", hint.Lines, text)
	}
	code, out, errs := runCLI(t, cli.Options{}, append([]string{"call", "view_tool_call", m[1]}, common...)...)
	_, got, _ := strings.Cut(out, "\n---\n")
	var want strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if code != 0 || got != want.String() || !strings.Contains(out, "full output file of execute") {
		t.Errorf("view_tool_call %s: exit %d\n%s\n%s", m[1], code, out, errs)
	}
}

// sandbox.killDelay, sandbox.drainGrace and limits.execMaxOutputFileBytes
// reach the sandbox and execute. The delays are checked from below only
// (the group is not killed before them): 2.5 s is above both defaults
// (2 s, 1 s), so a setting that does not arrive fails.
func TestExecStopAndFileSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out two 2.5 s delays")
	}
	ws, data := t.TempDir(), t.TempDir()
	common := []string{"--workspace", ws, "--data-dir", data, "--config", writeConfig(t,
		`{"sandbox": {"killDelay": "2500ms", "drainGrace": "2.5s"}, "limits": {"execMaxOutputFileBytes": 1000}}`)}
	atLeast := func(res callJSON, d time.Duration) {
		t.Helper()
		if ms, _ := res.Evidence["duration_ms"].(float64); ms < float64(d.Milliseconds()) {
			t.Errorf("duration %v ms, want at least %v:\n%s", ms, d, res.Content[0].Text)
		}
	}
	// A command that ignores SIGTERM is killed only after killDelay.
	res := callExecute(t, common, `{"command":"trap '' TERM; sleep 30","timeout_ms":100}`)
	if res.Evidence["timed_out"] != true {
		t.Errorf("not timed out: %v", res.Evidence)
	}
	atLeast(res, 100*time.Millisecond+2500*time.Millisecond)
	// A background writer keeps the output open: read until the command
	// has run drainGrace.
	res = callExecute(t, common, `{"command":"(while :; do echo x; sleep 0.2; done) &"}`)
	if res.Evidence["lingering"] != true {
		t.Errorf("not lingering: %v", res.Evidence)
	}
	atLeast(res, 2500*time.Millisecond)
	// The full output file stops at execMaxOutputFileBytes.
	res = callExecute(t, common, `{"command":"seq 1 2000"}`)
	path, _ := res.Evidence["full_output_path"].(string)
	if fi, err := os.Stat(path); err != nil || fi.Size() != 1000 ||
		!strings.Contains(res.Content[0].Text, "stopped at the 1,000-byte limit") {
		t.Errorf("full output %s: %v %v\n%.600s", path, fi, err, res.Content[0].Text)
	}
}

// A command run through aibuddy call sees the non-interactive environment
// (CI=1, DEBIAN_FRONTEND=noninteractive), and limits.execEnv changes it.
func TestExecEnvSettingsReachCommand(t *testing.T) {
	ws, data := t.TempDir(), t.TempDir()
	cmd := `{"command":"echo CI=${CI-unset} DF=${DEBIAN_FRONTEND-unset} GTP=$GIT_TERMINAL_PROMPT"}`
	body := func(res callJSON) string {
		_, b, _ := strings.Cut(res.Content[0].Text, "\n---\n")
		return b
	}
	res := callExecute(t, []string{"--workspace", ws, "--data-dir", data}, cmd)
	if got := body(res); got != "CI=1 DF=noninteractive GTP=0" {
		t.Errorf("default environment: %q", got)
	}
	conf := writeConfig(t, `{"limits": {"execEnv": ["CI=0", "-DEBIAN_FRONTEND"]}}`)
	res = callExecute(t, []string{"--workspace", ws, "--data-dir", data, "--config", conf}, cmd)
	if got := body(res); got != "CI=0 DF=unset GTP=0" {
		t.Errorf("with limits.execEnv: %q", got)
	}
}

// limits.dataDirMaxBytes bounds the data folder with real files: a full
// output that would pass it removes the oldest offload and full outputs
// first, never the records, and a call whose output was removed is still
// readable from its record through view_tool_call. (The sizes leave room
// for the records database's write-ahead log, which counts while a call
// runs.)
func TestDataDirQuotaEvictsOldestOutputs(t *testing.T) {
	ws, data := t.TempDir(), t.TempDir()
	offload := filepath.Join(data, "compacted_outputs", "task-old", "call-old.json")
	if err := os.MkdirAll(filepath.Dir(offload), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(offload, make([]byte, 1_000_000), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(offload, old, old)
	args := func(conf string) []string {
		return []string{"--workspace", ws, "--data-dir", data, "--config", writeConfig(t, conf)}
	}
	print := func(n int, c string) string {
		return fmt.Sprintf(`{"command":"head -c %d /dev/zero | tr '\\0' %s"}`, n, c)
	}
	first := callExecute(t, args(`{"limits": {"execMaxOutputChars": 200}}`), print(400_000, "x"))
	firstPath, _ := first.Evidence["full_output_path"].(string)
	var total int64
	filepath.Walk(data, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return nil
	})
	// Room for 200,000 more bytes: the next 400,000 need the old offload's.
	conf := fmt.Sprintf(`{"limits": {"execMaxOutputChars": 200, "dataDirMaxBytes": %d}}`, total+200_000)
	second := callExecute(t, args(conf), print(400_000, "y"))
	secondPath, _ := second.Evidence["full_output_path"].(string)
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(offload) || !exists(firstPath) || !exists(filepath.Join(data, "records.db")) {
		t.Errorf("after the second call: old offload %v (want gone), first output %v, records.db %v; evidence %v",
			exists(offload), exists(firstPath), exists(filepath.Join(data, "records.db")), second.Evidence)
	}
	if fi, err := os.Stat(secondPath); err != nil || fi.Size() != 400_000 || second.Evidence["full_output_stopped"] != nil {
		t.Errorf("second output %v %v; evidence %v", fi, err, second.Evidence)
	}
	// 1,200,000 bytes more: the first output goes too; its record stays.
	third := callExecute(t, args(conf), print(1_200_000, "z"))
	if exists(firstPath) || !exists(filepath.Join(data, "records.db")) {
		t.Errorf("the oldest full output was kept, or the records removed; evidence %v", third.Evidence)
	}
	code, out, errs := runCLI(t, cli.Options{}, append([]string{"call", "view_tool_call", fmt.Sprintf(`{"id":%q}`, first.ToolCallID)}, args(conf)...)...)
	if code != 0 || !strings.Contains(out, "xxxx") {
		t.Errorf("view_tool_call of the call whose file was removed: exit %d\n%.600s\n%s", code, out, errs)
	}
}
