package egress

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// maxDNSMessage bounds one DNS message over TCP (the protocol's limit).
const maxDNSMessage = 65535

// ServeDNS answers DNS queries on pc (UDP) until [Proxy.Close]: A and AAAA
// questions for allowed names get the resolver's addresses; every other
// name is answered NXDOMAIN and reported as a denial. It returns at once.
func (p *Proxy) ServeDNS(pc net.PacketConn) {
	if !p.track(nil, pc) {
		_ = pc.Close()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, 4096)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := p.answer(buf[:n]); out != nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
}

// ServeDNSTCP answers DNS over TCP on l (length-prefixed messages), as
// ServeDNS does over UDP.
func (p *Proxy) ServeDNSTCP(l net.Listener) {
	p.serve(l, func(c net.Conn) {
		for {
			_ = c.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout))
			var l [2]byte
			if _, err := io.ReadFull(c, l[:]); err != nil {
				return
			}
			msg := make([]byte, binary.BigEndian.Uint16(l[:]))
			if _, err := io.ReadFull(c, msg); err != nil {
				return
			}
			out := p.answer(msg)
			if out == nil || len(out) > maxDNSMessage {
				return
			}
			var ol [2]byte
			binary.BigEndian.PutUint16(ol[:], uint16(len(out)))
			if _, err := c.Write(append(ol[:], out...)); err != nil {
				return
			}
		}
	})
}

// answer builds the response to one query message; nil drops it.
func (p *Proxy) answer(query []byte) []byte {
	var parser dnsmessage.Parser
	h, err := parser.Start(query)
	if err != nil || h.Response {
		return nil
	}
	qs, err := parser.AllQuestions()
	if err != nil {
		return nil
	}
	resp := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	b := dnsmessage.NewBuilder(nil, resp)
	b.EnableCompression()
	if len(qs) != 1 || h.OpCode != 0 {
		resp.RCode = dnsmessage.RCodeNotImplemented
		b = dnsmessage.NewBuilder(nil, resp)
		out, _ := b.Finish()
		return out
	}
	q := qs[0]
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	if !p.allow.Allows(name, 0) {
		p.deny(Denial{Kind: "dns", Target: name, Reason: "not in the allowed domains (" + p.allow.String() + ")"})
		resp.RCode = dnsmessage.RCodeNameError
		b = dnsmessage.NewBuilder(nil, resp)
		_ = b.StartQuestions()
		_ = b.Question(q)
		out, _ := b.Finish()
		return out
	}
	var ips []net.IPAddr
	if q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeAAAA {
		if ip := net.ParseIP(name); ip != nil {
			ips = []net.IPAddr{{IP: ip}}
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), p.opts.DialTimeout)
			ips, err = p.opts.Resolver.LookupIPAddr(ctx, name)
			cancel()
			if err != nil {
				resp.RCode = dnsmessage.RCodeNameError
				var de *net.DNSError
				if e, ok := err.(*net.DNSError); ok {
					de = e
				}
				if de == nil || !de.IsNotFound {
					resp.RCode = dnsmessage.RCodeServerFailure
				}
			}
		}
	}
	b = dnsmessage.NewBuilder(nil, resp)
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	hdr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}
	for _, ip := range ips {
		if v4 := ip.IP.To4(); v4 != nil && q.Type == dnsmessage.TypeA {
			var a dnsmessage.AResource
			copy(a.A[:], v4)
			_ = b.AResource(hdr, a)
		} else if v4 == nil && q.Type == dnsmessage.TypeAAAA {
			var a dnsmessage.AAAAResource
			copy(a.AAAA[:], ip.IP.To16())
			_ = b.AAAAResource(hdr, a)
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
