package main_test

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// `aibuddy mcp` started by a person in a terminal (stdin is a tty) says on
// stderr what it waits for and how to register it with a host; stdout
// stays empty (it carries protocol frames only). Before, it waited in
// silence.
func TestMCPInTerminalSaysWhatItWaitsFor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	ws := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "mcp", "--workspace", ws, "--data-dir", t.TempDir())
	cmd.Stdin = tty
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child holds its own copy
	var notice strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		notice.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "to stop") {
			break
		}
	}
	got := notice.String()
	for _, want := range []string{"waiting for an MCP host", "claude mcp add aibuddy -- ", "mcp --workspace " + ws,
		`"mcpServers"`, "--http 127.0.0.1:8765", "Ctrl-C"} {
		if !strings.Contains(got, want) {
			t.Errorf("the notice lacks %q:\n%s", want, got)
		}
	}
	// Ctrl-D at the start of a line ends the terminal's input: aibuddy
	// exits, and has written nothing to stdout.
	if _, err := ptmx.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(stdout)
	_, _ = io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after Ctrl-D: %v", err)
	}
	if len(out) > 0 {
		t.Errorf("stdout is for protocol frames only, got %q", out)
	}
}

// With a host's pipe on stdin there is no notice: stderr stays quiet.
func TestMCPOverPipeHasNoNotice(t *testing.T) {
	cmd := exec.Command(bin, "mcp", "--workspace", t.TempDir(), "--data-dir", t.TempDir())
	cmd.Stdin = strings.NewReader(rawFrames())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if _, err := cmd.Output(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr over a pipe: %s", stderr.String())
	}
}
