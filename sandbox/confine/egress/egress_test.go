package egress_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox/confine/egress"
)

func TestAllowlist(t *testing.T) {
	a := egress.NewAllowlist([]string{"example.com", "*.example.org", "localhost:8080", "127.0.0.2"})
	for _, c := range []struct {
		host string
		port int
		want bool
	}{
		{"example.com", 443, true}, {"EXAMPLE.com.", 80, true}, {"sub.example.com", 443, false},
		{"a.example.org", 443, true}, {"example.org", 443, false},
		{"localhost", 8080, true}, {"localhost", 8081, false}, {"localhost", 0, true},
		{"127.0.0.2", 1, true}, {"127.0.0.3", 1, false}, {"blocked.test", 0, false},
	} {
		if got := a.Allows(c.host, c.port); got != c.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
}

type mapResolver map[string]string

func (m mapResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	if ip, ok := m[host]; ok {
		return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// A request whose Host header names another host than its absolute URL is
// refused, and the upstream logs nothing (BH-082).
func TestProxyDecidesByAuthority(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host)
		mu.Unlock()
		fmt.Fprintln(w, "ok")
	})}
	go srv.Serve(up)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(up.Addr().String())
	var denials []egress.Denial
	p := egress.New(egress.NewAllowlist([]string{"allowed.test"}), &egress.Options{
		Resolver: mapResolver{"allowed.test": "127.0.0.1", "blocked.test": "127.0.0.1"},
		OnDeny:   func(d egress.Denial) { mu.Lock(); denials = append(denials, d); mu.Unlock() }})
	defer p.Close()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.ServeHTTP(pl)
	send := func(req string) string {
		c, err := net.Dial("tcp", pl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, req)
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	if got := send("GET http://allowed.test:" + port + "/ HTTP/1.1\r\nHost: allowed.test:" + port + "\r\nConnection: close\r\n\r\n"); !strings.Contains(got, "200") {
		t.Errorf("allowed: %q", got)
	}
	for _, req := range []string{
		"GET http://allowed.test:" + port + "/ HTTP/1.1\r\nHost: blocked.test:" + port + "\r\n\r\n",
		"CONNECT blocked.test:" + port + " HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n",
		"GET http://blocked.test:" + port + "/ HTTP/1.1\r\nHost: blocked.test:" + port + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n",
	} {
		if got := send(req); !strings.Contains(got, "403") && !strings.Contains(got, "400") {
			t.Errorf("%q: got %q, want a refusal", req, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || len(denials) != 4 {
		t.Errorf("upstream saw %v; denials %v", seen, denials)
	}
}

func ExampleProxy_ServeHTTP() {
	p := egress.New(egress.NewAllowlist([]string{"example.com"}), nil)
	defer p.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	p.ServeHTTP(l)
	c, _ := net.Dial("tcp", l.Addr().String())
	defer c.Close()
	fmt.Fprint(c, "CONNECT blocked.test:443 HTTP/1.1\r\n\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print(line)
	// Output: HTTP/1.1 403 Forbidden
}
