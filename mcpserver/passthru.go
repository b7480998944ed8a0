package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/tool"
)

// DefaultPassthroughMaxBlobBytes is PassthroughOptions.MaxBlobBytes when
// unset: 3,932,160 bytes (3.75 MiB, whose base64 fits 5 MiB), the bound
// read_file puts on one image (limits.readMaxImageBytes).
const DefaultPassthroughMaxBlobBytes = 3932160

// PassthroughOptions has the gateway serve the upstream MCP servers'
// resources, resource templates and prompts, with completions and
// resource subscriptions, next to the tools (issue 13, item 6).
//
// The host sees them under the names mcpclient.Manager.Passthru gives
// (Names, config mcp.passthroughNames: "auto" keeps a server's own URI or
// prompt name unless another connected server offers the same one, then
// every one of them is namespaced; "prefixed" always namespaces). Lists
// are merged across servers, every upstream page fetched, and served in
// the SDK's pages; they follow the servers' list_changed notifications
// and servers connecting or leaving (with list_changed to the host).
// Capabilities: resources (with subscribe when some upstream has it),
// prompts and completions are advertised in initialize only when some
// connected upstream server offers them.
//
// Bounds, as for tool results: a text resource (or a text block of a
// prompt message) over MaxChars characters keeps its first and last halves
// under the cut notice tool results use; a blob (or an image or audio of a
// prompt) over MaxBlobBytes decoded bytes is replaced by a text note
// naming its size and the bound.
type PassthroughOptions struct {
	// Upstream is the run's MCP client; nil disables pass-through.
	Upstream *mcpclient.Manager
	// Names is mcpclient.NamesAuto (default) or mcpclient.NamesPrefixed.
	Names string
	// MaxChars bounds one text (characters). Default
	// result.DefaultMaxModelChars (30,000; limits.resultMaxChars).
	MaxChars int
	// MaxBlobBytes bounds one blob, image or audio (decoded bytes).
	// Default DefaultPassthroughMaxBlobBytes (mcp.passthroughMaxBlobBytes).
	MaxBlobBytes int
}

// passthru is one gateway's pass-through: what it registered on its
// server, and its sessions' resource subscriptions.
type passthru struct {
	o   PassthroughOptions
	srv *mcp.Server

	syncMu sync.Mutex // one sync at a time
	mu     sync.Mutex
	snap   mcpclient.Passthru
	res    map[string]mcpclient.PassResource // host URI ->
	tpl    map[string]mcpclient.PassTemplate // host URI template ->
	prm    map[string]mcpclient.PassPrompt   // host name ->
	marks  map[string]string                 // "r|t|p" + host key -> fingerprint of what is registered
	subs   map[string]*ptSub                 // host URI -> its upstream subscription
}

// ptSub is one host URI subscribed upstream, for the sessions in sess.
type ptSub struct {
	cancel func()
	sess   map[*mcp.ServerSession]bool
}

// newPassthru returns nil when o has no upstream; else it sets the
// subscription and completion handlers in so.
func newPassthru(o *PassthroughOptions, so *mcp.ServerOptions) *passthru {
	if o == nil || o.Upstream == nil {
		return nil
	}
	pt := &passthru{o: *o, res: map[string]mcpclient.PassResource{}, tpl: map[string]mcpclient.PassTemplate{},
		prm: map[string]mcpclient.PassPrompt{}, marks: map[string]string{}, subs: map[string]*ptSub{}}
	if pt.o.MaxChars <= 0 {
		pt.o.MaxChars = result.DefaultMaxModelChars
	}
	if pt.o.MaxBlobBytes <= 0 {
		pt.o.MaxBlobBytes = DefaultPassthroughMaxBlobBytes
	}
	so.SubscribeHandler = pt.subscribe
	so.UnsubscribeHandler = pt.unsubscribe
	so.CompletionHandler = pt.complete
	return pt
}

// attach registers the upstream lists on srv and adjusts initialize's
// capabilities to what the upstream servers offer.
func (pt *passthru) attach(srv *mcp.Server) {
	if pt == nil {
		return
	}
	pt.srv = srv
	srv.AddReceivingMiddleware(pt.initialize)
	pt.sync()
}

// initialize resyncs before the SDK computes the capabilities (initialize,
// or server/discover under 2026-07-28), then keeps
// resources.subscribe and completions only when an upstream has them. It
// also guards resource-only subscriptions/listen streams (listen).
func (pt *passthru) initialize(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "subscriptions/listen" {
			if lr, ok := req.(*mcp.SubscriptionsListenRequest); ok && lr.Params != nil && lr.Params.Notifications != nil && lr.Session != nil {
				if n := lr.Params.Notifications; !n.ToolsListChanged && !n.PromptsListChanged && !n.ResourcesListChanged && len(n.ResourceSubscriptions) > 0 {
					return pt.listen(ctx, lr, func(ctx context.Context) (mcp.Result, error) { return next(ctx, method, req) })
				}
			}
		}
		if method != "initialize" && method != "server/discover" { // 2026-07-28 discovers
			return next(ctx, method, req)
		}
		pt.sync()
		res, err := next(ctx, method, req)
		var caps *mcp.ServerCapabilities
		switch r := res.(type) {
		case *mcp.InitializeResult:
			caps = r.Capabilities
		case *mcp.DiscoverResult:
			caps = r.Capabilities
		}
		if caps != nil && err == nil {
			pt.mu.Lock()
			snap := pt.snap
			pt.mu.Unlock()
			if caps.Resources != nil {
				caps.Resources.Subscribe = snap.Subscribe
			}
			if !snap.Complete {
				caps.Completions = nil
			}
		}
		return res, err
	}
}

// sync brings the server's resources, templates and prompts in line with
// the upstream servers' (the SDK tells the host with list_changed).
func (pt *passthru) sync() {
	if pt == nil || pt.srv == nil {
		return
	}
	pt.syncMu.Lock()
	defer pt.syncMu.Unlock()
	snap := pt.o.Upstream.Passthru(pt.o.Names)
	want := map[string]string{}
	res := map[string]mcpclient.PassResource{}
	tpl := map[string]mcpclient.PassTemplate{}
	prm := map[string]mcpclient.PassPrompt{}
	for _, r := range snap.Resources {
		res[r.Resource.URI] = r
		want["r|"+r.Resource.URI] = fingerprint(r.Server, r.URI, r.Resource)
	}
	for _, t := range snap.Templates {
		tpl[t.Template.URITemplate] = t
		want["t|"+t.Template.URITemplate] = fingerprint(t.Server, t.Orig, t.Template)
	}
	for _, p := range snap.Prompts {
		prm[p.Prompt.Name] = p
		want["p|"+p.Prompt.Name] = fingerprint(p.Server, p.Name, p.Prompt)
	}
	pt.mu.Lock()
	old := pt.marks
	pt.snap, pt.res, pt.tpl, pt.prm, pt.marks = snap, res, tpl, prm, want
	pt.mu.Unlock()

	var goneR, goneT, goneP []string
	for k := range old {
		if _, ok := want[k]; ok {
			continue
		}
		switch kind, key := k[:1], k[2:]; kind {
		case "r":
			goneR = append(goneR, key)
		case "t":
			goneT = append(goneT, key)
		case "p":
			goneP = append(goneP, key)
		}
	}
	sort.Strings(goneR)
	sort.Strings(goneT)
	sort.Strings(goneP)
	if len(goneR) > 0 {
		pt.srv.RemoveResources(goneR...)
	}
	if len(goneT) > 0 {
		pt.srv.RemoveResourceTemplates(goneT...)
	}
	if len(goneP) > 0 {
		pt.srv.RemovePrompts(goneP...)
	}
	for _, r := range snap.Resources {
		if k := "r|" + r.Resource.URI; old[k] != want[k] {
			pt.srv.AddResource(r.Resource, pt.readResource(r.Server, r.URI, r.Resource.URI))
		}
	}
	for _, t := range snap.Templates {
		if k := "t|" + t.Template.URITemplate; old[k] != want[k] {
			pt.srv.AddResourceTemplate(t.Template, pt.readTemplate(t))
		}
	}
	for _, p := range snap.Prompts {
		if k := "p|" + p.Prompt.Name; old[k] != want[k] {
			pt.srv.AddPrompt(p.Prompt, pt.getPrompt(p))
		}
	}
}

func fingerprint(server, orig string, v any) string {
	b, _ := json.Marshal(v)
	return server + "\x00" + orig + "\x00" + string(b)
}

// readResource reads a listed resource from its server.
func (pt *passthru) readResource(server, orig, host string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		res, err := pt.o.Upstream.ReadResource(ctx, server, orig)
		if err != nil {
			return nil, err
		}
		prefix := strings.TrimSuffix(host, orig)
		if host == orig {
			prefix = ""
		}
		return pt.boundRead(res, prefix), nil
	}
}

// readTemplate reads a URI made from a template from its server: the
// host's URI without the template's namespace prefix.
func (pt *passthru) readTemplate(t mcpclient.PassTemplate) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		orig, ok := strings.CutPrefix(req.Params.URI, t.Prefix)
		if !ok {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		res, err := pt.o.Upstream.ReadResource(ctx, t.Server, orig)
		if err != nil {
			return nil, err
		}
		return pt.boundRead(res, t.Prefix), nil
	}
}

// boundRead namespaces the contents' URIs with prefix and bounds them.
func (pt *passthru) boundRead(res *mcp.ReadResourceResult, prefix string) *mcp.ReadResourceResult {
	out := *res
	out.Contents = make([]*mcp.ResourceContents, 0, len(res.Contents))
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		cp := *c
		if prefix != "" && cp.URI != "" {
			cp.URI = prefix + cp.URI
		}
		pt.boundContents(&cp)
		out.Contents = append(out.Contents, &cp)
	}
	return &out
}

// boundContents applies MaxChars to a text and MaxBlobBytes to a blob.
func (pt *passthru) boundContents(c *mcp.ResourceContents) {
	if len(c.Blob) > pt.o.MaxBlobBytes {
		c.Text = pt.blobNote("resource "+c.URI, c.MIMEType, len(c.Blob))
		c.Blob, c.MIMEType = nil, "text/plain"
		return
	}
	c.Text = pt.clip(c.Text)
}

// blobNote stands for binary data over MaxBlobBytes.
func (pt *passthru) blobNote(what, mime string, n int) string {
	if mime == "" {
		mime = "unknown type"
	}
	return fmt.Sprintf("[%s: %s, %d bytes of binary data, not passed through by aibuddy: over the %d-byte bound (mcp.passthroughMaxBlobBytes); ask the server for a smaller item or raise the bound]",
		what, mime, n, pt.o.MaxBlobBytes)
}

// clip keeps the first and last halves of a text over MaxChars under the
// cut notice tool results carry (result.Bound's format).
func (pt *passthru) clip(s string) string {
	max := pt.o.MaxChars
	total := utf8.RuneCountInString(s)
	if total <= max {
		return s
	}
	r := []rune(s)
	head, tail := max/2, max-max/2
	lineAt := func(p int) int64 { return int64(1 + strings.Count(string(r[:p]), "\n")) }
	first, last := lineAt(head), lineAt(total-tail-1)
	lines := int64(strings.Count(s, "\n"))
	if !strings.HasSuffix(s, "\n") {
		lines++
	}
	omitted := int64(total - head - tail)
	notice := tool.Cut{By: "aibuddy", Bound: fmt.Sprintf("the %d-character result bound", max),
		TotalChars: int64(total), TotalLines: lines, HeadChars: int64(head), TailChars: int64(tail),
		OmittedChars: omitted, OmittedFirst: first, OmittedLast: last,
		Next: "aibuddy passes no more of it through (limits.resultMaxChars): ask the server for a narrower resource or prompt"}.Notice()
	return notice + "\n" + string(r[:head]) + "\n" + tool.CutMarker(omitted, first, last) + "\n" + string(r[total-tail:])
}

// getPrompt gets a prompt from its server under its original name.
func (pt *passthru) getPrompt(p mcpclient.PassPrompt) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		params := *req.Params
		params.Name = p.Name
		res, err := pt.o.Upstream.GetPrompt(ctx, p.Server, &params)
		if err != nil {
			return nil, err
		}
		out := *res
		out.Messages = make([]*mcp.PromptMessage, 0, len(res.Messages))
		for _, m := range res.Messages {
			if m == nil {
				continue
			}
			out.Messages = append(out.Messages, &mcp.PromptMessage{Role: m.Role, Content: pt.boundContent(m.Content)})
		}
		return &out, nil
	}
}

// boundContent bounds one prompt message's content.
func (pt *passthru) boundContent(c mcp.Content) mcp.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		cp := *c
		cp.Text = pt.clip(c.Text)
		return &cp
	case *mcp.ImageContent:
		if len(c.Data) > pt.o.MaxBlobBytes {
			return &mcp.TextContent{Text: pt.blobNote("image", c.MIMEType, len(c.Data))}
		}
	case *mcp.AudioContent:
		if len(c.Data) > pt.o.MaxBlobBytes {
			return &mcp.TextContent{Text: pt.blobNote("audio", c.MIMEType, len(c.Data))}
		}
	case *mcp.EmbeddedResource:
		if c.Resource != nil {
			cp := *c
			rc := *c.Resource
			pt.boundContents(&rc)
			cp.Resource = &rc
			return &cp
		}
	}
	return c
}

// complete routes completion/complete by its reference: a prompt by its
// host name, a resource template (or resource) by its host URI.
func (pt *passthru) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	params := *req.Params
	r := *ref
	params.Ref = &r
	var server string
	pt.mu.Lock()
	switch ref.Type {
	case "ref/prompt":
		if p, ok := pt.prm[ref.Name]; ok {
			server, r.Name = p.Server, p.Name
		}
	case "ref/resource":
		if t, ok := pt.tpl[ref.URI]; ok {
			server, r.URI = t.Server, t.Orig
		} else if rs, ok := pt.res[ref.URI]; ok {
			server, r.URI = rs.Server, rs.URI
		}
	}
	pt.mu.Unlock()
	if server == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("Discovery: no upstream MCP server offers %s %q; use a name from prompts/list or a template from resources/templates/list", ref.Type, ref.Name+ref.URI)}
	}
	return pt.o.Upstream.Complete(ctx, server, &params)
}

// route finds the server and original URI of a host URI: a listed
// resource, a URI made from a namespaced template, one matching a template
// kept as is, or any namespaced URI.
func (pt *passthru) route(uri string) (server, orig string, ok bool) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if r, ok := pt.res[uri]; ok {
		return r.Server, r.URI, true
	}
	keys := make([]string, 0, len(pt.tpl))
	for k := range pt.tpl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t := pt.tpl[k]
		if t.Prefix != "" {
			if rest, found := strings.CutPrefix(uri, t.Prefix); found {
				return t.Server, rest, true
			}
			continue
		}
		if ut, err := uritemplate.New(t.Orig); err == nil && ut.Regexp().MatchString(uri) {
			return t.Server, uri, true
		}
	}
	if s, o, found := mcpclient.SplitNamespacedURI(uri); found {
		return s, o, true
	}
	return "", "", false
}

// subscribe subscribes the session to a host URI: the URI is subscribed
// upstream once per gateway, and each upstream notifications/resources/
// updated goes to the sessions subscribed (Server.ResourceUpdated). A
// session's subscriptions end with it.
func (pt *passthru) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	server, orig, ok := pt.route(uri)
	if !ok {
		return &jsonrpc.Error{Code: mcp.CodeResourceNotFound,
			Message: fmt.Sprintf("Discovery: no upstream MCP server offers resource %q; use a URI from resources/list or one made from resources/templates/list", uri)}
	}
	pt.mu.Lock()
	if s := pt.subs[uri]; s != nil {
		first := !pt.hasSessionLocked(req.Session)
		s.sess[req.Session] = true
		pt.mu.Unlock()
		if first {
			pt.watchSession(req.Session)
		}
		return nil
	}
	pt.mu.Unlock()
	srv := pt.srv
	cancel, err := pt.o.Upstream.SubscribeResource(ctx, server, orig, func() {
		go func() {
			_ = srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}()
	})
	if err != nil {
		return err
	}
	pt.mu.Lock()
	if s := pt.subs[uri]; s != nil { // a parallel subscribe won
		first := !pt.hasSessionLocked(req.Session)
		s.sess[req.Session] = true
		pt.mu.Unlock()
		cancel()
		if first {
			pt.watchSession(req.Session)
		}
		return nil
	}
	first := !pt.hasSessionLocked(req.Session)
	pt.subs[uri] = &ptSub{cancel: cancel, sess: map[*mcp.ServerSession]bool{req.Session: true}}
	pt.mu.Unlock()
	if first {
		pt.watchSession(req.Session)
	}
	return nil
}

func (pt *passthru) hasSessionLocked(ss *mcp.ServerSession) bool {
	for _, s := range pt.subs {
		if s.sess[ss] {
			return true
		}
	}
	return false
}

// watchSession drops the session's subscriptions when it ends.
func (pt *passthru) watchSession(ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	go func() {
		_ = ss.Wait()
		pt.mu.Lock()
		var uris []string
		for uri, s := range pt.subs {
			if s.sess[ss] {
				uris = append(uris, uri)
			}
		}
		pt.mu.Unlock()
		for _, uri := range uris {
			pt.release(ss, uri)
		}
	}()
}

// unsubscribe ends the session's subscription to a host URI (a no-op when
// it has none).
func (pt *passthru) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	pt.release(req.Session, req.Params.URI)
	return nil
}

// release removes ss from uri's subscribers; the last one unsubscribes
// upstream.
func (pt *passthru) release(ss *mcp.ServerSession, uri string) {
	pt.mu.Lock()
	s := pt.subs[uri]
	if s == nil || !s.sess[ss] {
		pt.mu.Unlock()
		return
	}
	delete(s.sess, ss)
	if len(s.sess) > 0 {
		pt.mu.Unlock()
		return
	}
	delete(pt.subs, uri)
	pt.mu.Unlock()
	s.cancel()
}

// listen serves a subscriptions/listen stream that only subscribes to
// resources (protocol 2026-07-28: a host's resources/subscribe). When such
// a stream ends, the MCP Go SDK v1.8.0 server also drops every
// list_changed subscription of the session (subscriptionsListen's deferred
// cleanup; fixed upstream by go-sdk pull request 1275), and the host would
// never again hear of tool_search activations or upstream list changes.
// So the SDK's stream runs on until the session ends, and the host's
// cancellation (its unsubscribe) is answered here: the session's
// subscriptions to those URIs end (upstream too, when it was the last) and
// no more updates for them are sent.
func (pt *passthru) listen(ctx context.Context, lr *mcp.SubscriptionsListenRequest, next func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	ss := lr.Session
	detached, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		_ = ss.Wait()
		cancel()
	}()
	type answer struct {
		res mcp.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := next(detached)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		cancel()
		return a.res, a.err
	case <-ctx.Done():
		for _, uri := range lr.Params.Notifications.ResourceSubscriptions {
			pt.release(ss, uri)
		}
		return nil, ctx.Err()
	}
}
