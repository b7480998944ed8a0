package approval_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/permissions"
	"github.com/aibuddy/aibuddy/tool"
)

// A Gate over a policy with a permissions block and nobody to ask: the
// denied command and the one that would ask are both refused at the
// Authorization stage, naming the rule; the allowed one runs.
func ExampleGate() {
	pol := &approval.Policy{Workspace: "/work/app", Permissions: &permissions.Settings{
		Allow: []string{"Bash(echo:*)"}, Ask: []string{"Bash(git push:*)"}, Deny: []string{"Bash(curl:*)"}}}
	gate := &approval.Gate{Policy: pol, Lookup: lookup} // no Confirmer: nobody can be asked
	run := gate.Wrap(func(ctx context.Context, c *tool.Call) *tool.Result { return tool.Text("ran") })
	for _, cmd := range []string{"echo hi", "git -C . push", "c=cu; ${c}rl http://example.test/"} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		call := &tool.Call{ID: "c1", Name: "execute", Input: in}
		verdict, act := pol.Check(approval.Subject{Tool: builtins["execute"], Call: call})
		res := run(context.Background(), call)
		fmt.Printf("%d %s | %s %v\n", verdict, act.Rule, res.Stage, res.IsError)
	}
	// Output:
	// 0 permissions.allow[0] "Bash(echo:*)" |  false
	// 1 permissions.ask[0] "Bash(git push:*)" | authorization true
	// 2 permissions.deny[0] "Bash(curl:*)" | authorization true
}

// With approval.via "web", a high-impact action waits in a Broker until
// a person at the browser decides the request that names it (its id and
// the digest of the action).
func ExampleBroker() {
	changed := make(chan struct{}, 4)
	b := approval.NewBroker(&approval.BrokerOptions{OnChange: func() { changed <- struct{}{} }})
	c := approval.ConfirmVia(approval.ViaWeb, nil, b)
	go func() {
		<-changed
		r := b.Pending()[0]
		fmt.Println("asked:", r.Action.Summary())
		_ = b.Decide(r.ID, r.Digest, approval.Decision{Approved: true})
	}()
	d, _ := c.Confirm(context.Background(), approval.Action{Tool: "execute", Target: "`make clean`",
		Scope: "workspace shell", Consequence: "runs the command"})
	fmt.Println("approved:", d.Approved)
	// Output:
	// asked: execute `make clean` (workspace shell): runs the command
	// approved: true
}
