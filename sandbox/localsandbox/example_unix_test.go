//go:build unix

package localsandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// A FIFO is refused without being opened, so the call cannot block.
func ExampleSandbox_Read_fifo() {
	ws, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(ws)
	if err := unix.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	sb, _ := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true})
	defer sb.Close()
	_, err := sb.Read(context.Background(), sandbox.ReadRequest{Path: "pipe"})
	fmt.Println(err)
	// Output:
	// read pipe: not a regular file or directory (it is a named pipe (FIFO), which is never opened)
}
