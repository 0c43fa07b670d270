package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/oncely/oncely/internal/console"
)

// watchFlag is the repeatable --watch SOURCE/CONSUMER.
type watchFlag []console.Consumer

func (w *watchFlag) String() string {
	var s []string
	for _, c := range *w {
		s = append(s, c.Source+"/"+c.Name)
	}
	return strings.Join(s, ",")
}

func (w *watchFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		i := strings.LastIndex(p, "/")
		if i <= 0 || i == len(p)-1 {
			return fmt.Errorf("%q: want SOURCE/CONSUMER", p)
		}
		*w = append(*w, console.Consumer{Source: p[:i], Name: p[i+1:]})
	}
	return nil
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// boundHosts returns the Host names the console answers for because it
// listens on addr: its host when it is a name or a specific address, every
// address of this machine's interfaces when it is a wildcard ("", 0.0.0.0,
// ::). Loopback names need nothing: the console always allows them.
func boundHosts(addr string) ([]string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip, perr := netip.ParseAddr(host)
	switch {
	case host == "localhost" || (perr == nil && ip.IsLoopback()):
		return nil, nil
	case host != "" && (perr != nil || !ip.IsUnspecified()):
		return []string{host}, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing the addresses of --addr %s: %w", addr, err)
	}
	var out []string
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && !p.Addr().IsLoopback() && p.Addr().Zone() == "" {
			out = append(out, p.Addr().String())
		}
	}
	return out, nil
}

// prefixFlag is the repeatable --trusted-proxy CIDR (a bare address is
// one host).
type prefixFlag []netip.Prefix

func (p *prefixFlag) String() string {
	var s []string
	for _, x := range *p {
		s = append(s, x.String())
	}
	return strings.Join(s, ",")
}

func (p *prefixFlag) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if a, err := netip.ParseAddr(part); err == nil {
			*p = append(*p, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		pr, err := netip.ParsePrefix(part)
		if err != nil {
			return fmt.Errorf("%q: want a CIDR such as 10.0.0.0/8, or an address", part)
		}
		*p = append(*p, pr.Masked())
	}
	return nil
}

// isLoopbackAddr reports whether addr (host:port) listens on loopback only.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return host == "localhost" || (err == nil && ip.IsLoopback())
}

// readTokenFile reads per-user login tokens by hash: one "NAME: SHA256"
// line each (the SHA-256 of the token in hex, as `printf %s "$TOKEN" |
// sha256sum` prints it); blank lines and lines starting with # are skipped.
func readTokenFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		name, hash = strings.TrimSpace(name), strings.ToLower(strings.TrimSpace(hash))
		if !ok || name == "" || len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%s:%d: want NAME: SHA256-OF-TOKEN (64 hex digits)", path, i+1)
		}
		if other, dup := out[hash]; dup {
			return nil, fmt.Errorf("%s:%d: %s has the same token as %s", path, i+1, name, other)
		}
		out[hash] = name
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return out, nil
}
