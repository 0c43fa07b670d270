package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestProbe: Probe succeeds while connected, fails with ErrNotConnected
// while the connection is cut and refused, succeeds again once the
// supervisor reconnected, and fails after Close.
func TestProbe(t *testing.T) {
	addr, proxy := proxied(t)
	queue := uniqueName("probe")
	src := newSource(t, Config{URL: addr, Queue: queue, Consumer: "ledger"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := src.Probe(ctx); err != nil {
		t.Fatalf("Probe while connected: %v", err)
	}
	proxy.Refuse()
	proxy.Cut()
	adaptertest.WaitUntil(t, 10*time.Second, "the session to end", func() bool { return !src.Connected() })
	if err := src.Probe(ctx); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Probe while cut: %v, want ErrNotConnected", err)
	}
	proxy.Accept()
	adaptertest.WaitUntil(t, 20*time.Second, "a probe to succeed after the reconnect", func() bool { return src.Probe(ctx) == nil })
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := src.Probe(ctx); err == nil {
		t.Error("Probe after Close succeeded")
	}
}

// TestCapabilitiesPrefetch: the prefetch is reported, the runtime refuses a
// MaxInFlight set below it and accepts an unset MaxInFlight (which then
// covers it) with the default prefetch and with a wider one, and refuses a Config.Name other than the Source's
// consumer name; consumer names split the queue (FanOut false), and
// Attempt does not come from the broker's count (DeliveryCount false).
func TestCapabilitiesPrefetch(t *testing.T) {
	queue := uniqueName("caps")
	def := newSource(t, Config{Queue: queue, Consumer: "ledger"})
	caps := def.Capabilities()
	if caps.Prefetch != PrefetchDefault || caps.FanOut || caps.DeliveryCount || !caps.NativeDelay {
		t.Errorf("capabilities %+v", caps)
	}
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	if _, err := consumer.New(def, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "ledger", Logger: testLogger()}); err != nil {
		t.Errorf("default Config with the default prefetch: %v", err)
	}
	if _, err := consumer.New(def, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "billing", Logger: testLogger()}); err == nil {
		t.Error("a runtime named billing accepted a Source opened for ledger")
	}
	wide := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: 300})
	_, err := consumer.New(wide, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "ledger", MaxInFlight: 128, Logger: testLogger()})
	if err == nil || !strings.Contains(err.Error(), "prefetch (300)") {
		t.Errorf("MaxInFlight 128 with prefetch 300: %v, want refused", err)
	}
	if _, err := consumer.New(wide, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "ledger", Logger: testLogger()}); err != nil {
		t.Errorf("MaxInFlight unset with prefetch 300 (it defaults to the prefetch): %v", err)
	}
}
