package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aibuddy/aibuddy/tool"
)

func ExampleDefine() {
	greet, err := tool.Define(tool.Spec{
		Name:        "greet",
		Description: "Greets someone by name.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		Handler: func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
			in, err := tool.Decode[struct{ Name string }](c)
			if err != nil {
				return nil, err
			}
			return tool.Text("hello, " + in.Name), nil
		},
	})
	if err != nil {
		panic(err)
	}
	ok := greet.Call(context.Background(), &tool.Call{ID: "toolu_01", Input: json.RawMessage(`{"name":"Ada"}`)})
	bad := greet.Call(context.Background(), &tool.Call{ID: "toolu_02", Input: json.RawMessage(`{"name":7}`)})
	fmt.Println(ok.AllText())
	fmt.Println(bad.Stage, bad.AllText())

	_, err = tool.Define(tool.Spec{Name: "list", InputSchema: json.RawMessage(`{"type":"array"}`), Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return nil, nil }})
	fmt.Println(err)
	// Output:
	// hello, Ada
	// parameters Parameters error in greet: invalid input: field name: got number, want string (next: correct the arguments to match the input schema of greet)
	// define tool "list": type: top level must be "type": "object", got "array"
}
