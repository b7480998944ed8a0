//go:build linux

package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// `aibuddy tools` says which driver, mode and network hold for execute
// and every rule, and each stdio server's confinement.
func TestToolsReportsConfinement(t *testing.T) {
	ws := t.TempDir()
	code, out, errOut := runCLI(t, cli.Options{}, "tools", "--workspace", ws, "--data-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Confinement of execute: driver linux-namespaces, mode workspace-write, network off (enforced)",
		"Landlock ABI", "(sandbox.readOnlyPaths)", "(sandbox.denyRead)", "(approval.deniedPaths)", "(PID namespace)"} {
		if !strings.Contains(out, want) {
			t.Errorf("aibuddy tools lacks %q:\n%s", want, out)
		}
	}
	cfg := writeConfig(t, `{"sandbox": {"confinement": "read-only", "network": "limited", "allowedDomains": ["example.com"]}}`)
	code, out, errOut = runCLI(t, cli.Options{}, "tools", "--json", "--workspace", ws, "--config", cfg, "--data-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Confinement struct {
			Driver, Mode, Network string
			Enforced              bool
			Rules                 []string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Confinement
	if c.Driver != "linux-namespaces" || c.Mode != "read-only" || c.Network != "limited" || !c.Enforced || !strings.Contains(strings.Join(c.Rules, "\n"), "example.com") {
		t.Errorf("confinement in --json: %+v", c)
	}
}

// BH-077: a confinement this machine cannot enforce (here: the sandbox's
// init binary is missing) leaves execute out of the tool set with the
// reason and the fix, and `aibuddy call execute` runs nothing.
func TestExecuteExcludedWhenConfinementUnavailable(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	o := cli.Options{Confine: &confine.Options{InitPath: filepath.Join(t.TempDir(), "no-aibuddy")}}
	code, out, errOut := runCLI(t, o, "tools", "--workspace", ws, "--data-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "execute ") && strings.Contains(l, "confinement_unavailable") {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "cannot be enforced") || !strings.Contains(line, "fix:") || !strings.Contains(out, "NOT ENFORCEABLE HERE") {
		t.Errorf("execute is not excluded with the reason and the fix:\n%s", out)
	}
	probe := filepath.Join(outside, "probe")
	code, out, errOut = runCLI(t, o, "call", "--workspace", ws, "--data-dir", t.TempDir(), "execute", `{"command":"touch `+probe+`"}`)
	if code == 0 {
		t.Errorf("aibuddy call execute succeeded: %s", out)
	}
	if _, err := os.Stat(probe); err == nil {
		t.Fatal("the command ran unconfined")
	}
	// A person's "off" runs it.
	cfg := writeConfig(t, `{"sandbox": {"confinement": "off"}}`)
	if code, out, errOut = runCLI(t, o, "call", "--workspace", ws, "--config", cfg, "--data-dir", t.TempDir(), "execute", `{"command":"touch `+probe+`"}`); code != 0 {
		t.Fatalf("with confinement off: exit %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(probe); err != nil {
		t.Error("with confinement off the command did not run")
	}
}

// Settings errors name the key.
func TestConfinementSettingsErrors(t *testing.T) {
	for doc, want := range map[string]string{
		`{"sandbox": {"confinement": "strict"}}`:                                  "sandbox.confinement",
		`{"sandbox": {"network": "off", "allowedDomains": ["example.com"]}}`:      "sandbox.allowedDomains",
		`{"sandbox": {"readOnlyPaths": ["../x"]}}`:                                "sandbox.readOnlyPaths",
		`{"mcpServers": {"s": {"command": "x", "sandbox": {"network": "wide"}}}}`: "mcpServers.s.sandbox.network",
		`{"mcpServers": {"s": {"command": "x", "sandbox": {"mode": "x"}}}}`:       "sandbox",
	} {
		code, _, errOut := runCLI(t, cli.Options{}, "tools", "--workspace", t.TempDir(), "--config", writeConfig(t, doc), "--data-dir", t.TempDir())
		if code != cli.ExitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, %q (want usage naming %s)", doc, code, errOut, want)
		}
	}
}
