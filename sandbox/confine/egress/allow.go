package egress

import (
	"net"
	"strconv"
	"strings"
)

// Allowlist is a parsed sandbox.allowedDomains list.
type Allowlist struct {
	entries []entry
	text    string
}

type entry struct {
	host     string // lower case, without a trailing dot; for a wildcard the domain after "*."
	wildcard bool   // "*.host": subdomains of host, not host itself
	port     int    // 0: any port
}

// NewAllowlist parses entries: "example.com" (that host, any port),
// "*.example.com" (its subdomains, not itself), "host:port" (one port), IP
// addresses (IPv6 in brackets with a port). Entries that do not parse are
// skipped; validate them first (confine.ValidDomain).
func NewAllowlist(entries []string) *Allowlist {
	a := &Allowlist{text: strings.Join(entries, ", ")}
	if a.text == "" {
		a.text = "none"
	}
	for _, e := range entries {
		host, port := e, 0
		if h, p, err := net.SplitHostPort(e); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil {
				continue
			}
			host, port = h, n
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		wild := strings.HasPrefix(host, "*.")
		host = strings.TrimPrefix(host, "*.")
		if ip := net.ParseIP(host); ip != nil {
			host = ip.String()
		}
		a.entries = append(a.entries, entry{host: host, wildcard: wild, port: port})
	}
	return a
}

// Allows reports whether host (a name or an IP address) is allowed on
// port; port 0 asks about the name alone (a DNS lookup).
func (a *Allowlist) Allows(host string, port int) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		host = ip.String()
	}
	for _, e := range a.entries {
		if e.port != 0 && port != 0 && e.port != port {
			continue
		}
		if e.wildcard {
			if strings.HasSuffix(host, "."+e.host) {
				return true
			}
			continue
		}
		if host == e.host {
			return true
		}
	}
	return false
}

// String lists the entries as configured ("none" when empty).
func (a *Allowlist) String() string { return a.text }
