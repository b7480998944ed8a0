package skills_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/skills"
	"github.com/aibuddy/aibuddy/tool"
)

// fixture is a skills folder with one skill "report" holding reference
// files, plus a secret outside every skill folder.
func fixture(t *testing.T) (*skills.Catalog, string) {
	t.Helper()
	outside := t.TempDir()
	write(t, outside, "secret.txt", "TOP SECRET")
	dir := t.TempDir()
	write(t, dir, "report/SKILL.md", skillMD("report", "Write weekly reports.", "# Report\n\n1. Read templates/weekly.md.\n2. Fill it in.\n"))
	write(t, dir, "report/templates/weekly.md", "# Week\n\n## Done\n\n## Next\n")
	write(t, dir, "report/scripts/logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	write(t, dir, "other/SKILL.md", skillMD("other", "Another skill.", "Other body\n"))
	write(t, dir, "other/private.md", "other's file")
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(dir, "report", "secret.txt"))
	symlink(t, filepath.Join(outside), filepath.Join(dir, "report", "outdir"))
	c, problems := skills.Load([]string{dir})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	return c, dir
}

func view(t *testing.T, c *skills.Catalog, input string) *tool.Result {
	t.Helper()
	return skills.ViewSkill(c).Call(context.Background(), &tool.Call{ID: "call_1", Input: json.RawMessage(input)})
}

func TestViewSkillInstructions(t *testing.T) {
	c, dir := fixture(t)
	res := view(t, c, `{"name":"report"}`)
	if res.IsError {
		t.Fatal(res.AllText())
	}
	text := res.AllText()
	for _, want := range []string{
		"Skill report (folder " + filepath.Join(dir, "report") + ")",
		"# Report\n\n1. Read templates/weekly.md.\n2. Fill it in.\n",
		`Reference files (2); read one with view_skill {"name": "report", "file": "<path>"}:`,
		"- scripts/logo.png\n- templates/weekly.md\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "description:") || strings.Contains(text, "secret") {
		t.Errorf("front matter or escaping link shown:\n%s", text)
	}
	if res.Evidence["truncated"] != false || res.Evidence["files"] != 2 {
		t.Errorf("evidence %v", res.Evidence)
	}
}

func TestViewSkillReferenceFile(t *testing.T) {
	c, _ := fixture(t)
	res := view(t, c, `{"name":"report","file":"templates/weekly.md"}`)
	if res.IsError || res.AllText() != "# Week\n\n## Done\n\n## Next\n" {
		t.Fatalf("got %q (error %v)", res.AllText(), res.IsError)
	}
	res = view(t, c, `{"name":"report","file":"./templates/../templates/weekly.md","offset":3,"limit":1}`)
	want := "## Done\n[templates/weekly.md truncated: showed lines 3-3; continue with view_skill {\"name\": \"report\", \"file\": \"templates/weekly.md\", \"offset\": 4}]\n"
	if res.AllText() != want {
		t.Errorf("window:\n%q\nwant\n%q", res.AllText(), want)
	}
	if res.Evidence["next_offset"] != 4 || res.Evidence["truncated"] != true {
		t.Errorf("evidence %v", res.Evidence)
	}
	res = view(t, c, `{"name":"report","file":"scripts/logo.png"}`)
	if res.IsError || !strings.Contains(res.AllText(), "binary or non-UTF-8 file (16 bytes); its content is not shown") {
		t.Errorf("binary: %q", res.AllText())
	}
	res = view(t, c, `{"name":"report","file":"templates/weekly.md","offset":99}`)
	if res.Stage != tool.Parameters || !strings.Contains(res.AllText(), "past the end") {
		t.Errorf("offset past end: %v %q", res.Stage, res.AllText())
	}
}

func TestViewSkillConfinement(t *testing.T) {
	c, _ := fixture(t)
	for _, file := range []string{
		"secret.txt",        // symlink to a file outside
		"outdir/secret.txt", // through a symlinked folder
		"../other/private.md",
		"templates/../../other/private.md",
		"/etc/passwd",
		`..\other\private.md`,
	} {
		res := view(t, c, fmt.Sprintf(`{"name":"report","file":%q}`, file))
		if !res.IsError || res.Stage != tool.Authorization {
			t.Errorf("%s: stage %q error %v: %s", file, res.Stage, res.IsError, res.AllText())
		}
		if strings.Contains(res.AllText(), "TOP SECRET") || strings.Contains(res.AllText(), "other's file") {
			t.Errorf("%s: content leaked: %s", file, res.AllText())
		}
	}
}

func TestViewSkillErrors(t *testing.T) {
	c, _ := fixture(t)
	res := view(t, c, `{"name":"reprot"}`)
	if res.Stage != tool.Parameters || !strings.Contains(res.AllText(), `no skill named "reprot"; known skills: other, report`) {
		t.Errorf("unknown skill: %v %s", res.Stage, res.AllText())
	}
	res = view(t, c, `{"name":"report","file":"templates/monthly.md"}`)
	if res.Stage != tool.Parameters || !strings.Contains(res.AllText(), "- templates/weekly.md") {
		t.Errorf("missing file: %v %s", res.Stage, res.AllText())
	}
	res = view(t, c, `{"name":"report","file":"templates"}`)
	if res.Stage != tool.Parameters || !strings.Contains(res.AllText(), "is a directory") {
		t.Errorf("directory: %v %s", res.Stage, res.AllText())
	}
	res = view(t, c, `{"name":"report","limit":5000}`)
	if res.Stage != tool.Parameters {
		t.Errorf("limit over 2000 accepted: %s", res.AllText())
	}
	res = view(t, nil, `{"name":"report"}`)
	if res.Stage != tool.Parameters || !strings.Contains(res.AllText(), "no skills are loaded") {
		t.Errorf("empty catalog: %s", res.AllText())
	}
}

func TestViewSkillBoundsLargeFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "big/SKILL.md", skillMD("big", "Big files.", strings.Repeat("instruction line\n", 3000)))
	var lines strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&lines, "line %04d %s\n", i, strings.Repeat("x", 90)) // 101 characters each
	}
	write(t, dir, "big/data.txt", lines.String())
	write(t, dir, "big/one-line.json", strings.Repeat("é", skills.MaxChars+500))
	c, _ := skills.Load([]string{dir})

	res := view(t, c, `{"name":"big","file":"data.txt"}`)
	text := res.AllText()
	if n := len([]rune(text)); n > skills.MaxChars+300 {
		t.Errorf("result is %d characters", n)
	}
	// 30,000 / 101 = 297 whole lines fit.
	if !strings.HasSuffix(text, "[data.txt truncated: showed lines 1-297; continue with view_skill {\"name\": \"big\", \"file\": \"data.txt\", \"offset\": 298}]\n") {
		t.Errorf("tail: %q", text[len(text)-200:])
	}
	res = view(t, c, `{"name":"big","file":"data.txt","offset":4990}`)
	if !strings.HasPrefix(res.AllText(), "line 4990 ") || res.Evidence["last_line"] != 5000 || res.Evidence["truncated"] != false {
		t.Errorf("last page: %v", res.Evidence)
	}

	res = view(t, c, `{"name":"big","file":"one-line.json"}`)
	text = res.AllText()
	if !strings.Contains(text, "line 1 cut at 30000 characters]") || strings.Contains(text, "continue with") {
		t.Errorf("one long line: %q", text[len(text)-120:])
	}
	if n := strings.Count(text, "é"); n != skills.MaxChars {
		t.Errorf("%d characters shown, want %d", n, skills.MaxChars)
	}

	res = view(t, c, `{"name":"big"}`)
	if !strings.Contains(res.AllText(), `[instructions truncated: showed lines 1-1764; continue with view_skill {"name": "big", "offset": 1765}]`) {
		t.Errorf("instructions: %q", res.AllText()[len(res.AllText())-300:])
	}
	if !strings.Contains(res.AllText(), "- data.txt\n- one-line.json\n") {
		t.Error("file list missing after truncated instructions")
	}
}

func TestGroup(t *testing.T) {
	c, _ := fixture(t)
	g := skills.Group(c)
	reg := registry.New([]registry.Group{g}, []registry.Meta{skills.Meta}, nil)
	if err := reg.AssertConsistent(); err != nil {
		t.Fatal(err)
	}
	want := "Skills available (use view_skill to read one before following it):\n- other: Another skill.\n- report: Write weekly reports.\n"
	if g.Instructions != want {
		t.Errorf("instructions %q", g.Instructions)
	}
	set, excl, err := capability.Resolve(reg, capability.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Names()) != 0 || len(excl) != 1 || excl[0].Reason != capability.MissingPrereq {
		t.Errorf("without the prerequisite: set %v, exclusions %v", set.Names(), excl)
	}
	set, _, err = capability.Resolve(reg, capability.RunSpec{Prerequisites: []string{skills.Prerequisite}})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); len(got) != 1 || got[0] != "view_skill" {
		t.Fatalf("with the prerequisite: %v", got)
	}
	if res := set.Call(context.Background(), &tool.Call{Name: "view_skill", Input: json.RawMessage(`{"name":"other"}`)}); !strings.Contains(res.AllText(), "Other body") {
		t.Errorf("call through the set: %s", res.AllText())
	}
}
