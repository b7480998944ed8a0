package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resolver looks up a host's addresses (net.DefaultResolver satisfies it).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Options configures a [Proxy]. A nil *Options means the defaults.
type Options struct {
	// Resolver resolves allowed names, for the DNS answers and for the
	// proxy's own connections. Default net.DefaultResolver.
	Resolver Resolver
	// Dial opens the proxy's connections to allowed destinations (an
	// address "ip:port"). Default a net.Dialer with DialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTimeout bounds one outgoing connection (and one lookup).
	// Default 10 s.
	DialTimeout time.Duration
	// HeaderTimeout bounds how long a client may take to send a request
	// head (request line and headers). Default 30 s.
	HeaderTimeout time.Duration
	// OnDeny, when set, is called for every refused request or lookup.
	OnDeny func(Denial)
}

// Denial is one refused request or lookup.
type Denial struct {
	Kind   string // "connect" (CONNECT), "http" (absolute-form request), "dns" (lookup), "request" (malformed or not a proxy request)
	Target string // host:port, or the name looked up
	Reason string // why, for people
}

func (d Denial) String() string {
	switch d.Kind {
	case "dns":
		return fmt.Sprintf("lookup of %s denied by egress policy (sandbox.allowedDomains): %s", d.Target, d.Reason)
	case "request":
		return fmt.Sprintf("proxy request refused by egress policy: %s", d.Reason)
	}
	return fmt.Sprintf("%s to %s denied by egress policy (sandbox.allowedDomains): %s", strings.ToUpper(d.Kind), d.Target, d.Reason)
}

// Proxy is the egress proxy and resolver of one confined process. Its
// zero value is not usable; build it with [New].
type Proxy struct {
	allow *Allowlist
	opts  Options

	mu     sync.Mutex
	closed bool
	lis    []net.Listener
	pcs    []net.PacketConn
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// New builds a proxy that lets through only what allow permits.
func New(allow *Allowlist, o *Options) *Proxy {
	p := &Proxy{allow: allow, conns: map[net.Conn]struct{}{}}
	if o != nil {
		p.opts = *o
	}
	if p.opts.Resolver == nil {
		p.opts.Resolver = net.DefaultResolver
	}
	if p.opts.DialTimeout <= 0 {
		p.opts.DialTimeout = 10 * time.Second
	}
	if p.opts.HeaderTimeout <= 0 {
		p.opts.HeaderTimeout = 30 * time.Second
	}
	if p.opts.Dial == nil {
		d := &net.Dialer{Timeout: p.opts.DialTimeout}
		p.opts.Dial = d.DialContext
	}
	return p
}

// ServeHTTP accepts proxy clients on l until [Proxy.Close]: each
// connection carries one CONNECT (then a tunnel) or one absolute-form
// request (forwarded, then the connection is relayed as is). Both are
// decided only from the authority the proxy itself connects to, never from
// where the connection came from; an absolute-form request whose Host
// header names another host is refused (BH-082), and so is an origin-form
// request (the proxy is not a server). It returns at once; serving runs in
// the background.
func (p *Proxy) ServeHTTP(l net.Listener) { p.serve(l, p.handle) }

// serve accepts on l in the background and runs handle for each
// connection, every listener and connection tracked so Close ends them.
func (p *Proxy) serve(l net.Listener, handle func(net.Conn)) {
	if !p.track(l, nil) {
		_ = l.Close()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if !p.trackConn(c) {
				_ = c.Close()
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer p.untrackConn(c)
				handle(c)
			}()
		}
	}()
}

func (p *Proxy) track(l net.Listener, pc net.PacketConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if l != nil {
		p.lis = append(p.lis, l)
	}
	if pc != nil {
		p.pcs = append(p.pcs, pc)
	}
	return true
}

func (p *Proxy) trackConn(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrackConn(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops every listener and connection and waits for the serving
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for _, l := range p.lis {
		_ = l.Close()
	}
	for _, pc := range p.pcs {
		_ = pc.Close()
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

func (p *Proxy) deny(d Denial) {
	if p.opts.OnDeny != nil {
		p.opts.OnDeny(d)
	}
}

// reject reports d (Options.OnDeny) and answers c with status and the
// reason: every refusal of the proxy goes through here.
func (p *Proxy) reject(c net.Conn, status int, d Denial) {
	p.deny(d)
	refuse(c, status, d)
}

// refuse answers a proxy client with status and a body saying why.
func refuse(c net.Conn, status int, d Denial) {
	body := "aibuddy: " + d.String() + "; retrying will not help: the user can allow the destination in the settings (sandbox.allowedDomains)\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Aibuddy-Denied: egress-policy\r\n\r\n%s",
		status, statusText(status), len(body), body)
}

func statusText(code int) string {
	switch code {
	case 400:
		return "Bad Request"
	case 403:
		return "Forbidden"
	case 502:
		return "Bad Gateway"
	}
	return "Error"
}

func (p *Proxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout))
	br := bufio.NewReaderSize(c, 16<<10)
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return
	}
	method, target, proto, ok := parseRequestLine(line)
	if !ok {
		d := Denial{Kind: "request", Reason: "malformed request line"}
		p.reject(c, 400, d)
		return
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		d := Denial{Kind: "request", Reason: "malformed request headers"}
		p.reject(c, 400, d)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if method == "CONNECT" {
		host, port, err := splitAuthority(target, "")
		if err != nil {
			d := Denial{Kind: "request", Reason: fmt.Sprintf("CONNECT %q: %v", target, err)}
			p.reject(c, 400, d)
			return
		}
		up, d := p.dial(host, port, "connect")
		if up == nil {
			p.reject(c, 403, d)
			return
		}
		defer up.Close()
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		relay(c, br, up)
		return
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		d := Denial{Kind: "request", Reason: fmt.Sprintf("%s %s: only CONNECT and absolute-form requests (http://host/path) go through the proxy", method, target)}
		p.reject(c, 400, d)
		return
	}
	if u.Scheme != "http" {
		d := Denial{Kind: "request", Reason: fmt.Sprintf("%s %s: scheme %q (use CONNECT for https)", method, target, u.Scheme)}
		p.reject(c, 400, d)
		return
	}
	host, port, err := splitAuthority(u.Host, "80")
	if err != nil {
		d := Denial{Kind: "request", Reason: fmt.Sprintf("%s %s: %v", method, target, err)}
		p.reject(c, 400, d)
		return
	}
	if hh := hdr.Get("Host"); hh != "" {
		hhost, hport, err := splitAuthority(hh, "80")
		if err != nil || !strings.EqualFold(hhost, host) || hport != port {
			d := Denial{Kind: "http", Target: net.JoinHostPort(host, port),
				Reason: fmt.Sprintf("the Host header %q disagrees with the request's URL", hh)}
			p.reject(c, 403, d)
			return
		}
	}
	up, d := p.dial(host, port, "http")
	if up == nil {
		p.reject(c, 403, d)
		return
	}
	defer up.Close()
	// Forward in origin form; the client's further bytes (a body, more
	// requests) go to the same destination, which was allowed.
	path := u.RequestURI()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\r\n", method, path, proto)
	if hdr.Get("Host") == "" {
		fmt.Fprintf(&b, "Host: %s\r\n", u.Host)
	}
	for k, vs := range hdr {
		if strings.EqualFold(k, "Proxy-Connection") || strings.EqualFold(k, "Proxy-Authorization") {
			continue
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(up, b.String()); err != nil {
		return
	}
	relay(c, br, up)
}

// dial connects to host:port when the allowlist permits it; otherwise it
// returns the denial.
func (p *Proxy) dial(host, port, kind string) (net.Conn, Denial) {
	target := net.JoinHostPort(host, port)
	n, _ := strconv.Atoi(port)
	if !p.allow.Allows(host, n) {
		return nil, Denial{Kind: kind, Target: target, Reason: "not in the allowed domains (" + p.allow.String() + ")"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.DialTimeout)
	defer cancel()
	addrs := []string{host}
	if net.ParseIP(host) == nil {
		ips, err := p.opts.Resolver.LookupIPAddr(ctx, host)
		if err != nil || len(ips) == 0 {
			return nil, Denial{Kind: kind, Target: target, Reason: fmt.Sprintf("allowed, but the name did not resolve: %v", err)}
		}
		addrs = addrs[:0]
		for _, ip := range ips {
			addrs = append(addrs, ip.IP.String())
		}
	}
	var last error
	for _, a := range addrs {
		c, err := p.opts.Dial(ctx, "tcp", net.JoinHostPort(a, port))
		if err == nil {
			return c, Denial{}
		}
		last = err
	}
	return nil, Denial{Kind: kind, Target: target, Reason: fmt.Sprintf("allowed, but the connection failed: %v", last)}
}

// relay copies both ways until either side ends; br holds what the proxy
// already read from the client.
func relay(client net.Conn, br *bufio.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, br)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, up)
		if cw, ok := client.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}

func parseRequestLine(line string) (method, target, proto string, ok bool) {
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method == "" || target == "" || !strings.HasPrefix(proto, "HTTP/1.") {
		return "", "", "", false
	}
	return method, target, proto, true
}

// splitAuthority splits "host:port" (or "host" with defPort); IPv6
// literals are bracketed.
func splitAuthority(a, defPort string) (host, port string, err error) {
	h, pt, err := net.SplitHostPort(a)
	if err != nil {
		if defPort == "" {
			return "", "", errors.New("want host:port")
		}
		h, pt = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"), defPort
	}
	n, perr := strconv.Atoi(pt)
	if h == "" || perr != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("bad authority %q", a)
	}
	return strings.TrimSuffix(strings.ToLower(h), "."), pt, nil
}
