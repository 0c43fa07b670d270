package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// hostURLs splits a URL naming several nodes of one cluster,
// amqp://user:pass@h1:5672,h2:5673,h3:5674/vhost?query, into one URL per
// node (amqp://user:pass@h1:5672/vhost?query, …), in the order written.
// Everything but the host list (scheme, user info, vhost, query) is copied
// byte for byte. A URL with one host comes back alone and unchanged. It
// parses nothing: each URL is checked by amqp.ParseURI (validateHosts).
func hostURLs(raw string) []string {
	head, hosts, tail := splitHosts(raw)
	if len(hosts) == 1 {
		return []string{raw}
	}
	urls := make([]string, len(hosts))
	for i, h := range hosts {
		urls[i] = head + h + tail
	}
	return urls
}

// splitHosts cuts raw around its host list: what comes before the first
// host (scheme and user info), the hosts, and what follows them.
func splitHosts(raw string) (head string, hosts []string, tail string) {
	start := 0
	if sep := strings.Index(raw, "://"); sep >= 0 {
		start = sep + 3
	}
	end := len(raw)
	if i := strings.IndexAny(raw[start:], "/?#"); i >= 0 {
		end = start + i
	}
	if at := strings.LastIndex(raw[start:end], "@"); at >= 0 {
		start += at + 1
	}
	return raw[:start], strings.Split(raw[start:end], ","), raw[end:]
}

// parseHosts parses every node's URL of raw (hostURLs), failing on the
// first that does not parse or names no host.
func parseHosts(raw string) ([]amqp.URI, error) {
	var uris []amqp.URI
	_, hosts, _ := splitHosts(raw)
	for i, one := range hostURLs(raw) {
		if len(hosts) > 1 && hosts[i] == "" {
			return nil, fmt.Errorf("host %d of %d in the host list is empty", i+1, len(hosts))
		}
		u, err := amqp.ParseURI(one)
		if err != nil {
			return nil, err
		}
		uris = append(uris, u)
	}
	return uris, nil
}

// hostRing remembers which of a URL's nodes to dial first. A connection
// that is lost (the node died, or the network to it) is replaced by one to
// the next node in the list: each dial tries the nodes in turn, starting
// after the node of the last connection, so the node just lost is tried
// last. The zero value starts at the first node.
type hostRing struct {
	mu   sync.Mutex
	next int
}

// dial opens a connection to one of cfg.URL's nodes (see hostRing),
// returning every node's error when none answers. A refused login or vhost
// ends the round at once: the nodes of a cluster share users and vhosts.
func (r *hostRing) dial(ctx context.Context, cfg Config) (*amqp.Connection, error) {
	urls := hostURLs(cfg.URL)
	r.mu.Lock()
	first := r.next % len(urls)
	r.mu.Unlock()
	var errs []error
	for i := range urls {
		k := (first + i) % len(urls)
		one := cfg
		one.URL = urls[k]
		conn, err := dial(ctx, one)
		if err == nil {
			r.mu.Lock()
			r.next = k + 1
			r.mu.Unlock()
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || errors.Is(err, ErrLoginRefused) || errors.Is(err, ErrVhostRefused) {
			break
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, fmt.Errorf("no node of the cluster answers: %w", errors.Join(errs...))
}
