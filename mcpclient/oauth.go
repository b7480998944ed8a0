package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/aibuddy/aibuddy/tool"
)

// OAuthConfig is a remote server's "oauth" entry in mcpServers (the shape
// Claude Code and Gemini CLI write): how aibuddy registers as an OAuth 2.1
// client of the server's authorization server. Without an entry, OAuth is
// on for every http server that has no "Authorization" header configured,
// with dynamic client registration (RFC 7591).
//
//	"oauth": {"clientId": "...", "clientSecret": "${SECRET}", "scopes": ["read"],
//	          "callbackPort": 8765, "clientMetadataUrl": "https://example.com/client.json"}
//	"oauth": false   // never authorize: a 401 fails the server
type OAuthConfig struct {
	// Disabled is "oauth": false or {"enabled": false}.
	Disabled bool
	// ClientID and ClientSecret name a client registered in advance with
	// the authorization server (used before dynamic registration; the
	// secret may be empty for a public client). ${VAR} is expanded.
	ClientID, ClientSecret string
	// Scopes replaces the scopes discovered from the server's challenge or
	// protected-resource metadata (RFC 9728 scopes_supported).
	Scopes []string
	// CallbackPort is the port of the loopback redirect listener of
	// `aibuddy mcp login` (http://127.0.0.1:PORT/callback); 0 picks a free
	// one. A client registered in advance needs the port it was
	// registered with.
	CallbackPort int
	// ClientMetadataURL is an HTTPS URL of a client ID metadata document
	// (MCP 2025-11-25 "Client ID Metadata Documents"), used as the client
	// id when the authorization server supports it.
	ClientMetadataURL string
}

// oauthIgnoredKeys are keys of other hosts' "oauth" entries that discovery
// makes unnecessary here (Gemini CLI's endpoints and token parameters).
var oauthIgnoredKeys = map[string]bool{
	"authorizationUrl": true, "tokenUrl": true, "audiences": true, "tokenParamName": true, "redirectUri": true,
	"registrationUrl": true,
}

// parseOAuth decodes an "oauth" value: true, false or an object.
func parseOAuth(raw json.RawMessage) (*OAuthConfig, error) {
	var on bool
	if json.Unmarshal(raw, &on) == nil {
		return &OAuthConfig{Disabled: !on}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, errors.New(`want true, false or an object {"clientId", "clientSecret", "scopes", "callbackPort", "clientMetadataUrl", "enabled"}`)
	}
	oc := &OAuthConfig{}
	for k, v := range fields {
		var err error
		switch k {
		case "enabled":
			var en bool
			err = decodeStrict(v, &en)
			oc.Disabled = !en
		case "clientId":
			err = decodeStrict(v, &oc.ClientID)
		case "clientSecret":
			err = decodeStrict(v, &oc.ClientSecret)
		case "scopes":
			var s string
			if json.Unmarshal(v, &s) == nil {
				oc.Scopes = strings.Fields(s)
			} else {
				err = decodeStrict(v, &oc.Scopes)
			}
		case "callbackPort":
			err = decodeStrict(v, &oc.CallbackPort)
			if err == nil && (oc.CallbackPort < 0 || oc.CallbackPort > 65535) {
				err = fmt.Errorf("%d is not a port (0-65535; 0 picks a free one)", oc.CallbackPort)
			}
		case "clientMetadataUrl":
			err = decodeStrict(v, &oc.ClientMetadataURL)
			if err == nil && !strings.HasPrefix(oc.ClientMetadataURL, "https://") {
				err = fmt.Errorf("%q must be an https:// URL", oc.ClientMetadataURL)
			}
		default:
			if oauthIgnoredKeys[k] {
				continue
			}
			err = errors.New("unknown key (known: enabled, clientId, clientSecret, scopes, callbackPort, clientMetadataUrl)")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
	}
	if oc.ClientSecret != "" && oc.ClientID == "" {
		return nil, errors.New("clientSecret: needs clientId")
	}
	return oc, nil
}

// OAuthOptions configures OAuth 2.1 for http servers (Options.OAuth).
type OAuthOptions struct {
	// Store keeps the grants (required: without a store OAuth is off and a
	// 401 fails the server as before).
	Store *TokenStore
	// RefreshBefore is how long before an access token's expiry it is
	// refreshed before a request (proactive; a 401 invalid_token refreshes
	// too). Default 60 s (mcp.oauthRefreshBefore).
	RefreshBefore time.Duration
	// Interactive, when set, runs the authorization-code flow (the browser
	// step) when a server has no usable grant; nil (aibuddy mcp, run,
	// call, tools) fails such a server at the Authorization stage naming
	// `aibuddy mcp login SERVER`.
	Interactive *Interaction
	// HTTPClient reaches the authorization servers (metadata, registration,
	// token endpoint). Default: Options.HTTPClient without the per-server
	// headers.
	HTTPClient *http.Client
	// Now is the clock for token expiry; default time.Now (tests move it).
	Now func() time.Time
}

// Interaction is the browser step of the authorization-code flow.
type Interaction struct {
	// RedirectURL is the redirect URI registered and sent (a loopback
	// listener's, e.g. http://127.0.0.1:PORT/callback).
	RedirectURL string
	// Fetch sends the user to the authorization URL and returns the code,
	// state and iss the redirect carried (auth.AuthorizationCodeFetcher).
	Fetch auth.AuthorizationCodeFetcher
}

// ErrLoginRequired is wrapped by the error of a request to a server whose
// grant is missing, expired beyond refresh, or short of scopes, when no
// interaction is configured: the user must run `aibuddy mcp login SERVER`.
var ErrLoginRequired = errors.New("login required")

// LoginError says which server needs a login and why.
type LoginError struct {
	Server string
	Reason string
}

func (e *LoginError) Error() string {
	return fmt.Sprintf("Authorization: MCP server %s needs a login (%s); run `aibuddy mcp login %s`, then restart aibuddy (security fails closed: no request is sent without a valid token)",
		e.Server, e.Reason, e.Server)
}

func (e *LoginError) Unwrap() error { return ErrLoginRequired }

// oauthHandler is the auth.OAuthHandler of one http server: tokens come
// from the store (re-read on every request, so a grant another process
// rotated is seen), are refreshed ahead of expiry and on a 401, one
// refresh at a time (mu in the process, the store's lock across
// processes), and a token that got 401 is never sent again.
type oauthHandler struct {
	server, url string
	cfg         *OAuthConfig
	o           OAuthOptions

	mu      sync.Mutex // one refresh at a time in this process
	lastErr string     // why the last refresh failed (for the login error)

	flowMu sync.Mutex // one interactive flow at a time
	sdk    *auth.AuthorizationCodeHandler
}

// newOAuthHandler returns the server's handler, or nil when OAuth is off
// for it: no store, "oauth": false, an sse server, or a configured
// Authorization header (a static token wins, as in other hosts).
func newOAuthHandler(sc ServerConfig, o *OAuthOptions, base *http.Client) *oauthHandler {
	if o == nil || o.Store == nil || sc.Type != TypeHTTP || (sc.OAuth != nil && sc.OAuth.Disabled) {
		return nil
	}
	for k := range sc.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil
		}
	}
	h := &oauthHandler{server: sc.Name, url: sc.URL, cfg: sc.OAuth, o: *o}
	if h.cfg == nil {
		h.cfg = &OAuthConfig{}
	}
	if h.o.RefreshBefore <= 0 {
		h.o.RefreshBefore = 60 * time.Second
	}
	if h.o.Now == nil {
		h.o.Now = time.Now
	}
	if h.o.HTTPClient == nil {
		h.o.HTTPClient = base
	}
	if h.o.HTTPClient == nil {
		h.o.HTTPClient = http.DefaultClient
	}
	return h
}

var _ auth.OAuthHandler = (*oauthHandler)(nil)

// TokenSource implements auth.OAuthHandler: the store's current token,
// refreshed first when it expires within RefreshBefore.
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return tokenFunc(func() (*oauth2.Token, error) { return h.token(ctx) }), nil
}

type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }

// token returns the token to send, or nil (no Authorization header) when
// there is none or it expired and could not be refreshed: the server's
// 401 then reaches Authorize, which names the reason.
func (h *oauthHandler) token(ctx context.Context) (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, err := h.o.Store.Load(h.server, h.url)
	if err != nil {
		return nil, err
	}
	if g == nil || g.AccessToken == "" {
		return nil, nil
	}
	if h.expiring(g) {
		if g.RefreshToken == "" {
			h.lastErr = "the access token expired and the server issued no refresh token"
			return nil, nil
		}
		ng, err := h.refreshLocked(ctx, g.AccessToken)
		if err != nil {
			h.lastErr = err.Error()
			return nil, nil
		}
		g = ng
	}
	return &oauth2.Token{AccessToken: g.AccessToken, TokenType: "Bearer"}, nil
}

// expiring reports whether g's access token expires within the refresh
// margin: RefreshBefore, but at most half the token's lifetime (a 60 s
// token is not refreshed on every request).
func (h *oauthHandler) expiring(g *Grant) bool {
	if g.Expiry.IsZero() {
		return false
	}
	margin := h.o.RefreshBefore
	if life := g.Expiry.Sub(g.Updated); !g.Updated.IsZero() && life > 0 && margin > life/2 {
		margin = life / 2
	}
	return !h.o.Now().Add(margin).Before(g.Expiry)
}

// onClock moves an expiry golang.org/x/oauth2 computed on the system
// clock (now + expires_in) to Options.Now's clock.
func (h *oauthHandler) onClock(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return h.o.Now().Add(time.Until(t))
}

// refreshLocked runs the refresh grant for the token stale (the one that
// expired or got 401), under the store's lock; h.mu is held. When the
// store already holds another, unexpired token (another call or process
// refreshed first), that one is returned and no grant is spent.
func (h *oauthHandler) refreshLocked(ctx context.Context, stale string) (*Grant, error) {
	unlock, err := h.o.Store.Lock(ctx, h.server, h.url)
	if err != nil {
		return nil, err
	}
	defer unlock()
	g, err := h.o.Store.Load(h.server, h.url)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, errors.New("no stored grant")
	}
	if g.AccessToken != stale && !h.expiring(g) {
		return g, nil
	}
	if g.RefreshToken == "" {
		return nil, errors.New("the access token is no longer valid and the server issued no refresh token")
	}
	cfg := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)}, Scopes: g.Scopes}
	hc := *h.o.HTTPClient
	hc.Transport = resourceParam{base: hc.Transport, resource: g.URL}
	cctx := context.WithValue(ctx, oauth2.HTTPClient, &hc)
	tok, err := cfg.TokenSource(cctx, &oauth2.Token{RefreshToken: g.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return nil, fmt.Errorf("the refresh grant was refused: %s %s", re.ErrorCode, re.ErrorDescription)
		}
		return nil, fmt.Errorf("the refresh grant failed: %v", err)
	}
	g.AccessToken, g.TokenType, g.Expiry, g.Updated = tok.AccessToken, tok.TokenType, h.onClock(tok.Expiry), h.o.Now()
	if tok.RefreshToken != "" { // rotated (OAuth 2.1 §4.3.1): the old one is spent
		g.RefreshToken = tok.RefreshToken
	}
	if err := h.o.Store.Save(g); err != nil {
		return nil, err
	}
	h.lastErr = ""
	return g, nil
}

// resourceParam adds the resource indicator (RFC 8707; the MCP
// authorization spec asks for it in every token request) to refresh
// grants, which golang.org/x/oauth2 sends without extra parameters.
type resourceParam struct {
	base     http.RoundTripper
	resource string
}

func (p resourceParam) RoundTrip(r *http.Request) (*http.Response, error) {
	base := p.base
	if base == nil {
		base = http.DefaultTransport
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return base.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if v, err := url.ParseQuery(string(b)); err == nil && v.Get("grant_type") == "refresh_token" && !v.Has("resource") {
		v.Set("resource", p.resource)
		b = []byte(v.Encode())
	}
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	return base.RoundTrip(r)
}

// Authorize implements auth.OAuthHandler: the request req got resp (401
// or 403). A 401 on a token we sent refreshes it (once per token across
// parallel calls and processes); without a usable grant, or on 403
// insufficient_scope, the interactive flow runs when configured, else the
// request fails with a LoginError. A nil return has the transport resend
// the request with the store's (new) token.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	// Keep the body's first bytes for the error and let the SDK handler
	// read the rest (it closes it).
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	closeBody := func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }

	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	code, desc := "", ""
	for _, c := range challenges {
		if c.Scheme == "bearer" {
			code, desc = c.Params["error"], c.Params["error_description"]
		}
	}
	sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if resp.StatusCode == http.StatusForbidden && code != "insufficient_scope" {
		closeBody()
		return fmt.Errorf("Authorization: MCP server %s refused the request (HTTP 403 %s %s %s): the account lacks access; ask the server's owner", h.server, code, desc, strings.TrimSpace(string(head)))
	}

	var reason string
	if resp.StatusCode == http.StatusUnauthorized {
		h.mu.Lock()
		g, err := h.o.Store.Load(h.server, h.url)
		switch {
		case err != nil:
			reason = err.Error()
		case g == nil:
			reason = "no stored grant"
		case g.AccessToken != sent && !h.expiring(g):
			h.mu.Unlock()
			closeBody()
			return nil // another call or process stored a new token: send that one
		case sent == "" && h.lastErr != "":
			reason = h.lastErr
		default:
			stale := sent
			if stale == "" {
				stale = g.AccessToken
			}
			ng, err := h.refreshLocked(ctx, stale)
			if err == nil && ng.AccessToken != sent {
				h.mu.Unlock()
				closeBody()
				return nil
			}
			if err != nil {
				reason = err.Error()
			} else {
				reason = "the refresh gave back the token the server refused"
			}
			h.lastErr = reason
		}
		h.mu.Unlock()
		if code != "" && g != nil {
			reason = fmt.Sprintf("the server answered 401 %s; %s", code, reason)
		}
	} else {
		reason = "the server asks for more scopes (403 insufficient_scope)"
	}

	if h.o.Interactive == nil {
		closeBody()
		return &LoginError{Server: h.server, Reason: reason}
	}
	return h.interactive(ctx, req, resp, sent)
}

// interactive runs the SDK's authorization-code flow (protected-resource
// and authorization-server discovery, client ID metadata document,
// configured or dynamic client registration, PKCE S256, resource
// indicator, iss check) with the configured browser step, and stores the
// grant it obtains.
func (h *oauthHandler) interactive(ctx context.Context, req *http.Request, resp *http.Response, sent string) error {
	h.flowMu.Lock()
	defer h.flowMu.Unlock()
	if resp.StatusCode == http.StatusUnauthorized {
		// A parallel call may have logged in while this one waited.
		if g, err := h.o.Store.Load(h.server, h.url); err == nil && g != nil && g.AccessToken != sent && !h.expiring(g) {
			resp.Body.Close()
			return nil
		}
	}
	if h.sdk == nil {
		cfg := &auth.AuthorizationCodeHandlerConfig{
			RedirectURL:              h.o.Interactive.RedirectURL,
			AuthorizationCodeFetcher: h.o.Interactive.Fetch,
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs: []string{h.o.Interactive.RedirectURL}, ClientName: "aibuddy",
				GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
				TokenEndpointAuthMethod: "none"}},
			RequestRefreshToken: true,
			Client:              h.o.HTTPClient,
			NewTokenSource:      h.keep,
		}
		if h.cfg.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.cfg.ClientMetadataURL}
		}
		if h.cfg.ClientID != "" {
			cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: h.cfg.ClientID}
			if h.cfg.ClientSecret != "" {
				cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.cfg.ClientSecret}
			}
		}
		if len(h.cfg.Scopes) > 0 {
			scopes := h.cfg.Scopes
			cfg.ScopeFilter = func([]string) []string { return slices.Clone(scopes) }
		}
		sdk, err := auth.NewAuthorizationCodeHandler(cfg)
		if err != nil {
			resp.Body.Close()
			return fmt.Errorf("Authorization: MCP server %s: setting up OAuth: %v", h.server, err)
		}
		h.sdk = sdk
	}
	if err := h.sdk.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("Authorization: MCP server %s: the OAuth authorization flow failed: %w", h.server, err)
	}
	return nil
}

// keep is the SDK handler's NewTokenSource: it stores the grant the code
// exchange returned (with the client that obtained it, to refresh it).
func (h *oauthHandler) keep(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	g := &Grant{Server: h.server, URL: h.url, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		TokenURL: cfg.Endpoint.TokenURL, AuthStyle: int(cfg.Endpoint.AuthStyle), Scopes: cfg.Scopes,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: h.onClock(tok.Expiry),
		Updated: h.o.Now()}
	unlock, err := h.o.Store.Lock(context.Background(), h.server, h.url)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := h.o.Store.Save(g); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.lastErr = ""
	h.mu.Unlock()
	return oauth2.StaticTokenSource(tok), nil
}

// oauthCallError is the Authorization-stage error of a call that failed
// for want of a login, or nil.
func oauthCallError(server string, err error) *tool.Error {
	var le *LoginError
	if !errors.As(err, &le) {
		return nil
	}
	return (&tool.Error{Stage: tool.Authorization, Msg: le.Error(), Err: err}).
		WithHint(fmt.Sprintf("ask the user to run `aibuddy mcp login %s`; do not retry before", server))
}
