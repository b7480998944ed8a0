package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/aibuddy/aibuddy/config"
)

// fakeAS is a local OAuth 2.1 authorization server speaking the published
// wire formats: RFC 8414 metadata, an RFC 7517 JWK set, and a token
// endpoint for the client_credentials grant (RFC 6749 §4.4, client
// authentication by HTTP Basic) that takes an RFC 8707 resource and issues
// RFC 9068 JWT access tokens (typ at+jwt, RS256).
type fakeAS struct {
	srv *httptest.Server
	key *rsa.PrivateKey
	kid string
}

func newFakeAS(t *testing.T) *fakeAS {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	as := &fakeAS{key: key, kid: "k1"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		u := as.srv.URL
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": u, "authorization_endpoint": u + "/authorize",
			"token_endpoint": u + "/token", "jwks_uri": u + "/jwks", "response_types_supported": []string{"code"},
			"grant_types_supported":            []string{"authorization_code", "client_credentials"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: as.kid, Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || secret != "secret-of-"+id || r.FormValue("grant_type") != "client_credentials" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		scope := r.FormValue("scope")
		tok := as.mint(t, map[string]any{"sub": id, "client_id": id, "aud": r.FormValue("resource"), "scope": scope})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": scope})
	})
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	return as
}

// mint signs claims (iss, iat, exp and jti added unless given) with the
// server's key.
func (as *fakeAS) mint(t *testing.T, claims map[string]any) string {
	t.Helper()
	return signJWT(t, jose.SigningKey{Algorithm: jose.RS256, Key: as.key}, as.kid, as.srv.URL, claims)
}

func signJWT(t *testing.T, key jose.SigningKey, kid, iss string, claims map[string]any) string {
	t.Helper()
	full := map[string]any{"iss": iss, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(), "jti": fmt.Sprint(time.Now().UnixNano())}
	for k, v := range claims {
		full[k] = v
	}
	opts := (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid)
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(full).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestHTTPOAuthResourceServer: with mcp.oauth, aibuddy mcp --http is a
// resource server of a local authorization server. The metadata (RFC
// 9728) is public and names the issuer; a 401 points at it; a token the
// client_credentials grant issued for this resource opens a session with
// the SDK client; a token for another audience, from another issuer,
// expired, signed by another key, unsigned or HMAC-signed gets 401
// invalid_token, one without the scope 403 insufficient_scope; and
// another subject cannot use a session (403).
func TestHTTPOAuthResourceServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := newFakeAS(t)
	g := testGateways(t, ctx)
	ts := httptest.NewUnstartedServer(nil)
	resource := "http://" + ts.Listener.Addr().String() + "/mcp"
	var o httpOptions
	httpSettings(config.MCP{}, &o)
	err := oauthResourceServer(ctx, config.OAuth{Issuer: as.srv.URL, Resource: resource, Scopes: []string{"mcp:tools"}}, as.srv.Client(), &o)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = g.handler(o)
	ts.Start()
	defer ts.Close()
	metaURL := "http://" + ts.Listener.Addr().String() + "/.well-known/oauth-protected-resource/mcp"

	resp, err := http.Get(metaURL)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		Scopes               []string `json:"scopes_supported"`
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if resp.StatusCode != 200 || meta.Resource != resource || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != as.srv.URL {
		t.Fatalf("metadata: %d %+v", resp.StatusCode, meta)
	}

	call := func(token, session string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, resource, strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	r := call("", "")
	if ch := r.Header.Get("WWW-Authenticate"); r.StatusCode != 401 || !strings.Contains(ch, `resource_metadata="`+metaURL+`"`) {
		t.Errorf("no token: %d %q, want 401 naming %s", r.StatusCode, ch, metaURL)
	}

	cc := clientcredentials.Config{ClientID: "alice", ClientSecret: "secret-of-alice", TokenURL: as.srv.URL + "/token",
		Scopes: []string{"mcp:tools"}, EndpointParams: map[string][]string{"resource": {resource}}}
	client := mcp.NewClient(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	// 2025-11-25: a session, which the check below binds to alice.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: cc.Client(ctx)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "o.txt", "content": "oauth\n"}})
	if err != nil || res.IsError {
		t.Fatalf("write_file with an access token: %v %+v", err, res)
	}

	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good := map[string]any{"sub": "alice", "aud": resource, "scope": "mcp:tools"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt"}`))
	body, _ := json.Marshal(map[string]any{"iss": as.srv.URL, "sub": "alice", "aud": resource, "scope": "mcp:tools", "exp": time.Now().Add(time.Hour).Unix()})
	bad := map[string]string{
		"another audience": as.mint(t, with("aud", "https://elsewhere.example/mcp")),
		"expired":          as.mint(t, with("exp", time.Now().Add(-time.Minute).Unix())),
		"another issuer":   as.mint(t, with("iss", "https://evil.example")),
		"another key":      signJWT(t, jose.SigningKey{Algorithm: jose.RS256, Key: other}, as.kid, as.srv.URL, good),
		"unknown key id":   signJWT(t, jose.SigningKey{Algorithm: jose.ES256, Key: ec}, "k9", as.srv.URL, good),
		"HMAC":             signJWT(t, jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, as.kid, as.srv.URL, good),
		"unsigned":         header + "." + base64.RawURLEncoding.EncodeToString(body) + ".",
		"not a JWT":        "opaque-token-value",
	}
	for name, tok := range bad {
		r := call(tok, "")
		if ch := r.Header.Get("WWW-Authenticate"); r.StatusCode != 401 || !strings.Contains(ch, `error="invalid_token"`) {
			t.Errorf("%s: %d %q, want 401 invalid_token", name, r.StatusCode, ch)
		}
	}
	r = call(as.mint(t, with("scope", "mcp:read")), "")
	if ch := r.Header.Get("WWW-Authenticate"); r.StatusCode != 403 || !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `scope="mcp:tools"`) {
		t.Errorf("without the scope: %d %q, want 403 insufficient_scope", r.StatusCode, ch)
	}
	// scp as an array (as some servers write it) holds the scope too.
	if r := call(as.mint(t, map[string]any{"sub": "carol", "aud": resource, "scp": []string{"mcp:tools"}}), ""); r.StatusCode != 200 {
		t.Errorf("scp array: %d, want 200", r.StatusCode)
	}
	// Alice's session is hers: Bob's valid token cannot use it.
	r = call(as.mint(t, with("sub", "bob")), cs.ID())
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("another subject on alice's session: %d, want 403", r.StatusCode)
	}
}

// TestHTTPOAuthFailsClosed: an issuer without metadata stops start-up at
// the Authorization stage.
func TestHTTPOAuthFailsClosed(t *testing.T) {
	nothing := httptest.NewServer(http.NotFoundHandler())
	defer nothing.Close()
	var o httpOptions
	err := oauthResourceServer(context.Background(), config.OAuth{Issuer: nothing.URL, Resource: "https://tools.example/mcp"}, nothing.Client(), &o)
	if err == nil || !strings.Contains(err.Error(), "Authorization error") || !strings.Contains(err.Error(), "refusing to serve") || o.Verify != nil {
		t.Errorf("an issuer without metadata: %v, want a refusal", err)
	}
}
