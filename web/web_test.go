package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
	"github.com/aibuddy/aibuddy/web"
)

const token = "0123456789abcdef0123456789abcdef"

func verify(_ context.Context, got string, _ *http.Request) error {
	if got != token {
		return errors.New("not this server's token")
	}
	return nil
}

type rig struct {
	srv    *httptest.Server
	st     store.Store
	hub    *web.Hub
	broker *approval.Broker
}

func newRig(t *testing.T, buffer int) *rig {
	t.Helper()
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r := &rig{st: st}
	r.broker = approval.NewBroker(&approval.BrokerOptions{OnChange: func() { r.hub.ApprovalsChanged() }})
	r.hub = web.NewHub(&web.HubOptions{EventBuffer: buffer, Broker: r.broker})
	mux := http.NewServeMux()
	mux.Handle("/ui/", web.New(&web.Options{Verify: verify, Store: st, Hub: r.hub, Broker: r.broker}))
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

// client returns an HTTP client with a cookie jar that follows no
// redirects, so each answer is seen as given.
func client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login posts the token from the server's own origin and returns the
// page's CSRF token.
func (r *rig) login(t *testing.T, c *http.Client) string {
	t.Helper()
	req, _ := http.NewRequest("POST", r.srv.URL+"/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.srv.URL)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %s", res.Status)
	}
	body := r.get(t, c, "/ui/", http.StatusOK)
	m := regexp.MustCompile(`name="csrf" content="([0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token on the live page")
	}
	return m[1]
}

func (r *rig) get(t *testing.T, c *http.Client, path string, want int) string {
	t.Helper()
	res, err := c.Get(r.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(res.Body).WriteTo(&b)
	if res.StatusCode != want {
		t.Fatalf("GET %s: %s, want %d: %s", path, res.Status, want, b.String())
	}
	return b.String()
}

// post sends a JSON body with the given headers and returns the status.
func (r *rig) post(t *testing.T, c *http.Client, path string, body any, hdr map[string]string) int {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", r.srv.URL+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Without the token nothing is served but the login form; a wrong token
// and a login posted from another site are refused; the right one sets a
// cookie that only this page's path gets and no script can read.
func TestRefusesWithoutTheToken(t *testing.T) {
	r := newRig(t, 16)
	c := client()
	for _, p := range []string{"/ui/", "/ui/tasks", "/ui/calls/x", "/ui/search?tool=execute"} {
		res, err := c.Get(r.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/ui/login") {
			t.Errorf("GET %s without a session: %s to %q", p, res.Status, res.Header.Get("Location"))
		}
	}
	r.get(t, c, "/ui/api/snapshot", http.StatusUnauthorized)
	r.get(t, c, "/ui/events", http.StatusUnauthorized)
	if code := r.post(t, c, "/ui/api/calls/x/stop", nil, map[string]string{"Origin": r.srv.URL}); code != http.StatusUnauthorized {
		t.Errorf("stop without a session: %d", code)
	}
	form := func(tok, origin string) *http.Response {
		req, _ := http.NewRequest("POST", r.srv.URL+"/ui/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := form("wrong-token-wrong-token-wrong-token", r.srv.URL); res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("a wrong token: %s, cookies %v", res.Status, res.Cookies())
	}
	if res := form(token, "http://evil.example"); res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
		t.Errorf("a login posted from another site: %s", res.Status)
	}
	res := form(token, r.srv.URL)
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("login: %s %v", res.Status, res.Cookies())
	}
	ck := res.Cookies()[0]
	if ck.Name != web.CookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui" {
		t.Errorf("cookie %+v", ck)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	r.get(t, c, "/ui/api/snapshot", http.StatusOK)
}

// A logged-in browser's cookie does not let another site drive the page:
// a foreign Origin, Sec-Fetch-Site cross-site, no origin at all, and a
// missing or wrong CSRF token are each refused; only the page's own
// request decides.
func TestRefusesCrossSiteRequests(t *testing.T) {
	r := newRig(t, 64)
	c := client()
	csrf := r.login(t, c)
	got := make(chan approval.Decision, 1)
	go func() {
		d, err := r.broker.Confirm(context.Background(), approval.Action{CallID: "c1", Tool: "execute", Target: "`rm -rf build`"})
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	var req approval.Request
	for req.ID == "" { // wait for the request through the live event stream
		waitEvent(t, r, "approvals")
		if p := r.broker.Pending(); len(p) == 1 {
			req = p[0]
		}
	}
	path := "/ui/api/approvals/" + req.ID
	body := map[string]string{"digest": req.Digest, "decision": "approve"}
	for name, hdr := range map[string]map[string]string{
		"foreign Origin":           {"Origin": "http://evil.example", web.CSRFHeader: csrf},
		"Sec-Fetch-Site cross":     {"Sec-Fetch-Site": "cross-site", web.CSRFHeader: csrf},
		"Sec-Fetch-Site same-site": {"Sec-Fetch-Site": "same-site", "Origin": r.srv.URL, web.CSRFHeader: csrf},
		"no Origin, no Fetch":      {web.CSRFHeader: csrf},
		"no CSRF token":            {"Origin": r.srv.URL},
		"wrong CSRF token":         {"Origin": r.srv.URL, web.CSRFHeader: strings.Repeat("0", 64)},
	} {
		if code := r.post(t, c, path, body, hdr); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if len(r.broker.Pending()) != 1 {
		t.Fatal("a refused request decided")
	}
	// A cross-site GET with the cookie is refused too.
	g, _ := http.NewRequest("GET", r.srv.URL+"/ui/api/snapshot", nil)
	g.Header.Set("Sec-Fetch-Site", "cross-site")
	if res, err := c.Do(g); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site GET: %v %v", res.Status, err)
	}
	own := map[string]string{"Origin": r.srv.URL, "Sec-Fetch-Site": "same-origin", web.CSRFHeader: csrf}
	if code := r.post(t, c, path, map[string]string{"digest": strings.Repeat("a", 64), "decision": "approve"}, own); code != http.StatusUnprocessableEntity {
		t.Errorf("another action's digest: %d", code)
	}
	if code := r.post(t, c, path, body, own); code != http.StatusOK {
		t.Fatalf("the page's own decision: %d", code)
	}
	if d := <-got; !d.Approved {
		t.Fatal("not approved")
	}
	if code := r.post(t, c, path, body, own); code != http.StatusConflict {
		t.Errorf("a replayed decision: %d, want 409", code)
	}
	// Logged out, the cookie is worth nothing.
	if code := r.post(t, c, "/ui/logout", nil, own); code != http.StatusSeeOther {
		t.Errorf("logout: %d", code)
	}
	r.get(t, c, "/ui/api/snapshot", http.StatusUnauthorized)
}

// sse reads one event stream.
type sse struct {
	res *http.Response
	sc  *bufio.Scanner
}

type ev struct{ id, kind, data string }

func openSSE(t *testing.T, r *rig, c *http.Client, lastID string) *sse {
	t.Helper()
	req, _ := http.NewRequest("GET", r.srv.URL+"/ui/events", nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := c.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("events: %v %v", err, res.Status)
	}
	t.Cleanup(func() { res.Body.Close() })
	return &sse{res: res, sc: bufio.NewScanner(res.Body)}
}

func (s *sse) next(t *testing.T) ev {
	t.Helper()
	var e ev
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && e.kind != "":
			return e
		case strings.HasPrefix(line, "id: "):
			e.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			e.kind = line[7:]
		case strings.HasPrefix(line, "data: "):
			e.data = line[6:]
		}
	}
	t.Fatalf("stream ended: %v", s.sc.Err())
	return e
}

// waitEvent logs a fresh client in and waits for the next event of kind
// on a stream opened from now (the snapshot's sequence number).
func waitEvent(t *testing.T, r *rig, kind string) {
	t.Helper()
	if r.broker != nil && len(r.broker.Pending()) > 0 && kind == "approvals" {
		return
	}
	c := client()
	r.login(t, c)
	seq := r.hub.Snapshot().Seq
	if r.broker != nil && len(r.broker.Pending()) > 0 && kind == "approvals" {
		return
	}
	s := openSSE(t, r, c, jsonInt(seq))
	for {
		if e := s.next(t); e.kind == kind {
			return
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A live stream delivers the events after Last-Event-ID in order; one
// that asks for events the bounded ring no longer holds gets a "gap"
// (then the page reloads the snapshot) and goes on from the newest.
func TestEventsResumeAndGap(t *testing.T) {
	r := newRig(t, 8)
	c := client()
	r.login(t, c)
	ctx := r.hub.Begin(context.Background(), "task-1", &tool.Call{ID: "c1", Name: "execute", Input: json.RawMessage(`{"command":"yes"}`)})
	r.hub.Stage("c1", tool.Discovery)
	r.hub.Event("c1", tool.Event{Kind: tool.EventStdout, Data: []byte("one\n")})
	s := openSSE(t, r, c, "1") // after the call's begin event
	if e := s.next(t); e.kind != "stage" || e.id != "2" {
		t.Fatalf("first event after 1: %+v", e)
	}
	if e := s.next(t); e.kind != "output" || !strings.Contains(e.data, `"text":"one\n"`) {
		t.Fatalf("second: %+v", e)
	}
	// Overrun the ring (8 events) while nobody reads from id 3.
	for range 20 {
		r.hub.Event("c1", tool.Event{Kind: tool.EventStdout, Data: []byte("x")})
	}
	late := openSSE(t, r, c, "3")
	if e := late.next(t); e.kind != "gap" || e.id != "23" {
		t.Fatalf("a stream behind the ring: %+v, want a gap at 23", e)
	}
	snap := r.hub.Snapshot()
	if snap.Seq != 23 || len(snap.Calls) != 1 || snap.Calls[0].OutputBytes != 24 || snap.Calls[0].Output != "one\n"+strings.Repeat("x", 20) {
		t.Fatalf("snapshot after the gap: %+v", snap)
	}
	// A heartbeat is an event of its own and the call's last beat.
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r.hub.Event("c1", tool.Event{Kind: tool.EventHeartbeat, Time: at})
	if e := late.next(t); e.kind != "beat" || !strings.Contains(e.data, `"at":"2026-01-02T03:04:05Z"`) {
		t.Fatalf("heartbeat event: %+v", e)
	}
	if got := r.hub.Snapshot().Calls[0].LastBeat; !got.Equal(at) {
		t.Fatalf("last beat %v", got)
	}
	// Stop cancels the call's context, End reports it.
	if !r.hub.Stop("c1") || ctx.Err() == nil {
		t.Fatal("Stop did not cancel the call's context")
	}
	r.hub.End("c1", tool.ErrorResult(tool.Errorf(tool.Execution, "cancelled"), "execute"), 5*time.Millisecond)
	if e := late.next(t); e.kind != "call" || !strings.Contains(e.data, `"status":"error"`) || !strings.Contains(e.data, `"stage":"execution"`) {
		t.Fatalf("end event: %+v", e)
	}
	if r.hub.Stop("c1") {
		t.Error("Stop of an ended call")
	}
}

// aibuddy ui: the records pages over a store alone; the live page sends
// the browser to the records.
func TestRecordsOnly(t *testing.T) {
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for i, rec := range []*store.Record{
		{ToolCallID: "a1", TaskID: "t1", Tool: "execute", Input: json.RawMessage(`{"command":"make"}`), Output: json.RawMessage(`{"content":[{"type":"text","text":"built"}]}`), Model: json.RawMessage(`{"content":[{"type":"text","text":"built"}]}`), Outcome: store.OutcomeOK},
		{ToolCallID: "a2", TaskID: "t1", Tool: "read_file", Input: json.RawMessage(`{"path":"nope"}`), Output: json.RawMessage(`{"content":[{"type":"text","text":"no such file"}],"isError":true,"stage":"parameters"}`), Stage: "parameters", Outcome: store.OutcomeError},
		{ToolCallID: "a3", TaskID: "t1", Tool: "execute", Input: json.RawMessage(`{"command":"rm -rf /"}`), Output: json.RawMessage(`{"content":[{"type":"text","text":"denied"}],"isError":true,"stage":"authorization"}`), Stage: "authorization", Outcome: store.OutcomeError},
	} {
		rec.StartedAt, rec.EndedAt = now.Add(time.Duration(i)*time.Second), now.Add(time.Duration(i)*time.Second+time.Millisecond)
		if err := st.Put(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(web.New(&web.Options{Verify: verify, Store: st}))
	defer srv.Close()
	r := &rig{srv: srv, st: st}
	c := client()
	req, _ := http.NewRequest("POST", srv.URL+"/ui/login", strings.NewReader("token="+token))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	if res, err := c.Do(req); err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %v", err)
	}
	res, _ := c.Get(srv.URL + "/ui/")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/tasks" {
		t.Errorf("live page without a hub: %s %s", res.Status, res.Header.Get("Location"))
	}
	tasks := r.get(t, c, "/ui/tasks", 200)
	for _, want := range []string{`href="/ui/tasks/t1"`, "3 calls, 2 failed", `title="parameters: 1"`, `title="authorization: 1"`} {
		if !strings.Contains(tasks, want) {
			t.Errorf("tasks page lacks %q", want)
		}
	}
	found := r.get(t, c, "/ui/search?tool=execute&stage=authorization", 200)
	if !strings.Contains(found, "/ui/calls/a3") || strings.Contains(found, "/ui/calls/a1") || strings.Contains(found, "/ui/calls/a2") {
		t.Errorf("search by tool and stage: %s", found)
	}
	r.get(t, c, "/ui/calls/nope", 404)
}
