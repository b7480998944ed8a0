package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/internal/cli"
)

// In plan mode the capability plane offers only read-only tools, and
// `aibuddy tools` says so: the mode on top, every other tool excluded
// with reason not_permitted. A bare tool name in deny removes that tool.
func TestToolsPlanModeOffersReadOnlyTools(t *testing.T) {
	ws := t.TempDir()
	cfg := writeConfig(t, `{"permissions": {"defaultMode": "plan", "deny": ["view_tool_call"]}}`)
	code, out, errs := runCLI(t, cli.Options{}, "tools", "--json", "--config", cfg, "--workspace", ws, "--data-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Permissions string
		Tools       []struct{ Name string }
		Excluded    []struct{ Tool, Reason, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	offered := map[string]bool{}
	for _, tl := range doc.Tools {
		offered[tl.Name] = true
	}
	for _, name := range []string{"ls", "read_file", "glob", "grep"} {
		if !offered[name] {
			t.Errorf("plan mode does not offer %s", name)
		}
	}
	excluded := map[string]string{}
	for _, e := range doc.Excluded {
		if e.Reason == "not_permitted" {
			excluded[e.Tool] = e.Detail
		}
	}
	for _, name := range []string{"write_file", "edit_file", "execute"} {
		if offered[name] || !strings.Contains(excluded[name], `"plan" offers only read-only tools`) {
			t.Errorf("%s: offered %v, exclusion %q", name, offered[name], excluded[name])
		}
	}
	if !strings.Contains(excluded["view_tool_call"], `permissions.deny[0] "view_tool_call"`) {
		t.Errorf("a bare deny does not exclude the tool: %q", excluded["view_tool_call"])
	}
	if !strings.Contains(doc.Permissions, `defaultMode "plan": only read-only tools are offered`) {
		t.Errorf("permissions line: %q", doc.Permissions)
	}
	code, text, _ := runCLI(t, cli.Options{}, "tools", "--config", cfg, "--workspace", ws, "--data-dir", t.TempDir())
	if code != 0 || !strings.Contains(text, "Permissions: defaultMode \"plan\"") {
		t.Errorf("text listing lacks the permission mode:\n%s", text)
	}
}

// A rule that does not compile stops start-up (security fails closed),
// naming the settings entry.
func TestBadPermissionRuleRefusesToStart(t *testing.T) {
	cfg := writeConfig(t, `{"permissions": {"allow": ["Bash(git push"]}}`)
	code, _, errs := runCLI(t, cli.Options{}, "tools", "--config", cfg, "--workspace", t.TempDir(), "--data-dir", t.TempDir())
	if code != cli.ExitUsage || !strings.Contains(errs, "permissions.allow[0]") || !strings.Contains(errs, "refusing to start") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
