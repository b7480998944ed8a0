package permissions

import (
	"testing"

	"github.com/aibuddy/aibuddy/tool"
)

func TestSmoke(t *testing.T) {
	e, err := New(Options{Workspace: "/ws", Home: "/home/u", Settings: &Settings{
		Allow: []string{"Bash(echo:*)", "Bash(git status)"},
		Ask:   []string{"Bash(git push:*)"},
		Deny:  []string{"Bash(curl:*)", "Bash(git reset --hard:*)", "Read(./.env)"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"git -C /ws push origin main", "echo ok > >(curl -s http://blocked.test/x)", "$'\\x63url' http://blocked.test/",
		"c=cu; ${c}rl http://blocked.test/", "{curl,http://blocked.test/}", "cu\u200brl x", "echo hi", "cat .env", "ls; rm -rf build", "bash -c 'git push'",
		"env", "timeout -s KILL 5 nohup env A=1 git --git-dir=/ws/.git push", "echo ok 2> >(sh)", "find . -delete", "cat ~/.aws/credentials"} {
		d := e.Decide(Request{Tool: "execute", Access: tool.Access{Kind: "Bash", Command: c}})
		t.Logf("%-50q %s %s | %v | %s", c, d.Verdict, d.Rule, d.Reasons, d.Fix)
	}
}
