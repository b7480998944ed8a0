//go:build linux

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/proctest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startServing runs aibuddy with args in the background until the test
// ends and returns the base URL its start-up line names (re "at http://...").
func startServing(t *testing.T, ctx context.Context, re *regexp.Regexp, args ...string) (base string, done <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	ch := make(chan int, 1)
	go func() {
		ch <- Main(ctx, args, Options{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: pw})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			return m[1], ch
		}
		t.Log(sc.Text())
	}
	t.Fatalf("aibuddy %v ended before serving (exit %d)", args, <-ch)
	return "", nil
}

// browser runs web/testdata/e2e.js in mode and returns its "step" lines
// as they come; every other line is logged.
func browser(t *testing.T, mode, base, shots string) (steps <-chan string, done <-chan error) {
	t.Helper()
	cmd := exec.Command("node", filepath.Join("..", "..", "web", "testdata", "e2e.js"), mode, base, testToken, shots)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st := make(chan string, 16)
	dn := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if s, ok := strings.CutPrefix(line, "step "); ok {
				st <- s
			} else {
				t.Log("browser: " + line)
			}
		}
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr.String())
		}
		close(st)
		dn <- err
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return st, dn
}

// expect waits for the browser's next step and fails unless it is want.
func expect(t *testing.T, steps <-chan string, done <-chan error, want string) {
	t.Helper()
	s, ok := <-steps
	if !ok {
		t.Fatalf("the browser ended before step %q: %v", want, <-done)
	}
	if s != want {
		t.Fatalf("browser step %q, want %q", s, want)
	}
}

// The web view in a real browser (Debian's chromium through
// playwright-core): log in with the token, watch an execute stream,
// approve one confirm and reject another (the command runs / does not),
// stop a long command (no process left); then, over the same data folder
// with aibuddy ui, the records: tasks with failures by stage, a task's
// calls, a compacted call paged through, a search.
func TestWebViewInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("a real browser: slow; the full pass runs it")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatalf("the browser tests need Debian's chromium (scripts/test installs it: apt-get install chromium): %v", err)
	}
	shots := os.Getenv("AIBUDDY_UI_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	t.Setenv(TokenEnv, testToken)
	ws, data := t.TempDir(), t.TempDir()
	for _, d := range []string{"keep-a", "keep-b"} {
		if err := os.MkdirAll(filepath.Join(ws, d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Confined as by default: the stop ends the sandbox's processes.
	cfg := writeConfigFile(t, `{"approval": {"via": "web"}, "web": {"pageChars": 20000}, "compaction": {"oneShotCalls": true}}`)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	base, served := startServing(t, ctx, regexp.MustCompile(`at (http://[^ ]+)/mcp`),
		"mcp", "--http", "127.0.0.1:0", "--config", cfg, "--workspace", ws, "--data-dir", data)
	cs := connectHTTP(t, ctx, base+"/mcp", testToken, nil)
	call := func(command string) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": command}})
		if err != nil {
			t.Fatalf("execute %q: %v", command, err)
		}
		return res
	}
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	async := func(command string) <-chan *mcp.CallToolResult {
		ch := make(chan *mcp.CallToolResult, 1)
		go func() { ch <- call(command) }()
		return ch
	}

	steps, done := browser(t, "live", base, shots)
	expect(t, steps, done, "live")
	streaming := async(`echo tick 1; while ! test -e go-on; do sleep 0.05; done; echo tick 2`)
	expect(t, steps, done, "saw-tick1") // seen while the command waits
	if err := os.WriteFile(filepath.Join(ws, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := <-streaming; res.IsError || !strings.Contains(text(res), "tick 2") {
		t.Fatalf("the streamed command: %s", text(res))
	}
	expect(t, steps, done, "streamed")

	approved := async("rm -rf keep-a")
	expect(t, steps, done, "approved")
	if res := <-approved; res.IsError {
		t.Fatalf("the approved command: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(ws, "keep-a")); !os.IsNotExist(err) {
		t.Fatalf("approved rm -rf keep-a did not run: %v", err)
	}
	rejected := async("rm -rf keep-b")
	expect(t, steps, done, "rejected")
	if res := <-rejected; !res.IsError || !strings.Contains(text(res), "rejected") || !strings.Contains(text(res), "keep it") {
		t.Fatalf("the rejected command: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(ws, "keep-b", "sub")); err != nil {
		t.Fatalf("rejected rm -rf keep-b ran: %v", err)
	}

	asked := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question",
			Arguments: map[string]any{"question": "Which branch?", "options": []string{"main", "dev"}}})
		if err != nil {
			t.Error(err)
		}
		asked <- res
	}()
	expect(t, steps, done, "answered")
	if res := <-asked; res == nil || res.IsError || !strings.Contains(text(res), "The user answered: dev") {
		t.Fatalf("ask_user_question: %+v", res)
	}

	// The command's output "up-42" is not in its own text (the page shows
	// the command line too). tree.txt names its processes on the host:
	// the shell's pid and PID namespace (confined: the namespace's).
	long := async(`(` + proctest.TreeLine + `) > tree.txt; sleep 600 & echo "up-$((6*7))"; wait`)
	expect(t, steps, done, "stopping")
	b, err := os.ReadFile(filepath.Join(ws, "tree.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := proctest.ParseTree(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(proctest.Live(tree)) == 0 {
		t.Fatalf("the long command's processes (%+v) are not running before the stop", tree)
	}
	if res := <-long; !res.IsError || !strings.Contains(text(res), "cancelled") {
		t.Fatalf("the stopped command: %s", text(res))
	}
	if left, err := proctest.WaitGone(func() []proctest.Proc { return proctest.Live(tree) }, 10*time.Second); err != nil || len(left) > 0 {
		t.Fatalf("processes of the stopped command still run: %v %v", left, err)
	}
	expect(t, steps, done, "stopped")
	expect(t, steps, done, "done")
	if err := <-done; err != nil {
		t.Fatalf("browser: %v", err)
	}

	_ = cs.Close()
	stop()
	if code := <-served; code != 0 {
		t.Fatalf("aibuddy mcp exit %d", code)
	}
	// A large output, compacted in the background (aibuddy call waits for
	// its compaction before it exits).
	var out strings.Builder
	if code := Main(context.Background(), []string{"call", "execute", `{"command":"seq 1 40000"}`, "--config", cfg, "--workspace", ws, "--data-dir", data},
		Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}); code != 0 {
		t.Fatalf("aibuddy call: %d %s", code, out.String())
	}

	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	base2, served2 := startServing(t, ctx2, regexp.MustCompile(`at (http://[^ ]+)/ui/`), "ui", "--http", "127.0.0.1:0", "--data-dir", data, "--config", cfg)
	steps, done = browser(t, "records", base2, shots)
	expect(t, steps, done, "done")
	if err := <-done; err != nil {
		t.Fatalf("browser: %v", err)
	}
	stop2()
	if code := <-served2; code != 0 {
		t.Fatalf("aibuddy ui exit %d", code)
	}
}

func writeConfigFile(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The live state /ui/api/snapshot gives a logged-in browser over aibuddy
// mcp --http: the upstream server with its state and the count gate's
// decision (discovery.perServer 1 defers its two tools), the session's
// tool set with the tool tool_search activated, the exclusions with their
// reasons, and the calls.
func TestWebLiveState(t *testing.T) {
	t.Setenv(TokenEnv, testToken)
	doc, _ := json.Marshal(map[string]any{
		"discovery": map[string]any{"perServer": 1},
		"mcpServers": map[string]any{"live": map[string]any{
			"command": os.Args[0], "args": []string{"-test.run=^$"}, "env": map[string]string{"AIBUDDY_CLI_TEST_MCP_SERVER": "1"}}}})
	cfg := writeConfigFile(t, string(doc))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	base, served := startServing(t, ctx, regexp.MustCompile(`at (http://[^ ]+)/mcp`),
		"mcp", "--http", "127.0.0.1:0", "--config", cfg, "--workspace", t.TempDir(), "--data-dir", t.TempDir())
	cs := connectHTTP(t, ctx, base+"/mcp", testToken, nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "select:live__grow"}})
	if err != nil || res.IsError {
		t.Fatalf("tool_search: %v %+v", err, res)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", base+"/ui/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	if r, err := hc.Do(req); err != nil || r.StatusCode != 200 {
		t.Fatalf("login: %v %v", err, r.Status)
	}
	r, err := hc.Get(base + "/ui/api/snapshot")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("snapshot: %v", err)
	}
	var snap struct {
		Servers    []struct{ Name, State, Gate string }
		Sessions   []struct{ Active, Activated, Deferred []string }
		Exclusions []struct{ Tool, Reason, Detail string }
		Calls      []struct{ Tool, Status, Summary string }
	}
	if err := json.NewDecoder(r.Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if len(snap.Servers) != 1 || snap.Servers[0].Name != "live" || snap.Servers[0].State != "connected" ||
		!strings.Contains(snap.Servers[0].Gate, "deferred") || !strings.Contains(snap.Servers[0].Gate, "> 1") {
		t.Errorf("servers: %+v", snap.Servers)
	}
	if len(snap.Sessions) != 1 || !slices.Contains(snap.Sessions[0].Activated, "live__grow") || !slices.Contains(snap.Sessions[0].Active, "live__grow") ||
		!slices.Contains(snap.Sessions[0].Deferred, "live__old") {
		t.Errorf("sessions: %+v", snap.Sessions)
	}
	excluded := false
	for _, x := range snap.Exclusions {
		excluded = excluded || (x.Tool == "view_skill" && x.Reason != "" && x.Detail != "")
	}
	if !excluded {
		t.Errorf("exclusions: %+v", snap.Exclusions)
	}
	if len(snap.Calls) != 1 || snap.Calls[0].Tool != "tool_search" || snap.Calls[0].Status != "ok" || snap.Calls[0].Summary == "" {
		t.Errorf("calls: %+v", snap.Calls)
	}
	// The MCP endpoint's token does not open the pages by itself, and the
	// pages' cookie does not open the MCP endpoint.
	if r, _ := http.Get(base + "/ui/api/snapshot"); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("snapshot without a session: %s", r.Status)
	}
	if r, _ := hc.Post(base+"/mcp", "application/json", strings.NewReader(`{}`)); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp with the pages' cookie only: %s", r.Status)
	}
	_ = cs.Close()
	stop()
	<-served
}
