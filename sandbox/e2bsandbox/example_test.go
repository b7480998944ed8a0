package e2bsandbox_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxenvd"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/e2bsandbox"
)

// Open a workspace inside a sandbox through its envd, write a file and
// run a command there. (The envd here is the test fixture; against E2B,
// EnvdURL is "https://49983-<sandboxID>.e2b.app" and AccessToken the
// sandbox's envdAccessToken, or use NewAPI with an API key.)
func ExampleNew() {
	ws, _ := os.MkdirTemp("", "example-e2b-")
	defer os.RemoveAll(ws)
	envd := fxenvd.New(fxenvd.Options{AccessToken: "secret", Home: ws})
	defer envd.Close()

	ctx := context.Background()
	sb, err := e2bsandbox.New(ctx, e2bsandbox.Options{EnvdURL: envd.URL, AccessToken: "secret", Workspace: ws})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	if _, err := sb.Write(ctx, sandbox.WriteRequest{Path: "hello.txt", Content: []byte("hello from the sandbox\n")}); err != nil {
		fmt.Println(err)
		return
	}
	var out strings.Builder
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "cat hello.txt", Stdout: &out})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out.String())
	fmt.Println("exit", res.ExitCode)
	// Output:
	// hello from the sandbox
	// exit 0
}
