package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{URL: "amqp://guest:guest@127.0.0.1:5672/", Queue: "payments", Consumer: "ledger"}.withDefaults()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if window := 8 * consumer.ConcurrencyDefault; c.Prefetch != PrefetchDefault || c.Prefetch < 100 || c.Prefetch > window {
		t.Errorf("Prefetch %d, want %d (at least 100, at most the runtime's default MaxInFlight %d)", c.Prefetch, PrefetchDefault, window)
	}
	if c.MaxMessageSize != 128<<20 || c.DeliveryLimit < 100 {
		t.Errorf("MaxMessageSize %d, DeliveryLimit %d", c.MaxMessageSize, c.DeliveryLimit)
	}
	if c.QueueType != Quorum || c.DeliveryLimit != DeliveryLimitDefault || c.KeyHeader != KeyHeaderDefault {
		t.Errorf("defaults: %+v", c)
	}
	if len(c.Tiers) != len(retry.DefaultTiers) || c.ConnectionName != "oncely ledger payments" {
		t.Errorf("defaults: tiers %v, connection name %q", c.Tiers, c.ConnectionName)
	}
	if c := (Config{URL: "amqp://h/", Queue: "q", Consumer: "c", QueueType: Classic}).withDefaults(); c.DeliveryLimit != 0 || c.validate() != nil {
		t.Errorf("classic: DeliveryLimit %d, %v", c.DeliveryLimit, c.validate())
	}
}

func TestConfigRefuses(t *testing.T) {
	ok := Config{URL: "amqp://guest:guest@127.0.0.1:5672/", Queue: "payments", Consumer: "ledger"}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"unbounded prefetch", func(c *Config) { c.Prefetch = -1 }, "AMQP's prefetch 0 means unbounded"},
		{"over the quorum cap", func(c *Config) { c.Prefetch = 2001 }, "quorum queues cap prefetch at 2000"},
		{"over AMQP's limit", func(c *Config) { c.Prefetch = 70000; c.QueueType = Classic }, "over AMQP's limit"},
		{"no URL", func(c *Config) { c.URL = "" }, "URL is required"},
		{"bad URL", func(c *Config) { c.URL = "http://x" }, "URL does not parse"},
		{"no queue", func(c *Config) { c.Queue = "" }, "Queue is required"},
		{"reserved queue", func(c *Config) { c.Queue = "amq.q" }, "reserved"},
		{"no consumer", func(c *Config) { c.Consumer = "" }, "Consumer is required"},
		{"queue type", func(c *Config) { c.QueueType = "stream" }, `QueueType "stream" is unknown`},
		{"negative limit", func(c *Config) { c.DeliveryLimit = -1 }, "DeliveryLimit -1 is invalid"},
		{"negative max size", func(c *Config) { c.MaxMessageSize = -1 }, "MaxMessageSize -1 is invalid"},
		{"classic limit", func(c *Config) { c.QueueType = Classic; c.DeliveryLimit = 5 }, "classic queues have no delivery limit"},
		{"sub-ms tier", func(c *Config) { c.Tiers = retry.Tiers{1500 * time.Microsecond} }, "not a whole number of milliseconds"},
		{"unsorted tiers", func(c *Config) { c.Tiers = retry.Tiers{time.Second, time.Millisecond} }, "strictly increasing"},
		{"long names", func(c *Config) { c.Queue = strings.Repeat("q", 250) }, "over AMQP's 255"},
		{"negative timeout", func(c *Config) { c.RPCTimeout = -time.Second }, "RPCTimeout must be > 0"},
		{"negative handshake", func(c *Config) { c.HandshakeTimeout = -time.Second }, "HandshakeTimeout must be > 0"},
		// Catches TLS settings silently unused on a plain amqp:// URL.
		{"TLS without amqps", func(c *Config) { c.TLS = &tls.Config{} }, "write amqps:// for TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.withDefaults().validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Every problem is reported at once.
	err := Config{Prefetch: -5}.withDefaults().validate()
	for _, want := range []string{"URL is required", "Queue is required", "Consumer is required", "Prefetch -5"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want it to contain %q", err, want)
		}
	}
	// New refuses before connecting.
	if _, err := New(context.Background(), Config{URL: "amqp://127.0.0.1:1/", Queue: "q", Consumer: "c", Prefetch: -1}); err == nil || !strings.Contains(err.Error(), "invalid config") {
		t.Errorf("New: %v", err)
	}
}

func TestTopologyNames(t *testing.T) {
	topo := topology{queue: "payments", consumer: "ledger", qtype: Quorum, limit: 20, tiers: retry.Tiers{500 * time.Millisecond, 10 * time.Second, time.Hour}}
	want := []string{"payments.ledger.retry.500ms", "payments.ledger.retry.10s", "payments.ledger.retry.1h"}
	if got := topo.retryNames(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("retry queues %v, want %v", got, want)
	}
	if topo.dlq() != "payments.ledger.dlq" {
		t.Errorf("dlq %q", topo.dlq())
	}
	for d, q := range map[time.Duration]string{time.Millisecond: want[0], time.Second: want[1], 10 * time.Second: want[1], 2 * time.Hour: want[2]} {
		if got := topo.retryQueueFor(d); got != q {
			t.Errorf("retry queue for %s: %s, want %s", d, got, q)
		}
	}
	src := topo.source().args
	if src["x-dead-letter-exchange"] != "payments.dlx" || src["x-delivery-limit"] != int64(20) || src["x-queue-type"] != "quorum" {
		t.Errorf("source args %v", src)
	}
	r := topo.retries()[0].args
	if r["x-message-ttl"] != int64(500) || r["x-dead-letter-routing-key"] != "payments" || r["x-dead-letter-exchange"] != "" || r["x-dead-letter-strategy"] != "at-least-once" {
		t.Errorf("retry args %v", r)
	}
	e := &TopologyError{Queue: "payments", Want: src, Broker: "inequivalent arg 'x-queue-type'"}
	if !errors.Is(e, ErrTopologyMismatch) || !strings.Contains(e.Error(), `x-queue-type="quorum"`) {
		t.Errorf("TopologyError: %v", e)
	}
}

// Invalid settings are reported together, before any connection is made.
func ExampleNew_invalidConfig() {
	_, err := New(context.Background(), Config{
		URL:      "amqp://guest:guest@127.0.0.1:5672/",
		Queue:    "payments",
		Consumer: "ledger",
		Prefetch: -1,
		Tiers:    retry.Tiers{1500 * time.Microsecond},
	})
	fmt.Println(err)
	// Output:
	// rabbitmq: invalid config: config.Prefetch -1 is invalid: AMQP's prefetch 0 means unbounded, which lets the broker push an unlimited backlog into memory (quorum queues silently cap it at 2,000) and hands all of it back on a crash; choose 1..2000, or 0 for the default 128
	// config.Tiers: 1.5ms is not a whole number of milliseconds (x-message-ttl is in ms; rounding down would retry early)
}
