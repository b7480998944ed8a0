package permissions_test

import (
	"fmt"

	"github.com/aibuddy/aibuddy/permissions"
	"github.com/aibuddy/aibuddy/tool"
)

func ExampleEngine_Decide() {
	e, err := permissions.New(permissions.Options{Workspace: "/work/app", Home: "/hm/u", Settings: &permissions.Settings{
		Allow: []string{"Bash(npm run test:*)"},
		Ask:   []string{"Bash(git push:*)"},
		Deny:  []string{"Bash(curl:*)", "Read(./.env)"},
	}})
	if err != nil {
		panic(err)
	}
	for _, cmd := range []string{
		"npm run test -- --watch",
		"timeout 60 git -C /work/app push origin main",
		"echo ok > >(curl -s http://example.test/x)",
		"cat .env",
		"c=cu; ${c}rl http://example.test/",
		"go build ./...",
	} {
		d := e.Decide(permissions.Request{Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: cmd}})
		fmt.Printf("%-5s %s\n", d.Verdict, d.Rule)
	}
	// Output:
	// allow permissions.allow[0] "Bash(npm run test:*)"
	// ask   permissions.ask[0] "Bash(git push:*)"
	// deny  permissions.deny[0] "Bash(curl:*)"
	// ask   permissions.deny[1] "Read(./.env)"
	// deny  permissions.deny[0] "Bash(curl:*)"
	// ask   permissions.defaultMode "default"
}

func ExampleAnalyze() {
	a := permissions.Analyze(`cd sub && sudo -u ops env A=1 git --git-dir=.git push | tee log`, "/ws", "/hm/u")
	for _, c := range a.Commands {
		fmt.Printf("%q wrappers=%v norm=%q\n", c.Text, c.Wrappers, c.Norm)
	}
	// Output:
	// "cd sub" wrappers=[] norm="cd sub"
	// "sudo -u ops env A=1 git --git-dir=.git push" wrappers=[sudo env] norm="git push"
	// "tee log" wrappers=[] norm="tee log"
}
