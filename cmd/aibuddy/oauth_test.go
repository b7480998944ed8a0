package main_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxas"
)

// BH-066 (variant: two processes) and the login command end to end, with
// real aibuddy processes against fx-as:
//  1. `aibuddy mcp login fx --no-browser` prints the authorization URL; a
//     test browser (an HTTP client following the redirects) opens it and
//     lands on the loopback listener; the tokens go to the data folder.
//  2. The token expires (fixture clock +70 s on 60 s tokens). Two `aibuddy
//     call fx__search` processes share the data folder; both are refused
//     with the expired token, and the fixture holds the refresh grant until
//     both were, so both are in their refresh at once: exactly one refresh
//     grant is made, the other process waits on the store's lock and reads
//     the rotated token, and both calls succeed.
//  3. `aibuddy mcp logout fx`, then a call fails at the Authorization stage
//     naming `aibuddy mcp login fx`.
func TestOAuthLoginAndTwoProcessesShareStore(t *testing.T) {
	hold := make(chan struct{})
	as, err := fxas.Start(fxas.Options{TokenLifetime: 60 * time.Second, HoldRefresh: hold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = as.Close() })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "aibuddy.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers":{"fx":{"url":"`+as.MCPURL()+`"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// 1. Login.
	login := exec.CommandContext(ctx, bin, "mcp", "login", "fx", "--no-browser", "--config", cfg, "--data-dir", data)
	stderr, err := login.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	login.Stdout = &stdout
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	urlRE := regexp.MustCompile(`http://\S+/authorize\?\S+`)
	sc := bufio.NewScanner(stderr)
	var authURL string
	var shown strings.Builder
	for sc.Scan() {
		shown.WriteString(sc.Text() + "\n")
		if authURL = urlRE.FindString(sc.Text()); authURL != "" {
			break
		}
	}
	if authURL == "" {
		t.Fatalf("login printed no authorization URL:\n%s", shown.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	resp, err := http.Get(authURL) // the browser: follows the redirect to the loopback listener
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "logged in to fx") {
		t.Errorf("callback page %q", page)
	}
	if err := login.Wait(); err != nil {
		t.Fatalf("login: %v\n%s", err, shown.String())
	}
	if !strings.Contains(stdout.String(), "logged in to fx: 2 tools") {
		t.Errorf("login said %q", stdout.String())
	}
	grants, _ := filepath.Glob(filepath.Join(data, "mcp-oauth", "fx-*.json"))
	if len(grants) != 1 {
		t.Fatalf("grant files %v", grants)
	}
	if fi, err := os.Stat(grants[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("grant file mode %v, %v", fi.Mode(), err)
	}

	// 2. Two processes, one expired grant.
	as.Advance(70 * time.Second)
	call := func(q string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, "call", "--config", cfg, "--data-dir", data, "--workspace", ws, "fx__search", `{"q":"`+q+`"}`)
		return cmd
	}
	procs := []*exec.Cmd{call("one"), call("two")}
	outs := make([]bytes.Buffer, len(procs))
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		p.Stdout, p.Stderr = &outs[i], &outs[i]
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = p.Wait() })
	}
	if err := as.Await(ctx, func(l fxas.Log) bool { return len(l.Refused()) >= 2 }); err != nil {
		t.Fatal(err)
	}
	close(hold)
	wg.Wait()
	for i, q := range []string{"one", "two"} {
		if errs[i] != nil || !strings.Contains(outs[i].String(), "results for "+q) {
			t.Errorf("process %d: %v\n%s", i, errs[i], outs[i].String())
		}
	}
	log := as.Log()
	if log.Refreshes() != 1 {
		t.Errorf("%d refresh grants for two processes, want 1: %+v", log.Refreshes(), log.Grants)
	}
	for _, g := range log.Grants {
		if !g.OK {
			t.Errorf("a refused grant: %+v (a process spent a rotated refresh token)", g)
		}
	}

	// 3. Logout, then the call asks for a login.
	out, err := exec.CommandContext(ctx, bin, "mcp", "logout", "fx", "--config", cfg, "--data-dir", data).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "logged out of fx") {
		t.Fatalf("logout: %v: %s", err, out)
	}
	out, err = call("three").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "aibuddy mcp login fx") {
		t.Errorf("call after logout: %v: %s", err, out)
	}
}
