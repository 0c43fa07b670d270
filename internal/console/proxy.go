package console

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// client is where a request came from, as far as the console can trust
// it: the address throttles and the audit table record, and whether the
// browser's connection is TLS (the session cookie is Secure then).
type client struct {
	addr  string
	https bool
}

// clientOf returns r's client. The peer of the connection is the client
// unless it is in Config.TrustedProxies: then X-Forwarded-For is read from
// the right, skipping trusted proxies, and its first other address is the
// client (the leftmost when every one is trusted), and X-Forwarded-Proto
// "https" (its last value) counts as TLS. Forwarding headers from any
// other peer are ignored.
func (s *Server) clientOf(r *http.Request) client {
	c := client{addr: r.RemoteAddr, https: r.TLS != nil}
	peer, ok := parseHostAddr(r.RemoteAddr)
	if !ok {
		return c
	}
	c.addr = peer.String()
	if !s.trusted(peer) {
		return c
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hops = append(hops, h)
			}
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHostAddr(hops[i])
		if !ok {
			break // the proxy wrote something else: keep the last trusted hop
		}
		c.addr = a.String()
		if !s.trusted(a) {
			break
		}
	}
	if protos := r.Header.Values("X-Forwarded-Proto"); len(protos) > 0 {
		last := protos[len(protos)-1]
		if i := strings.LastIndex(last, ","); i >= 0 {
			last = last[i+1:]
		}
		c.https = c.https || strings.EqualFold(strings.TrimSpace(last), "https")
	}
	return c
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHostAddr reads an IP address, with or without a port.
func parseHostAddr(s string) (netip.Addr, bool) {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}
