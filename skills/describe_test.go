package skills_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/skills"
)

// listPart is the skills list of view_skill's description: what follows
// "Skills available (name: purpose):".
func listPart(t *testing.T, desc string) string {
	t.Helper()
	_, list, ok := strings.Cut(desc, "Skills available (name: purpose):")
	if !ok {
		t.Fatalf("no skills list in the description:\n%s", desc)
	}
	return list
}

// manySkills loads n skills "skill-00".."skill-<n-1>" whose descriptions
// are long and span lines.
func manySkills(t *testing.T, n int) *skills.Catalog {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("skill-%02d", i)
		desc := fmt.Sprintf("Handles chore %d for the team.", i) + strings.Repeat(" More detail about when to use it.", 10)
		write(t, dir, name+"/SKILL.md", "---\nname: "+name+"\ndescription: >\n  "+desc+"\n---\nbody\n")
	}
	c, problems := skills.Load([]string{dir})
	if len(problems) != 0 || c.Len() != n {
		t.Fatalf("loaded %d, problems %v", c.Len(), problems)
	}
	return c
}

var moreLine = regexp.MustCompile(`\n- and (\d+) more \(`)

// A host that drops the server's instructions still learns the skills
// from view_skill's own description: every name with its purpose when
// there are few.
func TestViewSkillDescriptionNamesTheSkills(t *testing.T) {
	c, _ := fixture(t)
	desc := skills.ViewSkill(c).Description()
	list := listPart(t, desc)
	if list != "\n- other: Another skill.\n- report: Write weekly reports." {
		t.Errorf("skills list %q", list)
	}
	if strings.Contains(desc, "system prompt") || moreLine.MatchString(desc) {
		t.Errorf("description:\n%s", desc)
	}
	// The same tool reaches a run through the group.
	g := skills.Group(c)
	tools, err := g.Build(registry.Env{})
	if err != nil || len(tools) != 1 || tools[0].Description() != desc {
		t.Errorf("group's view_skill: %v %v", tools, err)
	}
}

// The list is bounded by count (default 30) and by characters, and says
// how many skills it leaves out; each purpose is one line.
func TestViewSkillDescriptionIsBounded(t *testing.T) {
	c := manySkills(t, 45)
	check := func(label string, opts *skills.ViewOptions, maxSkills, maxChars int) {
		t.Helper()
		list := listPart(t, skills.ViewSkillWith(c, opts).Description())
		if n := utf8.RuneCountInString(list); n > maxChars {
			t.Errorf("%s: list of %d characters > %d", label, n, maxChars)
		}
		lines := strings.Split(strings.TrimPrefix(list, "\n"), "\n")
		m := moreLine.FindStringSubmatch(list)
		if m == nil {
			t.Fatalf("%s: no \"and N more\" line:\n%s", label, list)
		}
		listed := len(lines) - 1
		if more, _ := strconv.Atoi(m[1]); listed+more != 45 || listed > maxSkills || listed == 0 {
			t.Errorf("%s: %d listed + %s more, want 45 in all and at most %d listed", label, listed, m[1], maxSkills)
		}
		for i, l := range lines[:listed] {
			want := fmt.Sprintf("- skill-%02d: Handles chore %d for the team.", i, i)
			if !strings.HasPrefix(l, want) || utf8.RuneCountInString(l) > 150 {
				t.Errorf("%s: line %d %q", label, i, l)
			}
		}
	}
	check("defaults", nil, skills.DefaultListSkills, skills.DefaultListChars)
	check("3 skills", &skills.ViewOptions{ListSkills: 3}, 3, skills.DefaultListChars)
	check("600 characters", &skills.ViewOptions{ListChars: 600}, 45, 600)
}
