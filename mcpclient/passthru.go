package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Pass-through: the resources, resource templates and prompts of the
// connected servers, and their completions and resource subscriptions, for
// a gateway (aibuddy mcp) that serves them to a host (issue 13, item 6).
//
// Naming (mcp.passthroughNames), in the spirit of the tools' namespacing
// (names.go) but for names a host shows to a person rather than to a model:
//
//   - NamesAuto (the default): a resource URI, a template's URI template
//     and a prompt name stay as the server gave them when no other
//     connected server offers the same one; when two or more do, every one
//     of them is namespaced (not only the later one, so which server keeps
//     a name never depends on which connected first).
//   - NamesPrefixed: every one is namespaced, as tools always are: stable
//     as servers join and leave.
//
// A namespaced prompt is named like a tool, ToolName(server, prompt)
// ("docs__summarize"). A namespaced URI or URI template is
// "aibuddy://<server, path-escaped>/" followed by the original
// ("aibuddy://docs/file:///README.md", "aibuddy://docs/test://t/{id}"): a
// host expands a namespaced template into a namespaced URI, and the
// original is the rest after the prefix.

// Pass-through naming modes (config mcp.passthroughNames).
const (
	NamesAuto     = "auto"
	NamesPrefixed = "prefixed"
)

// URIPrefix starts every namespaced resource URI and URI template.
const URIPrefix = "aibuddy://"

// NamespacedURI is the namespaced form of a server's resource URI or URI
// template: URIPrefix + url.PathEscape(server) + "/" + uri.
func NamespacedURI(server, uri string) string {
	return URIPrefix + url.PathEscape(server) + "/" + uri
}

// SplitNamespacedURI is the inverse of NamespacedURI; ok is false for a URI
// without the prefix.
func SplitNamespacedURI(uri string) (server, orig string, ok bool) {
	rest, found := strings.CutPrefix(uri, URIPrefix)
	if !found {
		return "", "", false
	}
	esc, orig, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	server, err := url.PathUnescape(esc)
	if err != nil || server == "" {
		return "", "", false
	}
	return server, orig, true
}

// Passthru is a snapshot of what the connected servers offer besides
// tools, named for a host ([Manager.Passthru]). Lists are sorted by their
// host-facing key; the MCP objects are fresh copies.
type Passthru struct {
	Resources []PassResource
	Templates []PassTemplate
	Prompts   []PassPrompt
	// Subscribe is true when some connected server with resources
	// advertises resources.subscribe; Complete when some connected
	// server advertises completions.
	Subscribe, Complete bool
}

// PassResource is one upstream resource: Resource carries the host-facing
// URI; Server and URI name the original.
type PassResource struct {
	Resource *mcp.Resource
	Server   string
	URI      string
}

// PassTemplate is one upstream resource template: Template carries the
// host-facing URI template; Prefix is what a host-facing URI made from it
// starts with beyond the original ("" when not namespaced).
type PassTemplate struct {
	Template *mcp.ResourceTemplate
	Server   string
	Orig     string // the original URI template
	Prefix   string
}

// PassPrompt is one upstream prompt: Prompt carries the host-facing name.
type PassPrompt struct {
	Prompt *mcp.Prompt
	Server string
	Name   string // the original name
}

// ptState is one connection's pass-through lists, from its last listing.
type ptState struct {
	mu        sync.Mutex
	caps      *mcp.ServerCapabilities
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
	refreshMu sync.Mutex // one refresh at a time
	acks      subAcks    // resource subscriptions awaiting their acknowledgement (subscribeack.go)
}

// ptKey is one upstream resource subscription.
type ptKey struct {
	c   *conn
	uri string
}

// ptSubs are the Manager's resource subscriptions: each upstream URI is
// subscribed once, however many host sessions want it, and unsubscribed
// when the last lets go.
type ptSubs struct {
	mu    sync.Mutex
	next  int
	byKey map[ptKey]*ptSub
}

// ptSub is one upstream URI's subscription and its subscribers.
type ptSub struct {
	sess  *mcp.ClientSession // the session subscribed on
	fns   map[int]func()     // subscribers by id
	ready chan struct{}      // closed when the upstream subscription is acknowledged or failed
	err   error              // why it failed, once ready
}

// passthruList lists sess's resources, templates and prompts (every page)
// per its capabilities. A failed list is logged and leaves that list
// empty: the server's tools still load.
func (c *conn) passthruList(ctx context.Context, sess *mcp.ClientSession) {
	ir := sess.InitializeResult()
	var caps *mcp.ServerCapabilities
	if ir != nil {
		caps = ir.Capabilities
	}
	var res []*mcp.Resource
	var tpl []*mcp.ResourceTemplate
	var prm []*mcp.Prompt
	warn := func(what string, err error) {
		c.m.opts.Logger.Warn("mcp "+what+" failed; the server's "+what[:strings.IndexByte(what, '/')]+" are not passed through", "server", c.cfg.Name, "error", err)
	}
	if caps != nil && caps.Resources != nil {
		for r, err := range sess.Resources(ctx, nil) {
			if err != nil {
				warn("resources/list", err)
				res = nil
				break
			}
			if r != nil && r.URI != "" {
				res = append(res, r)
			}
		}
		for t, err := range sess.ResourceTemplates(ctx, nil) {
			if err != nil {
				warn("resources/templates/list", err)
				tpl = nil
				break
			}
			if t != nil && t.URITemplate != "" {
				tpl = append(tpl, t)
			}
		}
	}
	if caps != nil && caps.Prompts != nil {
		for p, err := range sess.Prompts(ctx, nil) {
			if err != nil {
				warn("prompts/list", err)
				prm = nil
				break
			}
			if p != nil && p.Name != "" {
				prm = append(prm, p)
			}
		}
	}
	c.pt.mu.Lock()
	c.pt.caps, c.pt.resources, c.pt.templates, c.pt.prompts = caps, res, tpl, prm
	c.pt.mu.Unlock()
}

// passthruChanged re-lists after notifications/resources/list_changed or
// notifications/prompts/list_changed and tells the subscribers (the
// gateways resync their lists). It runs off the SDK's reading goroutine
// and at most one at a time per server.
func (c *conn) passthruChanged() {
	go func() {
		c.pt.refreshMu.Lock()
		defer c.pt.refreshMu.Unlock()
		m := c.m
		m.mu.Lock()
		sess, state := c.session, c.state
		m.mu.Unlock()
		if sess == nil || state != StateConnected {
			return
		}
		ctx, cancel := context.WithTimeout(m.life, m.opts.InitTimeout)
		defer cancel()
		c.passthruList(ctx, sess)
		if m.life.Err() == nil {
			m.opts.Logger.Info("mcp resources and prompts refreshed", "server", c.cfg.Name)
			m.notify()
		}
	}()
}

// passthruUpdated forwards notifications/resources/updated to the
// subscribers of that URI on this server.
func (c *conn) passthruUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req == nil || req.Params == nil {
		return
	}
	m := c.m
	m.pt.mu.Lock()
	var fns []func()
	if e := m.pt.byKey[ptKey{c, req.Params.URI}]; e != nil {
		for _, fn := range e.fns {
			fns = append(fns, fn)
		}
	}
	m.pt.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Passthru returns what the connected servers offer besides tools, named
// per names ([NamesAuto] when empty or unknown, or [NamesPrefixed]).
// Items a host could not use are left out: a resource URI or URI template
// the MCP Go SDK would refuse (not a URL, not a valid RFC 6570 template)
// is logged and skipped.
func (m *Manager) Passthru(names string) Passthru {
	type src struct {
		c   *conn
		res []*mcp.Resource
		tpl []*mcp.ResourceTemplate
		prm []*mcp.Prompt
		cap *mcp.ServerCapabilities
	}
	m.mu.Lock()
	var srcs []src
	for _, c := range m.conns {
		if c.state != StateConnected {
			continue
		}
		srcs = append(srcs, src{c: c})
	}
	m.mu.Unlock()
	for i := range srcs {
		pt := &srcs[i].c.pt
		pt.mu.Lock()
		srcs[i].res, srcs[i].tpl, srcs[i].prm, srcs[i].cap = pt.resources, pt.templates, pt.prompts, pt.caps
		pt.mu.Unlock()
	}
	prefixAll := names == NamesPrefixed
	uris, tpls, prms := map[string]int{}, map[string]int{}, map[string]int{}
	for _, s := range srcs {
		for _, r := range dedup(s.res, func(r *mcp.Resource) string { return r.URI }) {
			uris[r.URI]++
		}
		for _, t := range dedup(s.tpl, func(t *mcp.ResourceTemplate) string { return t.URITemplate }) {
			tpls[t.URITemplate]++
		}
		for _, p := range dedup(s.prm, func(p *mcp.Prompt) string { return p.Name }) {
			prms[p.Name]++
		}
	}
	var out Passthru
	for _, s := range srcs {
		name := s.c.cfg.Name
		if s.cap != nil && s.cap.Resources != nil && s.cap.Resources.Subscribe {
			out.Subscribe = true
		}
		if s.cap != nil && s.cap.Completions != nil {
			out.Complete = true
		}
		for _, r := range dedup(s.res, func(r *mcp.Resource) string { return r.URI }) {
			host := r.URI
			if prefixAll || uris[r.URI] > 1 {
				host = NamespacedURI(name, r.URI)
			}
			if _, err := url.Parse(host); err != nil {
				m.opts.Logger.Warn("mcp resource skipped: its URI is not a URL", "server", name, "uri", r.URI, "error", err)
				continue
			}
			cp := *r
			cp.URI = host
			out.Resources = append(out.Resources, PassResource{Resource: &cp, Server: name, URI: r.URI})
		}
		for _, t := range dedup(s.tpl, func(t *mcp.ResourceTemplate) string { return t.URITemplate }) {
			host, prefix := t.URITemplate, ""
			if prefixAll || tpls[t.URITemplate] > 1 {
				host = NamespacedURI(name, t.URITemplate)
				prefix = strings.TrimSuffix(host, t.URITemplate)
			}
			if _, err := uritemplate.New(host); err != nil {
				m.opts.Logger.Warn("mcp resource template skipped: not a valid URI template", "server", name, "uriTemplate", t.URITemplate, "error", err)
				continue
			}
			cp := *t
			cp.URITemplate = host
			out.Templates = append(out.Templates, PassTemplate{Template: &cp, Server: name, Orig: t.URITemplate, Prefix: prefix})
		}
		for _, p := range dedup(s.prm, func(p *mcp.Prompt) string { return p.Name }) {
			host := p.Name
			if prefixAll || prms[p.Name] > 1 {
				host = ToolName(name, p.Name)
			}
			cp := *p
			cp.Name = host
			out.Prompts = append(out.Prompts, PassPrompt{Prompt: &cp, Server: name, Name: p.Name})
		}
	}
	// A namespaced name can equal another server's own ("a__x" offered
	// as is by b): the first in server order keeps it, the other is
	// logged and left out, never shadowed silently.
	out.Resources = uniqueHost(m, out.Resources, "resource", func(r PassResource) (string, string) { return r.Resource.URI, r.Server })
	out.Templates = uniqueHost(m, out.Templates, "resource template", func(t PassTemplate) (string, string) { return t.Template.URITemplate, t.Server })
	out.Prompts = uniqueHost(m, out.Prompts, "prompt", func(p PassPrompt) (string, string) { return p.Prompt.Name, p.Server })
	sort.Slice(out.Resources, func(i, j int) bool { return out.Resources[i].Resource.URI < out.Resources[j].Resource.URI })
	sort.Slice(out.Templates, func(i, j int) bool {
		return out.Templates[i].Template.URITemplate < out.Templates[j].Template.URITemplate
	})
	sort.Slice(out.Prompts, func(i, j int) bool { return out.Prompts[i].Prompt.Name < out.Prompts[j].Prompt.Name })
	return out
}

// uniqueHost drops the items whose host-facing key an earlier item holds.
func uniqueHost[T any](m *Manager, items []T, what string, key func(T) (host, server string)) []T {
	owner := map[string]string{}
	var out []T
	for _, it := range items {
		k, srv := key(it)
		if first, taken := owner[k]; taken {
			m.opts.Logger.Warn("mcp "+what+" left out: its name is taken", "name", k, "server", srv, "kept_from", first)
			continue
		}
		owner[k] = srv
		out = append(out, it)
	}
	return out
}

// dedup keeps the first item of each key (a server listing one URI twice
// is one resource).
func dedup[T any](items []T, key func(T) string) []T {
	seen := map[string]bool{}
	var out []T
	for _, it := range items {
		k := key(it)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, it)
	}
	return out
}

// ptSession is server's session when it is connected, else an
// Execution-stage error naming its state.
func (m *Manager) ptSession(server string) (*conn, *mcp.ClientSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.conns {
		if c.cfg.Name != server {
			continue
		}
		if c.state != StateConnected || c.session == nil {
			return nil, nil, c.unavailable(c.state, c.err)
		}
		return c, c.session, nil
	}
	return nil, nil, fmt.Errorf("Discovery: no MCP server is named %q in mcpServers; list the servers with aibuddy tools", server)
}

// ptError attributes an upstream failure to its server, keeping a JSON-RPC
// error's code (resource not found, invalid params) so the host sees it.
func ptError(server, method string, err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &jsonrpc.Error{Code: we.Code, Message: fmt.Sprintf("MCP server %s: %s", server, we.Message), Data: we.Data}
	}
	return fmt.Errorf("Execution: %s on MCP server %s failed: %w; check the server with aibuddy tools", method, server, err)
}

// ReadResource reads uri (the server's own URI, not namespaced) from
// server. Errors: Execution-stage when the server is not connected or the
// read fails; a JSON-RPC error from the server keeps its code, its message
// prefixed with the server's name. The result is the server's, unbounded.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	_, sess, err := m.ptSession(server)
	if err != nil {
		return nil, err
	}
	res, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, ptError(server, "resources/read", err)
	}
	return res, nil
}

// GetPrompt gets the prompt params.Name (the server's own name) from
// server. Errors as for ReadResource.
func (m *Manager) GetPrompt(ctx context.Context, server string, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	_, sess, err := m.ptSession(server)
	if err != nil {
		return nil, err
	}
	res, err := sess.GetPrompt(ctx, params)
	if err != nil {
		return nil, ptError(server, "prompts/get", err)
	}
	return res, nil
}

// Complete asks server for completions; params.Ref names the server's own
// prompt or URI template. Errors as for ReadResource.
func (m *Manager) Complete(ctx context.Context, server string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	_, sess, err := m.ptSession(server)
	if err != nil {
		return nil, err
	}
	res, err := sess.Complete(ctx, params)
	if err != nil {
		return nil, ptError(server, "completion/complete", err)
	}
	return res, nil
}

// SubscribeResource subscribes to uri (the server's own URI) on server:
// updated is called on each notifications/resources/updated the server
// sends for it, from the connection's goroutine (it must not block), until
// cancel. The server gets one resources/subscribe (2026-07-28: one
// subscriptions/listen stream) per URI however many subscribe here, and
// resources/unsubscribe when the last cancels; cancel is idempotent.
// SubscribeResource returns once the server has the subscription: the
// answer to resources/subscribe, or under 2026-07-28 the stream's
// notifications/subscriptions/acknowledged naming uri, waited for at most
// Options.InitTimeout (and ctx). Errors as for ReadResource; an
// Execution-stage error when the acknowledgement does not come; on error
// nothing is subscribed.
func (m *Manager) SubscribeResource(ctx context.Context, server, uri string, updated func()) (cancel func(), err error) {
	c, sess, err := m.ptSession(server)
	if err != nil {
		return nil, err
	}
	listen := protocolOf(sess) >= "2026-07-28"
	key := ptKey{c, uri}
	m.pt.mu.Lock()
	if m.pt.byKey == nil {
		m.pt.byKey = map[ptKey]*ptSub{}
	}
	e := m.pt.byKey[key]
	first := e == nil || (len(e.fns) == 0 && e.sess != sess) // none, or one kept from an earlier session
	if first {
		e = &ptSub{sess: sess, fns: map[int]func(){}, ready: make(chan struct{})}
		m.pt.byKey[key] = e
	}
	id := m.pt.next
	m.pt.next++
	e.fns[id] = updated
	m.pt.mu.Unlock()
	drop := func() (last bool) {
		m.pt.mu.Lock()
		defer m.pt.mu.Unlock()
		if _, ok := e.fns[id]; !ok {
			return false
		}
		delete(e.fns, id)
		if len(e.fns) > 0 {
			return false
		}
		if !listen || e.err != nil {
			// Under 2026-07-28 an acknowledged entry stays: its upstream
			// subscription is kept (see cancel), and a later subscribe
			// reuses it.
			if m.pt.byKey[key] == e {
				delete(m.pt.byKey, key)
			}
		}
		return true
	}
	if first {
		err := m.subscribeUpstream(ctx, c, sess, server, uri, listen)
		m.pt.mu.Lock()
		e.err = err
		m.pt.mu.Unlock()
		close(e.ready)
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			drop()
			return nil, fmt.Errorf("Execution: resources/subscribe %s on MCP server %s was still waiting for the server when the request ended: %w", uri, server, ctx.Err())
		}
	}
	if e.err != nil {
		drop()
		return nil, e.err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if !drop() {
				return
			}
			if listen {
				// Under 2026-07-28 an unsubscribe ends the URI's
				// subscriptions/listen stream, and the MCP Go SDK
				// (v1.8.0) server then drops every list_changed
				// subscription of the session (subscriptionsListen's
				// deferred cleanup): the server's tools would stop
				// refreshing. The upstream subscription is kept instead;
				// its updates find no subscriber and are dropped, and a
				// later subscribe reuses it.
				return
			}
			ctx, stop := context.WithTimeout(m.life, m.opts.InitTimeout)
			defer stop()
			if err := sess.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil && m.life.Err() == nil {
				m.opts.Logger.Warn("mcp resources/unsubscribe failed", "server", server, "uri", uri, "error", err)
			}
		})
	}, nil
}

// subscribeUpstream subscribes sess to uri and returns once the server
// has it: the resources/subscribe answer, or under 2026-07-28 (listen) the
// acknowledgement of the subscriptions/listen stream the SDK opens in the
// background, bounded by ctx and Options.InitTimeout.
func (m *Manager) subscribeUpstream(ctx context.Context, c *conn, sess *mcp.ClientSession, server, uri string, listen bool) error {
	if !listen {
		if err := sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			return ptError(server, "resources/subscribe", err)
		}
		return nil
	}
	if ir := sess.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
		return fmt.Errorf("Execution: MCP server %s does not offer resource subscriptions (no resources.subscribe capability), so %s cannot be subscribed; read it again instead", server, uri)
	}
	acked, forget := c.pt.acks.expect(uri)
	defer forget()
	if err := sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return ptError(server, "subscriptions/listen", err)
	}
	wait, stop := context.WithTimeout(ctx, m.opts.InitTimeout)
	defer stop()
	select {
	case <-acked:
		return nil
	case <-wait.Done():
		_ = sess.Unsubscribe(context.WithoutCancel(ctx), &mcp.UnsubscribeParams{URI: uri}) // ends the stream (SDK: cancels it locally)
		return fmt.Errorf("Execution: MCP server %s did not acknowledge the subscription to %s within %s (mcp initTimeout): %w; check the server with aibuddy tools", server, uri, m.opts.InitTimeout, wait.Err())
	}
}
