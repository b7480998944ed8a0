package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/sys/unix"
)

// TokenEnv is the environment variable that holds the bearer token of
// `aibuddy mcp --http` (and that host settings such as
// "Bearer ${AIBUDDY_TOKEN}" expand).
const TokenEnv = "AIBUDDY_TOKEN"

// HTTPTokenFile is the file in the data folder that holds the generated
// bearer token when $AIBUDDY_TOKEN is not set: one line, mode 0600.
const HTTPTokenFile = "http-token"

// minTokenChars is the shortest token accepted from $AIBUDDY_TOKEN or the
// token file: 32 characters (128 bits as hex). A generated token has 64
// hex digits (256 bits).
const minTokenChars = 32

// tokenBytes is the entropy of a generated token: 32 bytes from
// crypto/rand (256 bits).
const tokenBytes = 32

// httpToken returns the bearer token `aibuddy mcp --http` requires and
// where it comes from, for the start-up line: $AIBUDDY_TOKEN when set
// (getenv), else the token in dataDir/http-token, made there (crypto/rand,
// 256 bits, mode 0600, the folder created 0700) when the file does not
// exist. An existing file is used only when it is a regular file (not a
// link) owned by this user that no other user can read or write (no group
// or other permission bits); anything else is refused, as is a token
// shorter than 32 characters or one with characters a Bearer header cannot
// carry (RFC 6750 §2.1 b64token). Errors are Authorization-stage errors
// that say what to do.
func httpToken(dataDir string, getenv func(string) string) (token, from string, err error) {
	if v := getenv(TokenEnv); v != "" {
		if err := validToken(v); err != nil {
			return "", "", authErr("set it to a longer random token (openssl rand -hex 32), or unset it to have aibuddy make one", "$%s %v", TokenEnv, err)
		}
		return v, "$" + TokenEnv, nil
	}
	path := filepath.Join(dataDir, HTTPTokenFile)
	tok, err := readTokenFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		tok, err = makeTokenFile(path)
	}
	if err != nil {
		return "", "", err
	}
	return tok, path, nil
}

// authErr is a start-up refusal of `aibuddy mcp --http` at the
// Authorization stage: "Authorization error in mcp --http: <msg>;
// refusing to serve without a token no one else knows (next: <next>)".
func authErr(next, format string, args ...any) error {
	return fmt.Errorf("Authorization error in mcp --http: %s; refusing to serve HTTP without a token no one else knows (next: %s)",
		fmt.Sprintf(format, args...), next)
}

// validToken checks a token's length and characters (RFC 6750 §2.1:
// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=").
func validToken(tok string) error {
	if len(tok) < minTokenChars {
		return fmt.Errorf("is %d characters long, shorter than the %d required", len(tok), minTokenChars)
	}
	body := strings.TrimRight(tok, "=")
	for _, r := range body {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', strings.ContainsRune("-._~+/", r):
		default:
			return fmt.Errorf("holds %q, which an Authorization: Bearer header cannot carry (RFC 6750 b64token: letters, digits, -._~+/ and trailing =)", r)
		}
	}
	return nil
}

// readTokenFile reads a token file, refusing one another user could have
// read or replaced.
func readTokenFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", authErr("remove it (aibuddy makes a new token there) or set $"+TokenEnv, "the token file %s is a symbolic link", path)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", authErr("fix its permissions, remove it, or set $"+TokenEnv, "cannot open the token file: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", authErr("remove it or set $"+TokenEnv, "the token file: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return "", authErr("remove it or set $"+TokenEnv, "the token file %s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "", authErr("remove it (aibuddy makes a new one) or set $"+TokenEnv, "the token file %s belongs to user id %d, not to you (%d), so someone else chose the token", path, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", authErr("remove it (aibuddy makes a new one at the next start) or, if no one else can have read it, chmod 600 it", "the token file %s can be read or written by other users (mode %04o), so they may know the token", path, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", authErr("remove it or set $"+TokenEnv, "reading the token file %s: %v", path, err)
	}
	tok := string(bytes.TrimSpace(b))
	if err := validToken(tok); err != nil {
		return "", authErr("remove the file (aibuddy makes a new token) or write a valid one", "the token in %s %v", path, err)
	}
	return tok, nil
}

// makeTokenFile writes a fresh token to path (mode 0600) without ever
// replacing an existing file: it is written to a temporary file and linked
// into place, so a process that starts at the same time reads the same
// token instead of making another.
func makeTokenFile(path string) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", authErr("set --data-dir to a writable folder or set $"+TokenEnv, "cannot make the data folder for the token: %v", err)
	}
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", authErr("set $"+TokenEnv, "no randomness for a token: %v", err)
	}
	tok := hex.EncodeToString(b)
	tmp, err := os.CreateTemp(dir, ".http-token-*") // mode 0600
	if err != nil {
		return "", authErr("set --data-dir to a writable folder or set $"+TokenEnv, "cannot write the token file in %s: %v", dir, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(tok + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
		if errors.Is(err, fs.ErrExist) {
			return readTokenFile(path) // another aibuddy made it first
		}
	}
	if err != nil {
		return "", authErr("set --data-dir to a writable folder or set $"+TokenEnv, "writing the token file %s: %v", path, err)
	}
	return tok, nil
}

// staticToken is an auth.TokenVerifier accepting exactly token. The
// comparison takes the same time whatever the presented token is (both are
// hashed with SHA-256, then compared with subtle.ConstantTimeCompare), so
// timing tells nothing about the token.
func staticToken(token string) auth.TokenVerifier {
	want := sha256.Sum256([]byte(token))
	return func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		g := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(g[:], want[:]) != 1 {
			return nil, fmt.Errorf("%w: the bearer token is not this server's", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{}, nil
	}
}

// bearerOptions configures requireBearer.
type bearerOptions struct {
	// Realm names the protection space in WWW-Authenticate (RFC 6750 §3).
	Realm string
	// SDK is passed to auth.RequireBearerToken (resource metadata URL,
	// scopes, expiration rules).
	SDK auth.RequireBearerTokenOptions
	// Hint ends the body of a 401: what the client should do.
	Hint string
}

// requireBearer is middleware that lets a request through only with an
// "Authorization: Bearer TOKEN" header that verify accepts, whatever its
// method. The check is the MCP Go SDK's auth.RequireBearerToken (the
// verified auth.TokenInfo is in the request's context, where the SDK's
// streamable handler binds a session to its TokenInfo.UserID); a refusal
// is answered here so it always carries a WWW-Authenticate challenge (RFC
// 6750 §3, and the MCP authorization spec's "MUST use WWW-Authenticate"
// on 401): 401 `Bearer realm="aibuddy"` without a token, with
// error="invalid_token" for a token verify refuses, 403 with
// error="insufficient_scope" for missing scopes, each with
// resource_metadata when o.SDK.ResourceMetadataURL is set (RFC 9728 §5.1).
func requireBearer(verify auth.TokenVerifier, o bearerOptions) func(http.Handler) http.Handler {
	sdkOpts := o.SDK
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			var authed *http.Request
			check := auth.RequireBearerToken(verify, &sdkOpts)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { authed = r }))
			refusal := &captured{header: http.Header{}}
			check.ServeHTTP(refusal, req)
			if authed != nil {
				next.ServeHTTP(w, authed)
				return
			}
			code := refusal.code
			if code == 0 {
				code = http.StatusUnauthorized
			}
			msg := strings.TrimSpace(refusal.body.String())
			params := []string{fmt.Sprintf("realm=%q", o.Realm)}
			hasToken := req.Header.Get("Authorization") != ""
			switch {
			case code == http.StatusForbidden:
				params = append(params, `error="insufficient_scope"`)
				if len(o.SDK.Scopes) > 0 {
					params = append(params, fmt.Sprintf("scope=%q", strings.Join(o.SDK.Scopes, " ")))
				}
			case code == http.StatusUnauthorized && hasToken:
				params = append(params, `error="invalid_token"`, fmt.Sprintf("error_description=%q", msg))
			case code == http.StatusBadRequest:
				params = append(params, `error="invalid_request"`)
			}
			if o.SDK.ResourceMetadataURL != "" {
				params = append(params, fmt.Sprintf("resource_metadata=%q", o.SDK.ResourceMetadataURL))
			}
			if code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusBadRequest {
				w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
			}
			what := "no bearer token"
			if hasToken {
				what = msg
			}
			http.Error(w, fmt.Sprintf("aibuddy: Authorization: %s (refused, HTTP %d); next: %s", what, code, o.Hint), code)
		})
	}
}

// captured records what auth.RequireBearerToken answers when it refuses.
type captured struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (c *captured) Header() http.Header { return c.header }
func (c *captured) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}
func (c *captured) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	return c.body.Write(b)
}

// printToken writes the token `aibuddy mcp --http` would require to w,
// one line, making the token file when needed; only the settings are
// read (for the data folder), nothing is started.
func (c *common) printToken(w io.Writer) error {
	cfg, dir, err := c.loadConfig()
	if err != nil {
		return err
	}
	setting := ""
	if cfg != nil {
		setting = cfg.DataDir
	}
	tok, _, err := httpToken(dataDir(c.dataDir, setting, dir), os.Getenv)
	if err != nil {
		return usageErr("%v", err)
	}
	_, err = fmt.Fprintln(w, tok)
	return err
}
