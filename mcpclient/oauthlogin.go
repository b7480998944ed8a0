package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// LoginOptions configures Login.
type LoginOptions struct {
	// Store receives the grant (required).
	Store *TokenStore
	// Open sends the user's browser to the authorization URL (e.g. runs
	// xdg-open); nil, or an error, leaves it to the user, who is shown the
	// URL on Out either way. Tests pass an HTTP client that follows the
	// redirects.
	Open func(url string) error
	// Out receives the instructions (the URL to open). Default io.Discard.
	Out io.Writer
	// Timeout bounds the whole login, the user's browser step included.
	// Default 5 min.
	Timeout time.Duration
	// HTTPClient reaches the server and its authorization server; default
	// a client of its own.
	HTTPClient *http.Client
	// ClientName and ClientVersion identify us in initialize.
	ClientName, ClientVersion string
}

// LoginResult says what a login obtained.
type LoginResult struct {
	Server string
	Tools  int // the tools the server lists with the new grant
	Status ServerStatus
}

// Login runs the OAuth 2.1 authorization-code flow for the http server sc
// (the browser step of `aibuddy mcp login`): it forgets the server's
// stored grant, listens on 127.0.0.1 (sc.OAuth.CallbackPort, 0 for a free
// port) for the redirect to /callback, connects to the server (whose 401
// starts discovery, client registration, PKCE and the authorization URL
// shown on Out and opened with Open), stores the grant the code exchange
// returns, and lists the server's tools with it.
//
// Errors are at the Authorization stage and name the server: not an http
// server, OAuth off for it, the listener's port taken, the user's denial
// (the redirect's error), the timeout, or the server still refusing.
func Login(ctx context.Context, sc ServerConfig, o LoginOptions) (*LoginResult, error) {
	if sc.Type != TypeHTTP {
		return nil, fmt.Errorf("Authorization: MCP server %s is a %s server; OAuth login is for http servers", sc.Name, sc.Type)
	}
	if o.Store == nil {
		return nil, errors.New("Authorization: Login needs a token store")
	}
	if newOAuthHandler(sc, &OAuthOptions{Store: o.Store}, nil) == nil {
		return nil, fmt.Errorf("Authorization: OAuth is off for MCP server %s (\"oauth\": false, or an Authorization header is configured): remove that to log in", sc.Name)
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	port := 0
	if sc.OAuth != nil {
		port = sc.OAuth.CallbackPort
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("Authorization: MCP server %s: cannot listen for the login redirect on 127.0.0.1:%d: %v (free the port or change oauth.callbackPort)", sc.Name, port, err)
	}
	redirect := "http://" + ln.Addr().String() + "/callback"
	results := make(chan *auth.AuthorizationResult, 1)
	denied := make(chan string, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if e := q.Get("error"); e != "" {
			msg := e
			if d := q.Get("error_description"); d != "" {
				msg += ": " + d
			}
			select {
			case denied <- msg:
			default:
			}
			fmt.Fprintf(w, "<p>aibuddy: the login to %s failed: %s</p>", html.EscapeString(sc.Name), html.EscapeString(msg))
			return
		}
		select {
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
		fmt.Fprintf(w, "<p>aibuddy: logged in to %s. You can close this window.</p>", html.EscapeString(sc.Name))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		fmt.Fprintf(o.Out, "To log in to MCP server %s, open this URL in a browser:\n\n  %s\n\nWaiting for the redirect to %s ...\n", sc.Name, args.URL, redirect)
		if o.Open != nil {
			if err := o.Open(args.URL); err != nil {
				fmt.Fprintf(o.Out, "(could not open a browser: %v; open the URL yourself)\n", err)
			}
		}
		select {
		case r := <-results:
			return r, nil
		case msg := <-denied:
			return nil, fmt.Errorf("the authorization server refused: %s", msg)
		case <-ctx.Done():
			return nil, fmt.Errorf("no redirect arrived: %w", ctx.Err())
		}
	}
	if err := o.Store.Delete(sc.Name, sc.URL); err != nil {
		return nil, err
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	m := Connect(ctx, []ServerConfig{sc}, &Options{InitTimeout: o.Timeout, HTTPClient: hc,
		ClientName: o.ClientName, ClientVersion: o.ClientVersion,
		OAuth: &OAuthOptions{Store: o.Store, Interactive: &Interaction{RedirectURL: redirect, Fetch: fetch}}})
	defer m.Close()
	st := m.Servers()[0]
	if st.State != StateConnected {
		return nil, fmt.Errorf("Authorization: login to MCP server %s failed: %s", sc.Name, st.Error)
	}
	g, err := o.Store.Load(sc.Name, sc.URL)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, fmt.Errorf("Authorization: MCP server %s accepted the connection without asking for a login: nothing to store (it needs no OAuth)", sc.Name)
	}
	return &LoginResult{Server: sc.Name, Tools: st.ToolsLoaded, Status: st}, nil
}

// Logout forgets the stored grant of sc (the tokens stay valid at the
// authorization server until they expire: revocation is not sent).
func Logout(sc ServerConfig, store *TokenStore) (had bool, err error) {
	g, err := store.Load(sc.Name, sc.URL)
	if err != nil {
		return false, err
	}
	return g != nil, store.Delete(sc.Name, sc.URL)
}
