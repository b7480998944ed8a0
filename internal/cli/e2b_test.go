package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/internal/fixtures/fxenvd"
)

// e2bConfig writes settings for kind "e2b" on a fixture envd whose
// sandbox file system is this machine's, with ws as the workspace.
func e2bConfig(t *testing.T, ws string) (string, *fxenvd.Server) {
	t.Helper()
	srv := fxenvd.Start(t, fxenvd.Options{AccessToken: "cli-envd-token", Home: ws})
	doc, err := json.Marshal(map[string]any{"sandbox": map[string]any{
		"kind": "e2b", "workspace": ws, "confinement": "off",
		"e2b": map[string]any{"envdURL": srv.URL, "accessToken": "cli-envd-token"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, string(doc)), srv
}

// `aibuddy call` with sandbox.kind "e2b" runs the tools in the sandbox
// behind envd: write_file lands in the sandbox's workspace, read_file and
// execute see it there, and a path outside is refused there.
func TestCallOnE2BSandbox(t *testing.T) {
	ws := t.TempDir()
	cfg, srv := e2bConfig(t, ws)
	local := t.TempDir() // the host's folder: nothing may land here
	code, out, errs := runCLI(t, cli.Options{}, "call", "write_file", `{"path":"notes/a.txt","content":"remote hello\n"}`, "--config", cfg, "--workspace", local)
	if code != 0 {
		t.Fatalf("write_file: exit %d %q %q", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes", "a.txt")); err != nil || string(b) != "remote hello\n" {
		t.Fatalf("the sandbox holds %q (%v)", b, err)
	}
	if ents, _ := os.ReadDir(local); len(ents) != 0 {
		t.Errorf("the local folder got %v", ents)
	}
	code, out, errs = runCLI(t, cli.Options{}, "call", "read_file", `{"path":"notes/a.txt"}`, "--config", cfg, "--workspace", local)
	if code != 0 || !strings.Contains(out, "remote hello") {
		t.Errorf("read_file: exit %d %q %q", code, out, errs)
	}
	code, out, errs = runCLI(t, cli.Options{}, "call", "execute", `{"command":"pwd; cat notes/a.txt"}`, "--json", "--config", cfg, "--workspace", local)
	if code != 0 || !strings.Contains(out, ws) || !strings.Contains(out, "remote hello") {
		t.Errorf("execute: exit %d %q %q", code, out, errs)
	}
	if srv.Starts() == 0 {
		t.Error("execute did not go through envd's process.Start")
	}
	code, _, errs = runCLI(t, cli.Options{}, "call", "read_file", `{"path":"../x"}`, "--config", cfg, "--workspace", local)
	if code != cli.ExitToolError || !strings.Contains(errs, "Authorization error") {
		t.Errorf("outside path: exit %d %q", code, errs)
	}
	code, _, errs = runCLI(t, cli.Options{}, "call", "ls", "--config", writeConfig(t, `{"sandbox":{"kind":"daytona"}}`), "--workspace", local)
	if code != cli.ExitUsage || !strings.Contains(errs, "sandbox kind unavailable") {
		t.Errorf("daytona: exit %d %q", code, errs)
	}
}

// `aibuddy mcp` (stdio) with sandbox.kind "e2b": a host's tool calls run
// in the sandbox behind envd.
func TestMCPOnE2BSandbox(t *testing.T) {
	ws := t.TempDir()
	cfg, _ := e2bConfig(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := cli.Main(ctx, []string{"mcp", "--config", cfg, "--workspace", t.TempDir()}, cli.Options{Stdin: inR, Stdout: outW, Stderr: io.Discard})
		outW.Close()
		done <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2b-host", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": "echo from-the-sandbox > made.txt; pwd"}})
	if err != nil || res.IsError {
		t.Fatalf("execute: %v %+v", err, res)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "from-the-sandbox\n" {
		t.Errorf("the sandbox holds %q (%v)", b, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "made.txt"}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "from-the-sandbox") {
		t.Errorf("read_file: %v %q", err, textOf(res))
	}
	cs.Close()
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("aibuddy mcp exited %d", code)
		}
	case <-ctx.Done():
		t.Fatal("aibuddy mcp did not end after its stdin closed")
	}
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	if res == nil {
		return ""
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
