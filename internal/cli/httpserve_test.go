package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/mcpserver"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testGateways resolves a real run (built-in tools over a temporary
// workspace and data folder) and the gateways `aibuddy mcp` serves it
// with.
func testGateways(t *testing.T, ctx context.Context) *gateways {
	t.Helper()
	c := common{workspace: t.TempDir(), dataDir: t.TempDir(), serveEarly: true}
	r, err := c.resolve(ctx, &Options{Stderr: io.Discard, Registry: BuiltinRegistry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	opts := &mcpserver.Options{Version: "test", Logger: r.logger, Discovery: r.discovery, Pipeline: r.pipeline(nil)}
	return &gateways{r: r, opts: opts, life: ctx}
}

// testHTTPOptions are the options serveHTTP uses for testToken, with the
// default bounds.
func testHTTPOptions() httpOptions {
	var o httpOptions
	httpSettings(config.MCP{}, &o)
	o.Verify = staticToken(testToken)
	o.Bearer = bearerOptions{Realm: "aibuddy", SDK: auth.RequireBearerTokenOptions{AllowMissingExpiration: true}, Hint: "send the token"}
	return o
}

// bearer is an http.RoundTripper that adds Authorization: Bearer token.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	base := b.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(req)
}

// connectHTTP opens an SDK client session at url with token, on protocol
// 2025-11-25: sessions (what these tests are about) end with it; a
// 2026-07-28 client is served statelessly (protocol_test.go).
func connectHTTP(t *testing.T, ctx context.Context, url, token string, base http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: base}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTPRequiresBearerOnEveryMethod: every method, with and without a
// live session's Mcp-Session-Id, gets 401 and a Bearer challenge (RFC
// 6750 §3: no error code without credentials, error="invalid_token" with
// wrong ones), and nothing behind the check runs: no gateway is made, the
// session a refused DELETE names stays open. The right token works for
// the SDK client, for the GET stream and for DELETE.
func TestHTTPRequiresBearerOnEveryMethod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := testGateways(t, ctx)
	posts := &postsDone{h: g.handler(testHTTPOptions())}
	ts := httptest.NewServer(posts)
	defer ts.Close()
	url := ts.URL + "/mcp"

	cs := connectHTTP(t, ctx, url, testToken, nil)
	defer cs.Close()
	sid := cs.ID()
	if sid == "" {
		t.Fatal("no session id")
	}
	posts.wait()
	if n := g.live(); n != 1 {
		t.Fatalf("%d gateways after one initialize, want 1", n)
	}

	creds := map[string]string{ // Authorization header -> wanted error param ("" = none)
		"":                           "",
		"Bearer wrong":               `error="invalid_token"`,
		"Bearer " + testToken + "x":  `error="invalid_token"`,
		"Bearer " + testToken[:63]:   `error="invalid_token"`,
		"Basic " + testToken:         `error="invalid_token"`,
		"Bearer":                     `error="invalid_token"`,
		"Bearer " + testToken + " x": `error="invalid_token"`,
	}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodOptions, http.MethodHead} {
		for _, session := range []string{"", sid} {
			for header, wantErr := range creds {
				var body io.Reader
				if method == http.MethodPost {
					body = strings.NewReader(initializeBody)
				}
				req, _ := http.NewRequestWithContext(ctx, method, url, body)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if header != "" {
					req.Header.Set("Authorization", header)
				}
				if session != "" {
					req.Header.Set("Mcp-Session-Id", session)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				what := fmt.Sprintf("%s session=%q Authorization=%q", method, session, header)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s: status %d, want 401", what, resp.StatusCode)
					continue
				}
				ch := resp.Header.Get("WWW-Authenticate")
				if !strings.HasPrefix(ch, `Bearer realm="aibuddy"`) {
					t.Errorf("%s: WWW-Authenticate %q, want a Bearer challenge", what, ch)
				}
				if wantErr == "" && strings.Contains(ch, "error=") || wantErr != "" && !strings.Contains(ch, wantErr) {
					t.Errorf("%s: WWW-Authenticate %q, want error param %q", what, ch, wantErr)
				}
			}
		}
	}
	posts.wait()
	if n := g.live(); n != 1 {
		t.Errorf("%d gateways after refused requests, want 1 (a refused request makes none)", n)
	}

	// The session the refused DELETEs named is still open, and calls in it
	// make no further gateway.
	for i := range 5 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": fmt.Sprintf("f%d.txt", i), "content": "x\n"}})
		if err != nil || res.IsError {
			t.Fatalf("write_file after refused requests: %v %+v", err, res)
		}
	}
	posts.wait()
	if n := g.live(); n != 1 {
		t.Errorf("%d gateways after 5 calls in one session, want 1", n)
	}

	// The right token opens the GET stream (of a session of its own: the
	// SDK client holds its session's one standalone stream).
	raw := rawSession(t, ctx, url, testToken)
	dropped := make(chan *mcpserver.Gateway, 2)
	g.mu.Lock()
	g.onDrop = func(gw *mcpserver.Gateway) { dropped <- gw }
	g.mu.Unlock()
	posts.wait()
	if n := g.live(); n != 2 {
		t.Errorf("%d gateways with two sessions, want 2", n)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Mcp-Session-Id", raw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("GET stream with the token: %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	cs.Close() // the SDK client's DELETE
	sid = raw

	// The right token's DELETE ends the session and drops its gateway.
	req, _ = http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE with the token: %d, want 204", resp.StatusCode)
	}
	for range 2 { // the SDK client's session, then the raw one
		select {
		case <-dropped:
		case <-ctx.Done():
			t.Fatal("a deleted session's gateway was not dropped")
		}
	}
	if n := g.live(); n != 0 {
		t.Errorf("%d gateways after both sessions ended, want 0", n)
	}
}

// rawSession opens a session with plain HTTP requests (initialize, then
// notifications/initialized) and returns its id.
func rawSession(t *testing.T, ctx context.Context, url, token string) string {
	t.Helper()
	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", initializeBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	if resp := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", resp.StatusCode)
	}
	return sid
}

// TestHTTPFailedInitializeMakesNoLastingGateway: a POST that opens no
// session (not an initialize) leaves no gateway behind.
func TestHTTPFailedInitializeMakesNoLastingGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := testGateways(t, ctx)
	posts := &postsDone{h: g.handler(testHTTPOptions())}
	ts := httptest.NewServer(posts)
	defer ts.Close()
	for range 10 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	posts.wait()
	if n := g.live(); n != 0 {
		t.Errorf("%d gateways after 10 POSTs that opened no session, want 0", n)
	}
}

// TestHTTPSlowBodyIsCut: a body slower than mcp.httpBodyTimeout gets 408
// and the connection closes, with or without the token; a tool call and
// a GET stream that outlast the timeout are not cut.
func TestHTTPSlowBodyIsCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := testGateways(t, ctx)
	o := testHTTPOptions()
	o.BodyTimeout = 300 * time.Millisecond
	ts := httptest.NewServer(g.handler(o))
	defer ts.Close()

	for _, auth := range []string{"Bearer " + testToken, ""} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		head := "POST /mcp HTTP/1.1\r\nHost: " + ts.Listener.Addr().String() + "\r\nContent-Type: application/json\r\n" +
			"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
		if auth != "" {
			head += "Authorization: " + auth + "\r\n"
		}
		start := time.Now()
		fmt.Fprint(conn, head+"\r\n"+initializeBody[:20]) // and nothing more
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("auth=%q: no response to a stalled body: %v", auth, err)
		}
		msg, _ := io.ReadAll(resp.Body)
		want := http.StatusRequestTimeout
		if auth == "" {
			want = http.StatusUnauthorized
		}
		if resp.StatusCode != want {
			t.Errorf("auth=%q: status %d (%s), want %d", auth, resp.StatusCode, msg, want)
		}
		if want == http.StatusRequestTimeout && !strings.Contains(string(msg), "mcp.httpBodyTimeout") {
			t.Errorf("408 body %q does not name the setting", msg)
		}
		// The connection is closed (no further request is read from it)
		// within the body timeout, not left to the client.
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("auth=%q: after the refusal the connection gave %v, want EOF", auth, err)
		}
		if d := time.Since(start); d < o.BodyTimeout {
			t.Errorf("auth=%q: cut after %s, before the body timeout %s", auth, d, o.BodyTimeout)
		}
		conn.Close()
	}

	// A call that runs longer than the body timeout is answered.
	cs := connectHTTP(t, ctx, ts.URL+"/mcp", testToken, nil)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": "sleep 0.6; echo outlasted"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(fmt.Sprint(res.Content[0].(*mcp.TextContent).Text), "outlasted") {
		t.Errorf("a call longer than the body timeout: %+v", res.Content)
	}
}

// pipeListener is a net.Listener of in-memory connections (net.Pipe), so
// an HTTP server and its clients run inside a synctest bubble.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestHTTPSessionsExpire, on synctest's clock: of two sessions, the one
// idle for mcp.sessionIdleTimeout (default 30 min) is closed, its
// gateway dropped and garbage-collected with its tool set (weak
// pointers), and its id gets 404; the other, which sent a request every
// 20 minutes, is served throughout.
func TestHTTPSessionsExpire(t *testing.T) {
	g := testGateways(t, context.Background())
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		o := testHTTPOptions()
		if o.SessionIdle != 30*time.Minute {
			t.Fatalf("default idle timeout %s, want 30m", o.SessionIdle)
		}
		ln := newPipeListener()
		srv := &http.Server{Handler: g.handler(o)}
		go srv.Serve(ln)
		tr := &http.Transport{DialContext: ln.dial}
		url := "http://aibuddy.test/mcp"

		dropped := make(chan weak.Pointer[mcpserver.Gateway], 16)
		g.mu.Lock()
		g.onDrop = func(gw *mcpserver.Gateway) { dropped <- weak.Make(gw) }
		g.mu.Unlock()

		idle := connectHTTP(t, ctx, url, testToken, tr)
		g.mu.Lock()
		idleGW := weak.Make(g.all[0])
		idleSet := weak.Make(g.all[0].Set())
		g.mu.Unlock()
		busy := connectHTTP(t, ctx, url, testToken, tr)
		// The SDK client first tries server/discover (protocol 2026-07-28)
		// without a session: the gateway made for it is dropped with the
		// request. Only the two sessions are left.
		synctest.Wait()
		for len(dropped) > 0 {
			<-dropped
		}
		if n := g.live(); n != 2 {
			t.Fatalf("%d gateways after two connects, want 2", n)
		}

		for _, at := range []time.Duration{20 * time.Minute, 40 * time.Minute} {
			time.Sleep(20 * time.Minute) // synctest's clock: no real wait
			synctest.Wait()
			if _, err := busy.ListTools(ctx, nil); err != nil {
				t.Fatalf("the busy session at %s: %v", at, err)
			}
			if at < o.SessionIdle && g.live() != 2 {
				t.Fatalf("at %s: %d sessions, want both", at, g.live())
			}
		}
		synctest.Wait()
		select {
		case w := <-dropped:
			if w != idleGW {
				t.Fatal("a gateway other than the idle session's was dropped")
			}
		default:
			t.Fatal("the idle session's gateway was not dropped after 40 min")
		}
		if n := g.live(); n != 1 {
			t.Fatalf("%d gateways after the idle session expired, want 1", n)
		}
		if _, err := idle.ListTools(ctx, nil); err == nil {
			t.Error("the expired session still answers")
		}
		runtime.GC()
		if idleGW.Value() != nil || idleSet.Value() != nil {
			t.Error("the expired session's gateway or tool set is still reachable after GC")
		}

		busy.Close()
		idle.Close()
		synctest.Wait()
		srv.Close()
		tr.CloseIdleConnections()
		ln.Close()
	})
}

// postsDone serves h and lets a test wait until the handler of every POST
// it has answered has returned: the gateway bookkeeping (a gateway dropped
// or watched) runs after the response is written, so a client can read
// the response before it.
type postsDone struct {
	h  http.Handler
	wg sync.WaitGroup
}

func (p *postsDone) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodPost {
		p.wg.Add(1)
		defer p.wg.Done()
	}
	p.h.ServeHTTP(w, req)
}

// wait returns once every POST handler started so far has returned.
func (p *postsDone) wait() { p.wg.Wait() }
