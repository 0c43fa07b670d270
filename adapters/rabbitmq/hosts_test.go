package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/proxytest"
	"github.com/oncely/oncely/internal/redact"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/memory"
)

// TestHostURLs: a host list becomes one URL per node, in the order
// written, with the scheme, user info, vhost and query of the original.
func TestHostURLs(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want []string
	}{
		{"amqp://guest:guest@127.0.0.1:5672/", []string{"amqp://guest:guest@127.0.0.1:5672/"}},
		{"amqp://u:p@h1:5672,h2:5673,h3:5674/orders?heartbeat=5&channel_max=7", []string{
			"amqp://u:p@h1:5672/orders?heartbeat=5&channel_max=7",
			"amqp://u:p@h2:5673/orders?heartbeat=5&channel_max=7",
			"amqp://u:p@h3:5674/orders?heartbeat=5&channel_max=7",
		}},
		{"amqps://u:p%2Cw@a.example,b.example:5676/%2F", []string{"amqps://u:p%2Cw@a.example/%2F", "amqps://u:p%2Cw@b.example:5676/%2F"}},
		{"amqp://u:p,w@h1,h2", []string{"amqp://u:p,w@h1", "amqp://u:p,w@h2"}},
		{"amqp://[::1]:5672,[::1]:5673/", []string{"amqp://[::1]:5672/", "amqp://[::1]:5673/"}},
		{"amqp://h1:1,h2:2?frame_size=4096", []string{"amqp://h1:1?frame_size=4096", "amqp://h2:2?frame_size=4096"}},
	} {
		if got := hostURLs(c.raw); !slices.Equal(got, c.want) {
			t.Errorf("hostURLs(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

// TestParseHosts: every node's URL parses with the shared login, vhost,
// TLS and parameters, and its own host and port (the scheme's default port
// when none is written).
func TestParseHosts(t *testing.T) {
	uris, err := parseHosts("amqps://app:s3cret@h1:5671,h2,h3:6000/orders?heartbeat=5&server_name_indication=rabbit.example")
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, u := range uris {
		hosts = append(hosts, u.Host+":"+strconv.Itoa(u.Port))
		if u.Scheme != "amqps" || u.Username != "app" || u.Password != "s3cret" || u.Vhost != "orders" || u.ServerName != "rabbit.example" {
			t.Errorf("%+v: not the shared scheme, login, vhost and parameters", u)
		}
	}
	if want := []string{"h1:5671", "h2:5671", "h3:6000"}; !slices.Equal(hosts, want) {
		t.Errorf("hosts %q, want %q", hosts, want)
	}
	for _, raw := range []string{"amqp://u:p@h1,,h3/", "amqp://u:p@h1,h2:port/"} {
		if _, err := parseHosts(raw); err == nil {
			t.Errorf("%s: parsed", raw)
		}
		err := Config{URL: raw, Queue: "q", Consumer: "c"}.withDefaults().validate()
		if err == nil {
			t.Errorf("%s: valid", raw)
		}
	}
	if err := (Config{URL: "amqp://u:p@h1,h2/", Queue: "q", Consumer: "c", TLS: &tls.Config{}}).withDefaults().validate(); err == nil || !strings.Contains(err.Error(), "amqps://") {
		t.Errorf("TLS with amqp:// hosts: %v", err)
	}
}

// TestHostListKeepsThePasswordSecret: a cluster URL none of whose nodes
// answers fails with every node named and no password.
func TestHostListKeepsThePasswordSecret(t *testing.T) {
	dead := []*proxytest.Proxy{deadProxy(t), deadProxy(t)}
	raw := "amqp://guest:Zq9xWv8k@" + dead[0].Addr() + "," + dead[1].Addr() + "/"
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := Dial(ctx, Config{URL: raw})
	if err == nil {
		t.Fatal("dialled nodes that refuse every connection")
	}
	for _, p := range dead {
		if !strings.Contains(err.Error(), p.Addr()) {
			t.Errorf("the error does not name %s: %v", p.Addr(), err)
		}
	}
	if strings.Contains(err.Error(), "Zq9xWv8k") {
		t.Errorf("the password in %q", err)
	}
	if got := redact.URL(raw); strings.Contains(got, "Zq9xWv8k") || !strings.Contains(got, dead[1].Addr()) {
		t.Errorf("redact.URL(%s) = %s", raw, got)
	}
}

// deadProxy is a node that resets every connection (a killed node).
func deadProxy(t *testing.T) *proxytest.Proxy {
	p := proxyTo(t, testURL(t))
	p.Refuse()
	return p
}

func proxyTo(t *testing.T, raw string) *proxytest.Proxy {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "5672"
	}
	p, err := proxytest.New(u.Hostname() + ":" + port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestReconnectMovesToTheNextHost: three proxies in front of the broker
// stand for a cluster's nodes. The Source connects to the first; when that
// node dies (its connections reset, new ones refused) it reconnects to the
// second without trying the dead one first, and when the second's
// connection drops it moves on to the third. Messages published meanwhile
// are all processed. Catches: a reconnect that dials the node it lost
// again (first, or only).
func TestReconnectMovesToTheNextHost(t *testing.T) {
	const n = 200
	base := testURL(t)
	nodes := []*proxytest.Proxy{proxyTo(t, base), proxyTo(t, base), proxyTo(t, base)}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = nodes[0].Addr() + "," + nodes[1].Addr() + "," + nodes[2].Addr()
	queue := uniqueName("hosts")
	cleanupTopology(t, queue, "ledger", testTiers)

	src := newSource(t, Config{URL: u.String(), Queue: queue, Consumer: "ledger", Prefetch: 16})
	accepted := func() []int64 { return []int64{nodes[0].Accepted(), nodes[1].Accepted(), nodes[2].Accepted()} }
	if got := accepted(); !slices.Equal(got, []int64{1, 0, 0}) {
		t.Fatalf("connections per node %v, want the first node only", got)
	}
	claims, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	effects := newSet()
	_, stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		effects.add(m.ID)
		return nil
	}), consumer.Config{Name: "ledger", Concurrency: 4, Ordering: consumer.Unordered}, middleware.Idempotency(claims))
	publish(t, queue, msgs("a", n)...)
	adaptertest.WaitUntil(t, 30*time.Second, "the first messages' effects", func() bool { return effects.len() == n })

	nodes[0].Refuse()
	nodes[0].Cut()
	adaptertest.WaitUntil(t, 30*time.Second, "a connection to the second node", func() bool { return src.reconnects.Load() >= 1 && src.Connected() })
	if got := accepted(); !slices.Equal(got, []int64{1, 1, 0}) || nodes[0].Refused() != 0 {
		t.Errorf("after the first node died: connections per node %v, %d refused by the dead node; want [1 1 0] and none", got, nodes[0].Refused())
	}
	publish(t, queue, msgs("b", n)...)
	adaptertest.WaitUntil(t, 30*time.Second, "effects through the second node", func() bool { return effects.len() == 2*n })

	nodes[1].Cut()
	adaptertest.WaitUntil(t, 30*time.Second, "a connection to the third node", func() bool { return src.reconnects.Load() >= 2 && src.Connected() })
	if got := accepted(); !slices.Equal(got, []int64{1, 1, 1}) {
		t.Errorf("after the second node's connection dropped: connections per node %v, want [1 1 1]", got)
	}
	publish(t, queue, msgs("c", n)...)
	adaptertest.WaitUntil(t, 30*time.Second, "effects through the third node", func() bool { return effects.len() == 3*n })
	stop()
	t.Logf("connections per node %v, %d refused by the dead node, %d reconnects, %d effects", accepted(), nodes[0].Refused(), src.reconnects.Load(), effects.len())
}

// TestDialSkipsADeadNode: Dial (the tools' connection) takes the first node
// that answers; a refused login is not tried on the other nodes.
func TestDialSkipsADeadNode(t *testing.T) {
	live := proxyTo(t, testURL(t))
	dead := deadProxy(t)
	u, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Host = dead.Addr() + "," + live.Addr()
	conn, err := Dial(t.Context(), Config{URL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	if dead.Refused() != 1 || live.Accepted() != 1 {
		t.Errorf("dead node refused %d, live node accepted %d; want 1 and 1", dead.Refused(), live.Accepted())
	}

	u.User = url.UserPassword("guest", "not-the-password")
	u.Host = live.Addr() + "," + dead.Addr()
	_, err = Dial(t.Context(), Config{URL: u.String(), HandshakeTimeout: 5 * time.Second})
	if !errors.Is(err, ErrLoginRefused) {
		t.Fatalf("wrong password: %v, want ErrLoginRefused", err)
	}
	if dead.Refused() != 1 {
		t.Errorf("the login refused by one node was tried on the next (%d refusals)", dead.Refused())
	}
}
