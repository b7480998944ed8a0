package skills_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aibuddy/aibuddy/skills"
	"github.com/aibuddy/aibuddy/tool"
)

func Example() {
	dir, _ := os.MkdirTemp("", "skills")
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "changelog", "references"), 0o755)
	os.WriteFile(filepath.Join(dir, "changelog", "SKILL.md"), []byte(`---
name: changelog
description: Turn merged changes into a changelog entry. Use when asked for release notes.
license: MIT
---
1. Read references/style.md.
2. Group the changes under Added, Fixed and Changed.
`), 0o644)
	os.WriteFile(filepath.Join(dir, "changelog", "references", "style.md"), []byte("Past tense, one line per change.\n"), 0o644)

	catalog, problems := skills.Load([]string{dir})
	fmt.Println(len(problems), "problems")
	fmt.Print(catalog.Summary())

	view := skills.ViewSkill(catalog)
	res := view.Call(context.Background(), &tool.Call{ID: "call_1",
		Input: json.RawMessage(`{"name":"changelog","file":"references/style.md"}`)})
	fmt.Print(res.AllText())
	res = view.Call(context.Background(), &tool.Call{ID: "call_2",
		Input: json.RawMessage(`{"name":"changelog","file":"../../etc/passwd"}`)})
	fmt.Println(res.Stage)
	// Output:
	// 0 problems
	// - changelog: Turn merged changes into a changelog entry. Use when asked for release notes.
	// Past tense, one line per change.
	// authorization
}
