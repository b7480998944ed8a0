package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/store"
)

//go:embed assets
var assets embed.FS

// Prefix is where the web view is mounted: every page and the session
// cookie live under it.
const Prefix = "/ui"

// Options configure a [Server].
type Options struct {
	// Verify checks the token a person enters at the login form: the
	// bearer token of the MCP endpoint. Required: without it nobody can
	// log in (fails closed).
	Verify Verifier
	// Store holds the call records the records pages read. Required.
	Store store.Store
	// Hub is the live state of a serving process (aibuddy mcp --http);
	// nil: the records pages only (aibuddy ui).
	Hub *Hub
	// Broker holds the approvals a browser may decide (approval.via web
	// or both); nil: none.
	Broker *approval.Broker
	// Settings are the web block of the settings; zero fields take their
	// defaults (config.Web.Resolved).
	Settings config.Web
	// DataDir is the data folder: the call page reads a command's full
	// output file (named by its result's evidence) only inside it.
	// Default "": only the store's payloads.
	DataDir string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives store errors; default discard.
	Logger *slog.Logger
}

// Server is the web view: an http.Handler for everything under [Prefix].
// It holds the browsers' sessions (in memory: a restart logs everyone
// out). Safe for concurrent use.
type Server struct {
	o        Options
	w        config.Web
	prefix   string
	sessions *sessions
	tmpl     *template.Template
	mux      *http.ServeMux
	static   http.Handler
}

// New returns the web view of o. It panics only if the embedded
// templates do not parse (a build defect, caught by the tests).
func New(o *Options) *Server {
	s := &Server{prefix: Prefix}
	if o != nil {
		s.o = *o
	}
	if s.o.Now == nil {
		s.o.Now = time.Now
	}
	if s.o.Logger == nil {
		s.o.Logger = slog.New(slog.DiscardHandler)
	}
	s.w = s.o.Settings.Resolved()
	s.sessions = &sessions{m: map[string]*session{}, ttl: s.w.SessionTTL.D(), now: s.o.Now}
	s.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html"))
	sub, _ := fs.Sub(assets, "assets/static")
	s.static = http.StripPrefix(s.prefix+"/static/", http.FileServerFS(sub))

	m := http.NewServeMux()
	p := s.prefix
	etags := map[string]string{} // embedded files have no modification time: revalidate by content
	_ = fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(sub, path)
			sum := sha256.Sum256(b)
			etags[path] = `"` + hex.EncodeToString(sum[:8]) + `"`
		}
		return nil
	})
	m.HandleFunc("GET "+p+"/static/", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		if tag, ok := etags[strings.TrimPrefix(req.URL.Path, p+"/static/")]; ok {
			w.Header().Set("ETag", tag)
		}
		s.static.ServeHTTP(w, req)
	})
	m.HandleFunc(p+"/login", s.login)
	m.HandleFunc("POST "+p+"/logout", s.authed(false, s.logout))
	m.HandleFunc("GET "+p+"/{$}", s.authed(true, s.livePage))
	m.HandleFunc("GET "+p+"/api/snapshot", s.authed(false, s.snapshot))
	m.HandleFunc("GET "+p+"/events", s.authed(false, s.events))
	m.HandleFunc("POST "+p+"/api/approvals/{id}", s.authed(false, s.decide))
	m.HandleFunc("POST "+p+"/api/questions/{id}", s.authed(false, s.answer))
	m.HandleFunc("POST "+p+"/api/calls/{id}/stop", s.authed(false, s.stop))
	m.HandleFunc("GET "+p+"/tasks", s.authed(true, s.tasksPage))
	m.HandleFunc("GET "+p+"/tasks/{id}", s.authed(true, s.taskPage))
	m.HandleFunc("GET "+p+"/calls/{id}", s.authed(true, s.callPage))
	m.HandleFunc("GET "+p+"/search", s.authed(true, s.searchPage))
	s.mux = m
	return s
}

// ServeHTTP serves the web view, with headers that keep other origins
// out: a strict Content-Security-Policy (own scripts and styles only, no
// framing, forms to this server only), no referrer, no caching of pages.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make the browser send Origin: null on the page's own posts
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !strings.HasPrefix(req.URL.Path, s.prefix+"/static/") {
		h.Set("Cache-Control", "no-store")
	}
	if req.URL.Path == s.prefix {
		http.Redirect(w, req, s.prefix+"/", http.StatusSeeOther)
		return
	}
	s.mux.ServeHTTP(w, req)
}

// page is what every template gets.
type page struct {
	Title string
	Nav   string // the nav entry to mark current
	CSRF  string
	Live  bool
	Next  string
	Error string
	Data  any
}

func (s *Server) render(w http.ResponseWriter, code int, name string, p page) {
	p.Live = s.o.Hub != nil
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		s.o.Logger.Error("web: template", "name", name, "err", err)
		http.Error(w, "aibuddy web: Projection: the page could not be drawn: "+err.Error()+"; next: report this as a bug", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// livePage is the live view (aibuddy mcp --http), or the records list
// when nothing is served live (aibuddy ui).
func (s *Server) livePage(w http.ResponseWriter, req *http.Request, sess *session) {
	if s.o.Hub == nil {
		http.Redirect(w, req, s.prefix+"/tasks", http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "live", page{Title: "Live", Nav: "live", CSRF: sess.csrf})
}

func (s *Server) snapshot(w http.ResponseWriter, req *http.Request, _ *session) {
	if s.o.Hub == nil {
		writeJSON(w, http.StatusOK, Snapshot{Calls: []Call{}, Sessions: []Session{}, Servers: []Upstream{}})
		return
	}
	writeJSON(w, http.StatusOK, s.o.Hub.Snapshot())
}

func (s *Server) events(w http.ResponseWriter, req *http.Request, _ *session) {
	if s.o.Hub == nil {
		refuse(w, http.StatusNotFound, "this process serves records only, nothing live", "use aibuddy mcp --http for the live view")
		return
	}
	s.o.Hub.serveEvents(w, req, s.w.KeepAlive.D())
}

// decision is the body of an approval or answer: JSON or a form.
type decision struct {
	Digest   string `json:"digest"`
	Decision string `json:"decision"` // approve | reject
	Note     string `json:"note"`
	Answer   string `json:"answer"`
	Declined bool   `json:"declined"`
}

func readDecision(req *http.Request) (decision, error) {
	var d decision
	if strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") {
		err := json.NewDecoder(http.MaxBytesReader(nil, req.Body, 64<<10)).Decode(&d)
		return d, err
	}
	d.Digest, d.Decision, d.Note, d.Answer = req.PostFormValue("digest"), req.PostFormValue("decision"), req.PostFormValue("note"), req.PostFormValue("answer")
	d.Declined = req.PostFormValue("declined") == "true"
	return d, nil
}

func brokerErr(w http.ResponseWriter, err error) {
	code := http.StatusConflict
	if errors.Is(err, approval.ErrOtherAction) || errors.Is(err, approval.ErrWrongKind) {
		code = http.StatusUnprocessableEntity
	}
	writeJSON(w, code, map[string]string{"error": "Authorization: " + err.Error()})
}

func (s *Server) decide(w http.ResponseWriter, req *http.Request, _ *session) {
	if s.o.Broker == nil {
		refuse(w, http.StatusNotFound, "no approvals are asked here (approval.via is host)", `set approval.via to "web" or "both"`)
		return
	}
	d, err := readDecision(req)
	if err != nil || (d.Decision != "approve" && d.Decision != "reject") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `Parameters: the body needs "digest" and "decision": "approve" or "reject"`})
		return
	}
	if err := s.o.Broker.Decide(req.PathValue("id"), d.Digest, approval.Decision{Approved: d.Decision == "approve", Note: d.Note}); err != nil {
		brokerErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"decided": d.Decision})
}

func (s *Server) answer(w http.ResponseWriter, req *http.Request, _ *session) {
	if s.o.Broker == nil {
		refuse(w, http.StatusNotFound, "no questions are asked here (approval.via is host)", `set approval.via to "web" or "both"`)
		return
	}
	d, err := readDecision(req)
	if err != nil || (!d.Declined && strings.TrimSpace(d.Answer) == "") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `Parameters: the body needs "answer" (or "declined": true)`})
		return
	}
	if err := s.o.Broker.Answer(req.PathValue("id"), approval.Answer{Text: d.Answer, Declined: d.Declined}); err != nil {
		brokerErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"answered": "yes"})
}

func (s *Server) stop(w http.ResponseWriter, req *http.Request, _ *session) {
	if s.o.Hub == nil || !s.o.Hub.Stop(req.PathValue("id")) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Execution: no such call is running here (it ended, or runs in another process)"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"stopping": req.PathValue("id")})
}
