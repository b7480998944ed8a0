package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/skills"
	"github.com/aibuddy/aibuddy/tool"
)

func runCLI(t *testing.T, o cli.Options, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	o.Stdout, o.Stderr = &out, &errb
	if o.Stdin == nil {
		o.Stdin = strings.NewReader("")
	}
	code = cli.Main(context.Background(), args, o)
	return code, out.String(), errb.String()
}

func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolsShowsMissingServiceExclusion(t *testing.T) {
	cfg := writeConfig(t, `{"toolKeys": ["filesystem", "interaction"]}`)
	ws := t.TempDir()
	code, out, errs := runCLI(t, cli.Options{}, "tools", "--config", cfg, "--workspace", ws)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"Tools (6):", "read_file", "Excluded", "ask_user_question", "missing_service",
		`needs the "user_input" service, which this host does not inject`, "execute", "not_configured"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = runCLI(t, cli.Options{}, "tools", "--json", "--config", cfg, "--workspace", ws)
	var doc struct {
		Tools    []struct{ Name, Group string }
		Excluded []struct{ Tool, Group, Reason, Detail string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("tools --json: exit %d, %s", code, out)
	}
	reasons := map[string]string{}
	for _, e := range doc.Excluded {
		reasons[e.Tool] = e.Reason
	}
	if reasons["ask_user_question"] != "missing_service" || reasons["execute"] != "not_configured" || len(doc.Tools) != 6 {
		t.Errorf("tools --json: %+v", doc)
	}
}

func TestInconsistentRegistryRefusesToStart(t *testing.T) {
	broken := func(*config.Config, string, *skills.Catalog) *registry.Registry {
		noop := func(registry.Env) ([]*tool.Tool, error) { return nil, nil }
		return registry.New([]registry.Group{
			{Key: "filesystem", Names: []string{"ls", "read_file"}, Build: noop},
			{Key: "shell", Names: []string{"execute", "ls"}, Build: noop},
		}, []registry.Meta{{Key: "filesystem"}, {Key: "browser"}},
			map[string]string{"ls": "filesystem", "read_file": "filesystem", "execute": "shell", "screenshot": "browser"})
	}
	for _, sub := range [][]string{{"mcp"}, {"tools"}, {"call", "ls"}} {
		code, out, errs := runCLI(t, cli.Options{Registry: broken}, append(sub, "--workspace", t.TempDir())...)
		if code != cli.ExitUsage || out != "" {
			t.Errorf("%v: exit %d stdout %q, want exit 2 and nothing on stdout", sub, code, out)
		}
		for _, want := range []string{"refusing to start", `group "shell" has no metadata entry`,
			`orphan metadata: "browser"`, `tool "screenshot" is mapped to unknown group "browser"`,
			`tool name "ls" is produced by more than one group`} {
			if !strings.Contains(errs, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", sub, want, errs)
			}
		}
	}
}

func TestCallExitCodes(t *testing.T) {
	ws := t.TempDir()
	code, out, errs := runCLI(t, cli.Options{}, "call", "write_file", `{"path":"a/b.txt","content":"hi\n"}`, "--workspace", ws)
	if code != 0 {
		t.Fatalf("write_file: exit %d %s %s", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a", "b.txt")); string(b) != "hi\n" {
		t.Errorf("disk has %q", b)
	}
	code, out, _ = runCLI(t, cli.Options{Stdin: strings.NewReader(`{"path":"a/b.txt"}`)}, "call", "read_file", "-", "--workspace", ws)
	if code != 0 || !strings.Contains(out, "hi") {
		t.Errorf("read_file from stdin: exit %d %q", code, out)
	}
	code, _, errs = runCLI(t, cli.Options{}, "call", "read_file", `{"path":"../x"}`, "--workspace", ws)
	if code != cli.ExitToolError || !strings.Contains(errs, "Authorization error") {
		t.Errorf("outside path: exit %d stderr %q", code, errs)
	}
	code, _, errs = runCLI(t, cli.Options{}, "call", "no_such_tool", "--workspace", ws)
	if code != cli.ExitToolError || !strings.Contains(errs, "Discovery error") {
		t.Errorf("unknown tool: exit %d stderr %q", code, errs)
	}
	code, out, _ = runCLI(t, cli.Options{}, "call", "execute", `{"command":"exit 4"}`, "--json", "--workspace", ws)
	if !strings.Contains(out, `"exit_code": 4`) {
		t.Errorf("execute --json: exit %d %s", code, out)
	}
	code, _, errs = runCLI(t, cli.Options{}, "call", "ls", "--config", writeConfig(t, `{"sandbox":{"kind":"e2b"}}`), "--workspace", ws)
	if code != cli.ExitUsage || !strings.Contains(errs, "sandbox kind unavailable") {
		t.Errorf("e2b sandbox: exit %d %q", code, errs)
	}
	code, _, errs = runCLI(t, cli.Options{}, "call", "ls", "--config", writeConfig(t, `{"toolKey":[]}`))
	if code != cli.ExitUsage || !strings.Contains(errs, `unknown key "toolKey"`) {
		t.Errorf("bad settings: exit %d %q", code, errs)
	}
}

func TestSkillsFromSettings(t *testing.T) {
	dir := t.TempDir()
	skill := filepath.Join(dir, "skills", "release-notes")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n# Release notes\nRun git log.\n"
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "aibuddy.json")
	if err := os.WriteFile(cfg, []byte(`{"skills":["skills"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	code, out, errs := runCLI(t, cli.Options{}, "tools", "--config", cfg, "--workspace", ws)
	if code != 0 || !strings.Contains(out, "view_skill") {
		t.Fatalf("exit %d, view_skill missing:\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, cli.Options{}, "call", "view_skill", `{"name":"release-notes"}`, "--config", cfg, "--workspace", ws)
	if code != 0 || !strings.Contains(out, "Run git log.") {
		t.Errorf("view_skill: exit %d %s %s", code, out, errs)
	}
	// Without skills the group is excluded, with its reason.
	code, out, _ = runCLI(t, cli.Options{}, "tools", "--workspace", ws)
	if code != 0 || !strings.Contains(out, "view_skill") || !strings.Contains(out, "missing_prerequisite") {
		t.Errorf("no skills: exit %d\n%s", code, out)
	}
}

// TestCallsRecordsCompactionAndRecovery: calls through `aibuddy call` are
// recorded; `calls list` counts failures by stage; a large result is
// compacted with a pointer and recovered exactly by view_tool_call.
func TestCallsRecordsCompactionAndRecovery(t *testing.T) {
	ws, data := t.TempDir(), t.TempDir()
	// aibuddy call precompacts only with compaction.oneShotCalls (mcp and
	// run always do; TestCallDoesNotPrecompact covers the default).
	settings := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settings, []byte(`{"compaction":{"oneShotCalls":true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"--workspace", ws, "--data-dir", data, "--config", settings}
	// A JSON document far over the 2,500-token threshold, under the
	// 30,000-character execute cap.
	var items []string
	for i := range 600 {
		items = append(items, fmt.Sprintf(`{"id":%d,"name":"item-%d"}`, i, i))
	}
	doc := "[" + strings.Join(items, ",") + "]"
	if err := os.WriteFile(filepath.Join(ws, "items.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, cli.Options{}, append([]string{"call", "execute", `{"command":"cat items.json"}`, "--json"}, common...)...)
	if code != 0 {
		t.Fatalf("execute: %d %s %s", code, out, errs)
	}
	var res struct{ ToolCallID string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.ToolCallID == "" {
		t.Fatalf("%v %s", err, out)
	}
	if !strings.Contains(out, `item-599`) {
		t.Error("the caller must get the whole result, uncompacted")
	}
	if code, _, _ := runCLI(t, cli.Options{}, append([]string{"call", "read_file", `{"path":"missing.txt"}`}, common...)...); code != cli.ExitToolError {
		t.Errorf("read_file of a missing file: exit %d", code)
	}
	code, out, _ = runCLI(t, cli.Options{}, append([]string{"calls", "list", "--json"}, "--data-dir", data)...)
	if code != 0 || !strings.Contains(out, `"parameters": 1`) {
		t.Errorf("calls list: %d %s", code, out)
	}
	code, out, _ = runCLI(t, cli.Options{}, "calls", "show", res.ToolCallID, "--projection", "model", "--data-dir", data)
	if code != 0 || !strings.Contains(out, "view_tool_call") || len(out) >= len(doc) {
		t.Errorf("model projection not compacted with a pointer (%d bytes): %.400s", len(out), out)
	}
	code, out, _ = runCLI(t, cli.Options{}, "calls", "show", res.ToolCallID, "--projection", "record", "--data-dir", data)
	if code != 0 || !strings.Contains(out, `"pointer": "compacted_outputs/`) || !strings.Contains(out, `item-599`) {
		t.Errorf("record projection: %.600s", out)
	}
	// Recovery by id, in bounded slices, through the same pipeline.
	args := fmt.Sprintf(`{"id":%q,"json_path":"$[599].name"}`, res.ToolCallID)
	code, out, errs = runCLI(t, cli.Options{}, append([]string{"call", "view_tool_call", args}, common...)...)
	if code != 0 || !strings.Contains(out, "item-599") {
		t.Errorf("view_tool_call json_path: %d %s %s", code, out, errs)
	}
}

// --mcp-config reads only "mcpServers" from a host's own file (here a
// Claude Desktop file with other keys), merged over the settings' servers.
func TestMCPConfigFlag(t *testing.T) {
	ws := t.TempDir()
	host := writeConfig(t, `{"globalShortcut":"Ctrl+Space","mcpServers":{"crashy":{"command":"sh","args":["-c","exit 3"]}}}`)
	cfg := writeConfig(t, `{"mcpServers":{"other":{"command":"sh","args":["-c","exit 4"]}}}`)
	code, out, errs := runCLI(t, cli.Options{}, "tools", "--json", "--config", cfg, "--mcp-config", host, "--workspace", ws)
	var doc struct {
		MCPServers []struct{ Name, State, Error string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	got := map[string]string{}
	for _, s := range doc.MCPServers {
		got[s.Name] = s.Error
	}
	if !strings.Contains(got["crashy"], "exited with status 3") || !strings.Contains(got["other"], "exited with status 4") || len(got) != 2 {
		t.Errorf("servers: %+v", doc.MCPServers)
	}
	noServers := writeConfig(t, `{"globalShortcut":"x"}`)
	code, _, errs = runCLI(t, cli.Options{}, "tools", "--mcp-config", noServers, "--workspace", ws)
	if code != cli.ExitUsage || !strings.Contains(errs, `no "mcpServers" object`) {
		t.Errorf("a file without mcpServers: exit %d, %s", code, errs)
	}
}

// Settings that name something missing stop start-up (exit 2) instead of
// failing at the first call or doing nothing.
func TestSettingsNamingMissingThings(t *testing.T) {
	ws := t.TempDir()
	for doc, want := range map[string]string{
		`{"sandbox": {"shell": "/bin/nosuchshell"}}`: `sandbox.shell "/bin/nosuchshell" cannot be run`,
		`{"skills": ["nosuchdir"]}`:                  `skills[0]:`,
	} {
		code, _, errs := runCLI(t, cli.Options{}, "tools", "--config", writeConfig(t, doc), "--workspace", ws)
		if code != cli.ExitUsage || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 naming %q", doc, code, errs, want)
		}
	}
}

// A Cursor file as it is: a relative envFile is found beside the file that
// names it, ${workspaceFolder} is the workspace and ${env:VAR} the
// environment; a disabled server's envFile is not read.
func TestMCPConfigCursorForms(t *testing.T) {
	ws := t.TempDir()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vars.env"), []byte("KEY=fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIBUDDY_TEST_HOSTVAR", "hostval")
	cursor := filepath.Join(dir, "mcp.json")
	doc := `{"mcpServers": {
	  "probe": {"command": "sh", "args": ["-c", "echo key=$KEY ws=$WS h=$H >&2; exit 3"], "envFile": "vars.env",
	            "env": {"WS": "${workspaceFolder}", "H": "${env:AIBUDDY_TEST_HOSTVAR}"}},
	  "off": {"command": "x", "envFile": "missing.env", "disabled": true}}}`
	if err := os.WriteFile(cursor, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir() // the current folder must not matter
	t.Chdir(other)
	code, out, errs := runCLI(t, cli.Options{}, "tools", "--json", "--mcp-config", cursor, "--workspace", ws)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		MCPServers []struct{ Name, State, Error string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("key=fromfile ws=%s h=hostval", ws)
	for _, s := range got.MCPServers {
		switch s.Name {
		case "probe":
			if !strings.Contains(s.Error, want) {
				t.Errorf("probe: %q, want stderr %q", s.Error, want)
			}
		case "off":
			if s.State != "disabled" {
				t.Errorf("off: %+v", s)
			}
		}
	}
}

// aibuddy call of a built-in tool starts no MCP server: a hanging one
// (10-minute initialize timeout here) does not hold it.
func TestCallBuiltinStartsNoMCPServer(t *testing.T) {
	ws := t.TempDir()
	cfg := writeConfig(t, `{"mcp": {"initTimeout": "10m"}, "mcpServers": {"hang": {"command": "sh", "args": ["-c", "sleep 3600"]}}}`)
	type outcome struct {
		code int
		out  string
	}
	done := make(chan outcome, 1)
	go func() {
		code, out, _ := runCLI(t, cli.Options{}, "call", "--config", cfg, "--workspace", ws, "ls", `{"path":"."}`)
		done <- outcome{code, out}
	}()
	select {
	case o := <-done:
		if o.code != 0 {
			t.Errorf("exit %d: %s", o.code, o.out)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("aibuddy call ls waited for a hanging MCP server")
	}
}

// A command that ends because a signal stopped it exits 128 + the signal
// (cmd/aibuddy cancels with cli.Stopped), not 1 or 3.
func TestStoppedBySignalExitCode(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: cli.ExitInterrupted, syscall.SIGTERM: 143} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cli.Stopped{Signal: sig})
		var out, errb bytes.Buffer
		code := cli.Main(ctx, []string{"call", "execute", `{"command":"true"}`, "--workspace", t.TempDir(), "--data-dir", t.TempDir()},
			cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
		if code != want {
			t.Errorf("%v: exit %d, want %d\n%s", sig, code, want, errb.String())
		}
	}
}
