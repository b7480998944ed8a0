package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CookieName is the session cookie of the web view: HttpOnly,
// SameSite=Strict, Path=/ui (Secure over TLS).
const CookieName = "aibuddy_ui"

// CSRFHeader carries the page's CSRF token on a state-changing request
// made by the page's script (a form posts it as the field "csrf").
const CSRFHeader = "X-CSRF-Token"

// Verifier checks a bearer token the way the MCP endpoint does (the same
// token; nil error means accepted).
type Verifier func(ctx context.Context, token string, req *http.Request) error

// session is one browser's login.
type session struct {
	csrf    string
	expires time.Time
}

// sessions are the logins of this server, keyed by the SHA-256 of the
// cookie value (the value itself is never kept).
type sessions struct {
	mu  sync.Mutex
	m   map[string]*session
	ttl time.Duration
	now func() time.Time
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func keyOf(cookie string) string {
	h := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(h[:])
}

// open makes a session and returns its cookie value.
func (s *sessions) open() (cookie string, sess *session) {
	cookie = randomHex(32)
	sess = &session{csrf: randomHex(32), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.m { // expired logins go as new ones come
		if now.After(v.expires) {
			delete(s.m, k)
		}
	}
	s.m[keyOf(cookie)] = sess
	return cookie, sess
}

// of returns the request's live session, or nil.
func (s *sessions) of(req *http.Request) *session {
	c, err := req.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.m[keyOf(c.Value)]
	if sess == nil || s.now().After(sess.expires) {
		return nil
	}
	return sess
}

func (s *sessions) close(req *http.Request) {
	if c, err := req.Cookie(CookieName); err == nil {
		s.mu.Lock()
		delete(s.m, keyOf(c.Value))
		s.mu.Unlock()
	}
}

// crossSite says why a request cannot be from this server's own page, or
// "" when it is: a browser's Sec-Fetch-Site other than same-origin, or an
// Origin whose host is not the request's Host. A state-changing request
// with neither header is refused too (fails closed: it cannot be told
// from a forged one).
func crossSite(req *http.Request, changing bool) string {
	sfs := req.Header.Get("Sec-Fetch-Site")
	origin := req.Header.Get("Origin")
	if sfs == "cross-site" || (changing && sfs != "" && sfs != "same-origin") {
		return "Sec-Fetch-Site is " + sfs
	}
	if origin == "null" && sfs == "same-origin" {
		return "" // an opaque origin the browser itself vouches for as this one
	}
	if origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, req.Host) || (u.Scheme != "http" && u.Scheme != "https") {
			return "Origin " + origin + " is not this server (" + req.Host + ")"
		}
		return ""
	}
	if changing && sfs == "" {
		return "the request has neither Origin nor Sec-Fetch-Site, so it cannot be told from a forged one"
	}
	return ""
}

// refuse writes a staged refusal: what was refused, by what, what next.
func refuse(w http.ResponseWriter, code int, what, next string) {
	http.Error(w, fmt.Sprintf("aibuddy web: Authorization: %s (refused, HTTP %d); next: %s", what, code, next), code)
}

// authed is middleware: the request needs a live session; a
// state-changing one (not GET or HEAD) also the same origin and the
// session's CSRF token. A page without a session is sent to the login
// form; anything else gets 401.
func (s *Server) authed(page bool, next func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		changing := req.Method != http.MethodGet && req.Method != http.MethodHead
		if why := crossSite(req, changing); why != "" {
			refuse(w, http.StatusForbidden, "cross-site request: "+why, "open the page from this server's own address")
			return
		}
		sess := s.sessions.of(req)
		if sess == nil {
			if page && !changing {
				http.Redirect(w, req, s.prefix+"/login?next="+url.QueryEscape(req.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			refuse(w, http.StatusUnauthorized, "no session: log in with the bearer token", "open "+s.prefix+"/login and enter the token of aibuddy mcp --print-token")
			return
		}
		if changing {
			got := req.Header.Get(CSRFHeader)
			if got == "" {
				got = req.PostFormValue("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
				refuse(w, http.StatusForbidden, "the CSRF token is missing or wrong", "reload the page and try again")
				return
			}
		}
		next(w, req, sess)
	}
}

// login serves the login form (GET) and checks the token (POST): the
// token is the bearer token of the MCP endpoint; accepted, a session
// cookie is set and the browser sent on.
func (s *Server) login(w http.ResponseWriter, req *http.Request) {
	nextURL := req.FormValue("next")
	if !strings.HasPrefix(nextURL, s.prefix+"/") || strings.HasPrefix(nextURL, "//") {
		nextURL = s.prefix + "/"
	}
	if req.Method == http.MethodGet {
		s.render(w, http.StatusOK, "login", page{Title: "Log in", Next: nextURL})
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		refuse(w, http.StatusMethodNotAllowed, "method "+req.Method, "GET or POST")
		return
	}
	if why := crossSite(req, true); why != "" {
		refuse(w, http.StatusForbidden, "cross-site login: "+why, "open the login page from this server's own address")
		return
	}
	token := strings.TrimSpace(req.PostFormValue("token"))
	if token == "" || s.o.Verify == nil || s.o.Verify(req.Context(), token, req) != nil {
		s.render(w, http.StatusUnauthorized, "login", page{Title: "Log in", Next: nextURL,
			Error: "That is not this server's token. Use the token of $AIBUDDY_TOKEN or the one aibuddy mcp --print-token prints."})
		return
	}
	cookie, _ := s.sessions.open()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cookie, Path: s.prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: req.TLS != nil, MaxAge: int(s.sessions.ttl.Seconds())})
	http.Redirect(w, req, nextURL, http.StatusSeeOther)
}

// logout ends the session.
func (s *Server) logout(w http.ResponseWriter, req *http.Request, _ *session) {
	s.sessions.close(req)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: s.prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, req, s.prefix+"/login", http.StatusSeeOther)
}
