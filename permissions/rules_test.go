package permissions_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/permissions"
	"github.com/aibuddy/aibuddy/tool"
)

// row is one line of testdata/commands.tsv.
type row struct {
	verdict, rule, command string
	line                   int
}

func readTable(t *testing.T) []row {
	t.Helper()
	f, err := os.Open("testdata/commands.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		parts := strings.SplitN(l, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("commands.tsv:%d: want verdict, rule and command separated by tabs", n)
		}
		rows = append(rows, row{verdict: parts[0], rule: parts[1], command: parts[2], line: n})
	}
	return rows
}

// tableEngine is the engine of testdata/settings.json over ws, with
// approval.deniedPaths at its default (as the CLI builds it).
func tableEngine(t *testing.T, ws, home string) *permissions.Engine {
	t.Helper()
	raw, err := os.ReadFile("testdata/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Permissions permissions.Settings }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	e, err := permissions.New(permissions.Options{Settings: &doc.Permissions, Workspace: ws, Home: home,
		DeniedPaths: approval.DefaultDeniedPaths()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func bash(e *permissions.Engine, cmd string) permissions.Decision {
	return e.Decide(permissions.Request{Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: cmd}})
}

// TestCommandTable decides every form of testdata/commands.tsv (wrapped,
// chained, substituted, quoted, escaped; BH-085, BH-086, BH-087, BH-059)
// and checks the verdict and the rule named.
func TestCommandTable(t *testing.T) {
	ws := "/work/project"
	e := tableEngine(t, ws, "/hm/u")
	rows := readTable(t)
	counts := map[string]int{}
	for _, r := range rows {
		cmd := strings.ReplaceAll(r.command, "$WS", ws)
		d := bash(e, cmd)
		counts[r.verdict]++
		if d.Verdict.String() != r.verdict {
			t.Errorf("commands.tsv:%d %q: %s by %s (%v), want %s", r.line, cmd, d.Verdict, d.Rule, d.Reasons, r.verdict)
			continue
		}
		if !strings.Contains(d.Rule, r.rule) {
			t.Errorf("commands.tsv:%d %q: %s by %q, want the rule to name %q (reasons %v)", r.line, cmd, d.Verdict, d.Rule, r.rule, d.Reasons)
		}
		if d.Verdict != permissions.Allow && d.Fix == "" {
			t.Errorf("commands.tsv:%d %q: %s without a fix", r.line, cmd, d.Verdict)
		}
	}
	if len(rows) < 60 {
		t.Errorf("the table holds %d forms, want at least 60", len(rows))
	}
	t.Logf("%d forms: %d allow, %d ask, %d deny", len(rows), counts["allow"], counts["ask"], counts["deny"])
}
