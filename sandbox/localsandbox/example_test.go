package localsandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// A rule given as sandbox.Deny judges the real path of the object the
// sandbox opens: a link to .env is refused like .env itself, whatever it
// is called, and the refusal names the rule and the real path.
func ExampleSandbox_Read_deny() {
	ws, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(ws)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=abc123\n"), 0o600)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("hello\n"), 0o644)
	os.Symlink(".env", filepath.Join(ws, "innocent.txt"))

	sb, err := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	deny := func(real string) (string, bool) { return ".env", real == ".env" }

	r, err := sb.Read(context.Background(), sandbox.ReadRequest{Path: "notes.txt", Deny: deny})
	fmt.Println(r.Lines[0].Text, err)

	_, err = sb.Read(context.Background(), sandbox.ReadRequest{Path: "innocent.txt", Deny: deny})
	var de *sandbox.DeniedError
	fmt.Println(errors.Is(err, sandbox.ErrDenied), errors.As(err, &de) && de.Real == ".env")
	fmt.Println(err)
	// Output:
	// hello <nil>
	// true true
	// read innocent.txt: path is denied by a rule (it resolves to .env, which is denied by the rule ".env")
}
