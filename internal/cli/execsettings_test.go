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
)

// config validates limits.execDefaultTimeout against its own copy of the
// default maximum; it must be execute's.
func TestConfigKnowsExecuteDefaultMaxTimeout(t *testing.T) {
	if config.DefaultExecMaxTimeout != coretools.DefaultExecMaxTimeout {
		t.Errorf("config.DefaultExecMaxTimeout %v, coretools.DefaultExecMaxTimeout %v",
			config.DefaultExecMaxTimeout, coretools.DefaultExecMaxTimeout)
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
	// A background writer keeps the output open: read for drainGrace.
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
