package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxas"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// startAS runs fx-as for the test.
func startAS(t *testing.T, o fxas.Options) *fxas.Server {
	t.Helper()
	s, err := fxas.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fxServer is the mcpServers entry of fx-as's protected endpoint.
func fxServer(t *testing.T, as *fxas.Server, extra string) mcpclient.ServerConfig {
	t.Helper()
	raw := map[string]json.RawMessage{"fx": json.RawMessage(`{"url":"` + as.MCPURL() + `"` + extra + `}`)}
	servers, err := mcpclient.ParseServersWith(raw, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return servers[0]
}

// testBrowser is the user's browser: it follows the authorization URL's
// redirects, which end at the login's loopback listener.
func testBrowser(t *testing.T) func(string) error {
	return func(u string) error {
		go func() {
			resp, err := http.Get(u)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "logged in") {
				t.Errorf("browser: %s: %s", resp.Status, b)
			}
		}()
		return nil
	}
}

// login runs Login against the fixture with the test browser.
func login(t *testing.T, sc mcpclient.ServerConfig, store *mcpclient.TokenStore) *mcpclient.LoginResult {
	t.Helper()
	var out strings.Builder
	res, err := mcpclient.Login(context.Background(), sc, mcpclient.LoginOptions{Store: store, Open: testBrowser(t), Out: &out, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Login: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "/authorize?") {
		t.Errorf("the login did not show the authorization URL: %q", out.String())
	}
	return res
}

func toolNames(m *mcpclient.Manager, server string) []string {
	var names []string
	for _, tl := range m.Tools()[server] {
		names = append(names, tl.Name())
	}
	slices.Sort(names)
	return names
}

func callTool(m *mcpclient.Manager, name, input string) *tool.Result {
	return m.Call(context.Background(), &tool.Call{ID: "c", Name: name, Input: json.RawMessage(input)})
}

// The login flow end to end: protected-resource and authorization-server
// discovery, dynamic registration, PKCE, the browser step through the
// loopback listener, the code exchange; the grant lands in the store
// (0600) and a non-interactive Manager then reaches the tools with it.
func TestOAuthLoginEndToEnd(t *testing.T) {
	as := startAS(t, fxas.Options{})
	store := mcpclient.NewTokenStore(filepath.Join(t.TempDir(), "mcp-oauth"))
	sc := fxServer(t, as, "")
	res := login(t, sc, store)
	if res.Tools != 2 {
		t.Errorf("login listed %d tools, want 2 (search, update): %s", res.Tools, res.Status.Summary())
	}
	g, err := store.Load("fx", sc.URL)
	if err != nil || g == nil || g.AccessToken == "" || g.RefreshToken == "" || !strings.HasPrefix(g.ClientID, "dyn-") {
		t.Fatalf("stored grant %+v, %v", g, err)
	}
	files, _ := filepath.Glob(filepath.Join(store.Dir(), "*.json"))
	if len(files) != 1 {
		t.Fatalf("store files %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("grant file mode %v, %v; want 0600", fi.Mode(), err)
	}
	log := as.Log()
	if len(log.Grants) != 1 || log.Grants[0].Type != "authorization_code" || !log.Grants[0].OK {
		t.Errorf("grants %+v, want one authorization_code", log.Grants)
	}

	m := connect(t, &mcpclient.Options{OAuth: &mcpclient.OAuthOptions{Store: store}}, sc)
	if got := toolNames(m, "fx"); !slices.Equal(got, []string{"fx__search", "fx__update"}) {
		t.Fatalf("tools %v (%s)", got, status(t, m, "fx").Summary())
	}
	if r := callTool(m, "fx__search", `{"q":"a"}`); r.IsError || r.AllText() != "results for a" {
		t.Errorf("search: %+v", r)
	}
}

// BH-067 (a), BH-065 (the failing end): without a grant, the 401 on
// initialize fails the server at the Authorization stage, naming the
// server and the command to run; no SSE fallback is tried.
func TestOAuthNoGrantAsksForLogin(t *testing.T) {
	as := startAS(t, fxas.Options{})
	store := mcpclient.NewTokenStore(t.TempDir())
	m := connect(t, &mcpclient.Options{OAuth: &mcpclient.OAuthOptions{Store: store}}, fxServer(t, as, ""))
	st := status(t, m, "fx")
	if st.State != mcpclient.StateFailed || !strings.Contains(st.Error, "Authorization: MCP server fx needs a login (no stored grant)") ||
		!strings.Contains(st.Error, "aibuddy mcp login fx") {
		t.Fatalf("status %s: %s", st.State, st.Error)
	}
	// The SDK probes 2026-07-28 with server/discover, then initialize;
	// each gets its 401, and nothing else is tried.
	for _, r := range as.Log().Requests {
		if r.Method != http.MethodPost || (r.RPC != "initialize" && r.RPC != "server/discover") || r.Status != http.StatusUnauthorized {
			t.Errorf("request %+v: only POST server/discover and initialize were expected (no SSE fallback)", r)
		}
	}
}

// BH-065: the token expires (fixture clock +130 s on a 120 s token); the
// next call gets 401 invalid_token, the client refreshes once, stores the
// rotated tokens and retries: search and update stay, and the refused
// token is never sent again.
func TestOAuthRefreshOnExpiryKeepsTools(t *testing.T) {
	as := startAS(t, fxas.Options{TokenLifetime: 120 * time.Second})
	store := mcpclient.NewTokenStore(t.TempDir())
	sc := fxServer(t, as, "")
	login(t, sc, store)
	before, _ := store.Load("fx", sc.URL)
	m := connect(t, &mcpclient.Options{OAuth: &mcpclient.OAuthOptions{Store: store}}, sc)
	if got := toolNames(m, "fx"); !slices.Equal(got, []string{"fx__search", "fx__update"}) {
		t.Fatalf("tools %v (%s)", got, status(t, m, "fx").Summary())
	}
	as.Advance(130 * time.Second)
	if r := callTool(m, "fx__search", `{"q":"after expiry"}`); r.IsError || r.AllText() != "results for after expiry" {
		t.Fatalf("search after expiry: %+v", r)
	}
	if got := toolNames(m, "fx"); !slices.Equal(got, []string{"fx__search", "fx__update"}) {
		t.Errorf("tools after the refresh %v", got)
	}
	log := as.Log()
	if log.Refreshes() != 1 {
		t.Errorf("%d refresh grants, want 1: %+v", log.Refreshes(), log.Grants)
	}
	if len(log.Refused()) != 1 || log.Refused()[0] != before.AccessToken {
		t.Errorf("refused tokens %v, want the expired one only", log.Refused())
	}
	if tok := log.Resent(); tok != "" {
		t.Errorf("token %s was sent again after 401 invalid_token", tok)
	}
	after, _ := store.Load("fx", sc.URL)
	if after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken {
		t.Errorf("the store kept the old tokens: %+v", after)
	}
	if r := callTool(m, "fx__update", `{"id":"r1"}`); r.IsError || r.AllText() != "updated r1" {
		t.Errorf("update: %+v", r)
	}
}

// BH-065, proactive: when the client's clock says the token expires
// within the refresh margin, it refreshes before sending: the server never
// sees the expired token.
func TestOAuthProactiveRefresh(t *testing.T) {
	as := startAS(t, fxas.Options{TokenLifetime: 120 * time.Second})
	store := mcpclient.NewTokenStore(t.TempDir())
	sc := fxServer(t, as, "")
	login(t, sc, store)
	var mu sync.Mutex
	var skew time.Duration
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	m := connect(t, &mcpclient.Options{OAuth: &mcpclient.OAuthOptions{Store: store, Now: now}}, sc)
	if got := toolNames(m, "fx"); len(got) != 2 {
		t.Fatalf("tools %v (%s)", got, status(t, m, "fx").Summary())
	}
	as.Advance(130 * time.Second)
	mu.Lock()
	skew = 130 * time.Second
	mu.Unlock()
	for _, q := range []string{"p", "q"} {
		if r := callTool(m, "fx__search", `{"q":"`+q+`"}`); r.IsError {
			t.Fatalf("search: %+v", r)
		}
	}
	log := as.Log()
	if log.Refreshes() != 1 || len(log.Refused()) != 0 {
		t.Errorf("refreshes %d, refused %v; want 1 refresh (for the first call, none for the second) before any request with the expired token", log.Refreshes(), log.Refused())
	}
}

// BH-066: after expiry 8 parallel calls; the fixture holds the refresh
// grant until the first call's expired token was refused, so the other
// calls arrive while the refresh is in flight (each either got its own
// 401 or waits for the refresh before sending). Exactly one refresh is
// made, all 8 calls succeed with the new token, and no call sends the
// expired token twice.
func TestOAuthParallelCallsRefreshOnce(t *testing.T) {
	hold := make(chan struct{})
	as := startAS(t, fxas.Options{TokenLifetime: 60 * time.Second, HoldRefresh: hold})
	store := mcpclient.NewTokenStore(t.TempDir())
	sc := fxServer(t, as, "")
	login(t, sc, store)
	old, _ := store.Load("fx", sc.URL)
	m := connect(t, &mcpclient.Options{OAuth: &mcpclient.OAuthOptions{Store: store}}, sc)
	if got := toolNames(m, "fx"); len(got) != 2 {
		t.Fatalf("tools %v (%s)", got, status(t, m, "fx").Summary())
	}
	as.Advance(70 * time.Second)
	mark := len(as.Log().Requests)
	const n = 8
	results := make([]*tool.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = callTool(m, "fx__search", fmt.Sprintf(`{"q":"%d"}`, i)) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := as.Await(ctx, func(l fxas.Log) bool { return len(l.Refused()) >= 1 }); err != nil {
		t.Fatal(err)
	}
	close(hold)
	wg.Wait()
	for i, r := range results {
		if r.IsError || r.AllText() != fmt.Sprintf("results for %d", i) {
			t.Errorf("call %d: %+v", i, r)
		}
	}
	log := as.Log()
	if log.Refreshes() != 1 {
		t.Errorf("%d refresh grants, want exactly 1: %+v", log.Refreshes(), log.Grants)
	}
	// The fixture refuses the expired token every time: a resend shows
	// as more requests with it than calls.
	withOld, calls := 0, 0
	for _, r := range log.Requests[mark:] {
		if r.Token == old.AccessToken {
			withOld++
			if r.Status != http.StatusUnauthorized {
				t.Errorf("the expired token was accepted: %+v", r)
			}
		}
		if r.RPC == "tools/call" && r.Status == http.StatusOK {
			calls++
		}
	}
	if withOld < 1 || withOld > n || calls != n {
		t.Errorf("%d requests with the expired token (want 1..%d, one at most per call), %d calls served (want %d): %+v", withOld, n, calls, n, log.Requests[mark:])
	}
	t.Logf("%d of %d calls sent the expired token before the refresh; 1 refresh", withOld, n)
}

// BH-065, the refresh itself fails (the grant was revoked): the call
// fails at the Authorization stage naming the server, the reason and
// `aibuddy mcp login fx`.
func TestOAuthRefreshRefusedAsksForLogin(t *testing.T) {
	as := startAS(t, fxas.Options{TokenLifetime: 60 * time.Second})
	store := mcpclient.NewTokenStore(t.TempDir())
	sc := fxServer(t, as, "")
	login(t, sc, store)
	m := connect(t, &mcpclient.Options{OAuth: &mcpclient.OAuthOptions{Store: store}}, sc)
	if got := toolNames(m, "fx"); len(got) != 2 {
		t.Fatalf("tools %v (%s)", got, status(t, m, "fx").Summary())
	}
	as.Advance(70 * time.Second)
	as.RevokeRefreshTokens()
	r := callTool(m, "fx__search", `{"q":"x"}`)
	if !r.IsError || r.Stage != tool.Authorization {
		t.Fatalf("result %+v, want an Authorization-stage error", r)
	}
	for _, want := range []string{"MCP server fx needs a login", "invalid_grant", "aibuddy mcp login fx"} {
		if !strings.Contains(r.AllText(), want) {
			t.Errorf("error %q lacks %q", r.AllText(), want)
		}
	}
	if tok := as.Log().Resent(); tok != "" {
		t.Errorf("token %s was sent again after 401 invalid_token", tok)
	}
}

// The "oauth" entry: parsed strictly, with Gemini CLI's endpoint keys
// ignored, ${VAR} in the secret, and refused on stdio servers.
func TestOAuthConfigEntry(t *testing.T) {
	lookup := func(k string) (string, bool) { return "sekrit", k == "SECRET" }
	raw := map[string]json.RawMessage{
		"a": json.RawMessage(`{"url":"https://a.example/mcp","oauth":{"clientId":"cid","clientSecret":"${SECRET}","scopes":"read write","callbackPort":8765,"tokenUrl":"ignored"}}`),
		"b": json.RawMessage(`{"url":"https://b.example/mcp","oauth":false}`),
	}
	servers, err := mcpclient.ParseServersWith(raw, lookup)
	if err != nil {
		t.Fatal(err)
	}
	a, b := servers[0].OAuth, servers[1].OAuth
	if a.ClientID != "cid" || a.ClientSecret != "sekrit" || !slices.Equal(a.Scopes, []string{"read", "write"}) || a.CallbackPort != 8765 || a.Disabled {
		t.Errorf("a: %+v", a)
	}
	if !b.Disabled {
		t.Errorf("b: %+v", b)
	}
	for _, bad := range []string{
		`{"url":"https://x/mcp","oauth":{"clientID":"x"}}`,
		`{"url":"https://x/mcp","oauth":{"callbackPort":70000}}`,
		`{"url":"https://x/mcp","oauth":{"clientSecret":"s"}}`,
		`{"command":"x","oauth":{"clientId":"x"}}`,
	} {
		if _, err := mcpclient.ParseServersWith(map[string]json.RawMessage{"x": json.RawMessage(bad)}, lookup); err == nil || !strings.Contains(err.Error(), "oauth") {
			t.Errorf("%s: err %v, want one naming oauth", bad, err)
		}
	}
}

// A configured client (oauth.clientId/clientSecret) is used instead of
// dynamic registration, and its secret authenticates the refresh.
func TestOAuthPreregisteredClient(t *testing.T) {
	as := startAS(t, fxas.Options{ClientID: "pre", ClientSecret: "pre-secret", TokenLifetime: 60 * time.Second})
	store := mcpclient.NewTokenStore(t.TempDir())
	sc := fxServer(t, as, `,"oauth":{"clientId":"pre","clientSecret":"pre-secret"}`)
	login(t, sc, store)
	g, _ := store.Load("fx", sc.URL)
	if g.ClientID != "pre" {
		t.Fatalf("client %q, want the configured one", g.ClientID)
	}
	m := connect(t, &mcpclient.Options{OAuth: &mcpclient.OAuthOptions{Store: store}}, sc)
	as.Advance(70 * time.Second)
	if r := callTool(m, "fx__search", `{"q":"pre"}`); r.IsError {
		t.Fatalf("search: %+v (%s)", r, status(t, m, "fx").Summary())
	}
	if as.Log().Refreshes() != 1 {
		t.Errorf("grants %+v", as.Log().Grants)
	}
}
