package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/aibuddy/aibuddy/config"
)

// oauthSigningAlgs are the JWS algorithms an access token may be signed
// with (asymmetric only: "none" and HMAC are refused, RFC 9068 §4).
func oauthSigningAlgs() []string {
	return []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}
}

// oauthResourceServer sets up o for the OAuth 2.1 resource-server role of
// the MCP authorization spec (2025-06-18, "Authorization Server Discovery"
// and "Token Handling"), from the settings' mcp.oauth:
//
//   - the issuer's signing keys come from settings' jwksURL, else from the
//     jwks_uri of its metadata, read now with the MCP Go SDK's
//     oauthex.GetAuthServerMeta (RFC 8414
//     /.well-known/oauth-authorization-server, then OpenID Connect
//     discovery), and are cached and refreshed on an unknown key id by
//     go-oidc's RemoteKeySet;
//   - a token is a JWT (RFC 9068) whose signature (an asymmetric
//     algorithm), "iss" (the issuer), "aud" (the audience, default the
//     resource; oauthex.MatchesResource) and "exp" (within clockSkew) are
//     verified by go-oidc, and whose "scope" or "scp" must hold every
//     configured scope (else 403);
//   - its "sub" is the auth.TokenInfo.UserID, to which the SDK binds the
//     session it opens (another subject gets 403 on it);
//   - the protected-resource metadata (RFC 9728) is served at
//     /.well-known/oauth-protected-resource and at that path followed by
//     the resource's path (§3.1), and every 401 names it in
//     resource_metadata.
//
// It fails closed: no metadata, no jwks_uri, or an issuer that does not
// match its metadata stops start-up with an Authorization-stage error.
// client makes the discovery and key requests.
func oauthResourceServer(ctx context.Context, c config.OAuth, client *http.Client, o *httpOptions) error {
	res, err := url.Parse(c.Resource)
	if err != nil || res.Scheme == "" || res.Host == "" {
		return fmt.Errorf("Authorization error in mcp --http: mcp.oauth.resource %q is not an absolute URL (next: set it to this server's public URL, such as https://tools.example.com/mcp)", c.Resource)
	}
	jwks := c.JWKSURL
	if jwks == "" {
		meta, err := issuerMetadata(ctx, c.Issuer, client)
		if err != nil {
			return fmt.Errorf("Authorization error in mcp --http: reading the metadata of the authorization server %s: %v; refusing to serve HTTP without a way to verify tokens (next: check mcp.oauth.issuer, or set mcp.oauth.jwksURL)", c.Issuer, err)
		}
		jwks = meta.JWKSURI
	}
	audience := c.Audience
	if audience == "" {
		audience = c.Resource
	}
	keys := oidc.NewRemoteKeySet(oidc.ClientContext(ctx, client), jwks)
	verifier := oidc.NewVerifier(c.Issuer, keys, &oidc.Config{SkipClientIDCheck: true, SupportedSigningAlgs: oauthSigningAlgs(),
		Now: func() time.Time { return time.Now().Add(-c.ClockSkew.D()) }})
	o.Verify = func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tok, err := verifier.Verify(oidc.ClientContext(ctx, client), token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		if !oauthex.MatchesResource(tok.Audience, audience) {
			return nil, fmt.Errorf("%w: the token is for %q, not for this server (%s)", auth.ErrInvalidToken, tok.Audience, audience)
		}
		var claims struct {
			Scope string   `json:"scope"`
			Scp   []string `json:"scp"`
		}
		if err := tok.Claims(&claims); err != nil {
			// scp as one string, as some servers send it
			var alt struct {
				Scope string `json:"scope"`
				Scp   string `json:"scp"`
			}
			if err := tok.Claims(&alt); err != nil {
				return nil, fmt.Errorf("%w: its scope claims: %v", auth.ErrInvalidToken, err)
			}
			claims.Scope, claims.Scp = alt.Scope, strings.Fields(alt.Scp)
		}
		return &auth.TokenInfo{UserID: tok.Subject, Expiration: tok.Expiry,
			Scopes: append(strings.Fields(claims.Scope), claims.Scp...)}, nil
	}
	metaURL := *res
	metaURL.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(res.Path, "/")
	metaURL.RawQuery, metaURL.Fragment = "", ""
	o.Bearer = bearerOptions{Realm: "aibuddy", SDK: auth.RequireBearerTokenOptions{ResourceMetadataURL: metaURL.String(),
		Scopes: c.Scopes, ClockSkew: c.ClockSkew.D()},
		Hint: "get an access token for " + c.Resource + " from " + c.Issuer + " (see resource_metadata) and send it as Authorization: Bearer <token>"}
	o.Metadata = auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: c.Resource,
		AuthorizationServers: []string{c.Issuer}, ScopesSupported: c.Scopes, BearerMethodsSupported: []string{"header"},
		ResourceName: "aibuddy"})
	return nil
}

// issuerMetadata reads an authorization server's metadata: RFC 8414 §3
// (/.well-known/oauth-authorization-server inserted before the issuer's
// path), else OpenID Connect discovery (/.well-known/openid-configuration
// after it), as the MCP authorization spec lists them.
func issuerMetadata(ctx context.Context, issuer string, client *http.Client) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("the issuer %q is not an absolute URL", issuer)
	}
	path := strings.TrimSuffix(u.Path, "/")
	base := u.Scheme + "://" + u.Host
	var errs []error
	urls := []string{base + "/.well-known/oauth-authorization-server" + path, base + "/.well-known/openid-configuration" + path}
	if path != "" {
		urls = append(urls, base+path+"/.well-known/openid-configuration")
	}
	for _, m := range urls {
		meta, err := oauthex.GetAuthServerMeta(ctx, m, issuer, client)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", m, err))
			continue
		}
		if meta == nil {
			errs = append(errs, fmt.Errorf("%s: not found", m))
			continue
		}
		if meta.JWKSURI == "" {
			return nil, fmt.Errorf("%s has no jwks_uri", m)
		}
		return meta, nil
	}
	return nil, errors.Join(errs...)
}
