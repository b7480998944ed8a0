package agent_test

import (
	"context"
	"fmt"
	"os"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// An agent over the built-in tools on a workspace folder. The model here
// replays a script; a real program passes a provider adapter
// (anthropicmodel, openaimodel, chatmodel).
func ExampleAgent_Run() {
	ws, _ := os.MkdirTemp("", "agent-example")
	defer os.RemoveAll(ws)
	sb, _ := localsandbox.New(ws, nil)
	defer sb.Close()
	reg := registry.New(coretools.Groups(nil, nil), coretools.Metas, nil)
	set, _, _ := capability.Resolve(reg, capability.RunSpec{Sandbox: sb})

	model := &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("w1", "write_file", `{"path":"hello.txt","content":"hi\n"}`)),
		static(use("d1", "execute", `{"command":"rm -rf /tmp/nothing-here"}`)),
		static(say("Wrote hello.txt.")),
	}}
	a := agent.New(agent.Options{
		Model: model,
		Set:   set,
		Confirmer: approval.ConfirmerFunc(func(ctx context.Context, act approval.Action) (approval.Decision, error) {
			return approval.Decision{Approved: false, Note: "not today"}, nil
		}),
	})
	for ev, err := range a.Run(context.Background(), "greet") {
		switch ev.Kind {
		case agent.EventToolCall:
			fmt.Println("call", ev.Tool)
		case agent.EventDecision:
			fmt.Println(ev.Exchange.Text())
		case agent.EventToolResult:
			if ev.Result.IsError {
				fmt.Printf("result %s: %s failure\n", ev.Tool, ev.Result.Stage)
			} else {
				fmt.Printf("result %s: ok\n", ev.Tool)
			}
		case agent.EventText:
			fmt.Println("model:", ev.Text)
		case agent.EventDone:
			fmt.Println("stop:", ev.Summary.Stop, "err:", err, "failures:", ev.Summary.Failures)
		}
	}
	// Output:
	// call write_file
	// result write_file: ok
	// call execute
	// Rejected: execute `rm -rf /tmp/nothing-here` (workspace shell (not path-sandboxed)): runs the command with your user's rights; its effects on files, network and processes are whatever the command does
	// The user said: not today
	// result execute: authorization failure
	// model: Wrote hello.txt.
	// stop: end_turn err: <nil> failures: map[authorization:1]
}
