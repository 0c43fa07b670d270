package console

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// allowedHosts decides which Host headers the console answers: the
// loopback names (localhost and every loopback IP address, on any port)
// and Config.AllowedHosts. A page that rebinds its own name to 127.0.0.1
// still sends that name as Host, so the loopback names let no other site
// in; the port is not part of the protection and is not checked for them.
type allowedHosts struct {
	names map[string]bool // host, or host:port, lower case, IPv6 without brackets in host-only entries
}

func newAllowedHosts(extra []string) allowedHosts {
	a := allowedHosts{names: map[string]bool{}}
	for _, h := range extra {
		a.names[normalHost(h)] = true
	}
	return a
}

// normalHost lower-cases h and writes an IPv6 literal with brackets only
// when a port follows it.
func normalHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if host, port, err := net.SplitHostPort(h); err == nil {
		return net.JoinHostPort(host, port)
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// allows reports whether the request's Host header names this console.
func (a allowedHosts) allows(hostHeader string) bool {
	hostHeader = strings.ToLower(hostHeader)
	host, port, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostHeader, "["), "]"), ""
	}
	if host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() && ip.Zone() == "" {
		return true
	}
	if a.names[host] {
		return true
	}
	return port != "" && a.names[net.JoinHostPort(host, port)]
}

// validateAllowedHost reports what is wrong with an AllowedHosts entry.
func validateAllowedHost(h string) error {
	if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/\\@?#* \t\r\n") || strings.Contains(h, "://") {
		return fmt.Errorf("AllowedHosts entry %q: want a host name or IP address, optionally with :port", h)
	}
	return nil
}

// hostChecked answers 421 Misdirected Request, before any handler runs and
// without any data, to a request whose Host header is not allowed.
func (s *Server) hostChecked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.allows(r.Host) {
			s.log.WarnContext(r.Context(), "console: request for another host refused", "host", r.Host, "client", s.clientOf(r).addr)
			http.Error(w, fmt.Sprintf("421 Misdirected Request: this console answers only for localhost, its loopback addresses "+
				"and the names it was started with (--allowed-host); not for %q", r.Host), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
