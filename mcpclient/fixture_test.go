package mcpclient_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxmcp"
	"github.com/aibuddy/aibuddy/mcpclient"
)

// fxEnv makes the test binary run an fxmcp fixture (its value is the
// fixture's command line) instead of the tests.
const fxEnv = "FXMCP_ARGS"

// fxStdio is fx-stdio as a configured server: this test binary, run as
// the fixture.
func fxStdio(name string) mcpclient.ServerConfig {
	return mcpclient.ServerConfig{Name: name, Type: mcpclient.TypeStdio, Command: os.Args[0],
		Args: []string{"-test.run=^$"}, Env: map[string]string{fxEnv: "stdio"}}
}

// fxHTTP is a running fx-http process.
type fxHTTP struct {
	t    *testing.T
	URL  string
	args string
	cmd  *exec.Cmd
	in   io.WriteCloser
}

// startFxHTTP runs fx-http ("http" plus args, e.g. "-single") as a
// process of its own until the test ends.
func startFxHTTP(t *testing.T, args ...string) *fxHTTP {
	t.Helper()
	f := &fxHTTP{t: t, args: strings.Join(append([]string{"http"}, args...), " ")}
	f.start("127.0.0.1:0")
	t.Cleanup(f.stop)
	return f
}

func (f *fxHTTP) start(addr string) {
	f.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fxEnv+"="+f.args+" -addr "+addr)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.t.Fatalf("fx-http did not start: %v", err)
	}
	f.URL = strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	f.cmd, f.in = cmd, in
}

// stop ends the process (its stdin closes) and reaps it.
func (f *fxHTTP) stop() {
	if f.cmd == nil {
		return
	}
	_ = f.in.Close()
	_ = f.cmd.Wait()
	f.cmd = nil
}

// restartProcess stops the process and starts a new one on the same
// address: every session is gone, as after a real restart.
func (f *fxHTTP) restartProcess() {
	f.t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(f.URL, "http://"), "/mcp")
	f.stop()
	f.start(addr)
}

// control runs /control/<op> and returns the server's state after it.
func (f *fxHTTP) control(op string) fxmcp.State {
	f.t.Helper()
	resp, err := http.Get(strings.TrimSuffix(f.URL, "/mcp") + "/control/" + op)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st fxmcp.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		f.t.Fatalf("control %s: %v", op, err)
	}
	return st
}

func (f *fxHTTP) server(name string) mcpclient.ServerConfig {
	return mcpclient.ServerConfig{Name: name, Type: mcpclient.TypeHTTP, URL: f.URL}
}
