package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is an `aibuddy mcp --http 127.0.0.1:0` process.
type httpServer struct {
	url       string // http://127.0.0.1:PORT/mcp
	tokenFile string // the token file it named, when it made or read one
}

// startHTTP starts aibuddy mcp --http with env added to the test's
// environment and reads its start-up lines up to the one about the token.
func startHTTP(t *testing.T, env []string, args ...string) httpServer {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	var s httpServer
	var seen []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if m := regexp.MustCompile(`http://[0-9.:]+/mcp`).FindString(line); m != "" && s.url == "" {
			s.url = m
		}
		if strings.Contains(line, "every request needs Authorization: Bearer") {
			if m := regexp.MustCompile(`the token in (\S+) \(`).FindStringSubmatch(line); m != nil {
				s.tokenFile = m[1]
			}
			break
		}
	}
	if s.url == "" {
		t.Fatalf("server did not print its address and token line; stderr:\n%s", strings.Join(seen, "\n"))
	}
	go io.Copy(io.Discard, stderr)
	return s
}

// bearer is an http.RoundTripper that adds Authorization: Bearer token.
type bearer struct{ token string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

const e2eToken = "e2e0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"

// TestMCPStreamableHTTP serves over --http with the token of
// $AIBUDDY_TOKEN and connects with the SDK's streamable HTTP client, whose
// HTTP client adds the header; without the token it cannot connect.
func TestMCPStreamableHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	srv := startHTTP(t, []string{"AIBUDDY_TOKEN=" + e2eToken}, "--workspace", ws)
	if srv.tokenFile != "" {
		t.Errorf("with $AIBUDDY_TOKEN set, the server named a token file %s", srv.tokenFile)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, nil)
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url}, nil); err == nil {
		cs.Close()
		t.Fatal("the SDK client connected without the token")
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url,
		HTTPClient: &http.Client{Transport: bearer{e2eToken}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mustOK(t, "write_file", callTool(t, ctx, cs, "write_file", map[string]any{"path": "h.txt", "content": "over http\n"}))
	if b, _ := os.ReadFile(filepath.Join(ws, "h.txt")); string(b) != "over http\n" {
		t.Errorf("disk has %q", b)
	}
	out := mustOK(t, "execute", callTool(t, ctx, cs, "execute", map[string]any{"command": "cat h.txt"}))
	if !strings.Contains(out, "over http") {
		t.Errorf("execute over http: %q", out)
	}
	// DNS rebinding guard: a page of another site is refused before the
	// MCP handler, even with the token; localhost origins pass.
	for origin, want := range map[string]int{"https://evil.example": http.StatusForbidden, "http://localhost:3000": http.StatusOK} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.url, strings.NewReader(initialize))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+e2eToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %s: status %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

// curlResponse is one response curl printed with -i.
type curlResponse struct {
	status int
	header http.Header
	body   string
}

// curl runs a real curl process against url and parses its -i output.
func curl(t *testing.T, cred *syscall.Credential, args ...string) curlResponse {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is not installed (%v): run `bash scripts/test`, which installs it", err)
	}
	cmd := exec.Command(path, append([]string{"-sS", "-i", "--max-time", "30"}, args...)...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl %v: %v (%s)", args, err, out)
	}
	// curl prints the headers as received and the body decoded (no
	// chunk framing), so only the head is parsed as HTTP.
	head, body, ok := strings.Cut(string(out), "\r\n\r\n")
	tp := textproto.NewReader(bufio.NewReader(strings.NewReader(head + "\r\n\r\n")))
	status, _ := tp.ReadLine()
	hdr, herr := tp.ReadMIMEHeader()
	var code int
	if _, err := fmt.Sscanf(status, "HTTP/1.1 %d", &code); !ok || err != nil || herr != nil {
		t.Fatalf("curl %v printed no HTTP response: %v %v\n%s", args, err, herr, out)
	}
	return curlResponse{status: code, header: http.Header(hdr), body: body}
}

// TestMCPHTTPTokenWithCurl: without $AIBUDDY_TOKEN, aibuddy makes a token
// file (0600) in the data folder and names it, never printing the token;
// curl without the token, or with a wrong one, gets 401 and a Bearer
// challenge on POST, GET and DELETE, also naming a live session; with the
// token, curl opens a session, runs a command in it, and deletes it. As
// another user (uid 65534, when the test runs as root), the token file
// cannot be read and the server cannot be used.
func TestMCPHTTPTokenWithCurl(t *testing.T) {
	ws := t.TempDir()
	data := t.TempDir()
	srv := startHTTP(t, []string{"AIBUDDY_TOKEN="}, "--workspace", ws, "--data-dir", data)
	if want := filepath.Join(data, "http-token"); srv.tokenFile != want {
		t.Fatalf("token file named %q, want %q", srv.tokenFile, want)
	}
	fi, err := os.Stat(srv.tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, fi)
	}
	raw, _ := os.ReadFile(srv.tokenFile)
	token := strings.TrimSpace(string(raw))
	if len(token) != 64 {
		t.Fatalf("token of %d characters, want 64 hex digits", len(token))
	}
	// --print-token prints the same token.
	pt, err := exec.Command(bin, "mcp", "--print-token", "--data-dir", data).Output()
	if err != nil || strings.TrimSpace(string(pt)) != token {
		t.Errorf("--print-token: %q, %v; want the file's token", pt, err)
	}

	post := func(cred *syscall.Credential, auth, session, body string) curlResponse {
		args := []string{"-X", "POST", srv.url, "-H", "Content-Type: application/json",
			"-H", "Accept: application/json, text/event-stream", "--data-binary", body}
		if auth != "" {
			args = append(args, "-H", "Authorization: "+auth)
		}
		if session != "" {
			args = append(args, "-H", "Mcp-Session-Id: "+session, "-H", "Mcp-Protocol-Version: 2025-06-18")
		}
		return curl(t, cred, args...)
	}
	open := post(nil, "Bearer "+token, "", initialize)
	session := open.header.Get("Mcp-Session-Id")
	if open.status != http.StatusOK || session == "" {
		t.Fatalf("initialize with the token: %d, session %q: %s", open.status, session, open.body)
	}
	if r := post(nil, "Bearer "+token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}

	// nearMiss differs from the token in its last hex digit only (never
	// equal to it, whatever that digit is).
	last := byte('0')
	if token[len(token)-1] == '0' {
		last = '1'
	}
	nearMiss := token[:len(token)-1] + string(last)
	for _, auth := range []string{"", "Bearer wrong-token", "Bearer " + nearMiss, "Basic " + token} {
		for _, sid := range []string{"", session} {
			for _, method := range []string{"POST", "GET", "DELETE"} {
				args := []string{"-X", method, srv.url, "-H", "Accept: application/json, text/event-stream"}
				if method == "POST" {
					args = append(args, "-H", "Content-Type: application/json", "--data-binary", initialize)
				}
				if auth != "" {
					args = append(args, "-H", "Authorization: "+auth)
				}
				if sid != "" {
					args = append(args, "-H", "Mcp-Session-Id: "+sid)
				}
				r := curl(t, nil, args...)
				ch := r.header.Get("Www-Authenticate")
				if r.status != http.StatusUnauthorized || !strings.HasPrefix(ch, "Bearer ") {
					t.Errorf("%s session=%v Authorization=%q: %d, WWW-Authenticate %q; want 401 and a Bearer challenge",
						method, sid != "", auth, r.status, ch)
				}
				if strings.Contains(r.body, token) || strings.Contains(ch, token) {
					t.Errorf("%s: the refusal shows the token", method)
				}
			}
		}
	}

	// The session survived the refused DELETEs and runs a command.
	call := post(nil, "Bearer "+token, session,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo ran-through-curl"}}}`)
	if call.status != http.StatusOK || !strings.Contains(call.body, "ran-through-curl") {
		t.Errorf("tools/call with the token: %d %s", call.status, call.body)
	}

	if os.Getuid() == 0 {
		nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
		cat := exec.Command("cat", srv.tokenFile)
		cat.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
		if out, err := cat.CombinedOutput(); err == nil || strings.Contains(string(out), token) {
			t.Errorf("uid 65534 read the token file: %q", out)
		}
		if r := post(nobody, "", "", initialize); r.status != http.StatusUnauthorized {
			t.Errorf("uid 65534 without the token: %d, want 401", r.status)
		}
	} else {
		t.Log("not root: the other-user checks (uid 65534) are not run")
	}

	del := curl(t, nil, "-X", "DELETE", srv.url, "-H", "Authorization: Bearer "+token, "-H", "Mcp-Session-Id: "+session)
	if del.status != http.StatusNoContent {
		t.Errorf("DELETE with the token: %d %s", del.status, del.body)
	}
	if r := post(nil, "Bearer "+token, session, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); r.status != http.StatusNotFound {
		t.Errorf("the deleted session: %d, want 404", r.status)
	}
}
