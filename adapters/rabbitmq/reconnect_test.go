package rabbitmq

import (
	"context"
	"errors"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/proxytest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/memory"
)

// proxied returns the test broker URL rewritten to go through a TCP proxy
// the test can cut, and the proxy.
func proxied(t testing.TB) (string, *proxytest.Proxy) {
	t.Helper()
	u, err := url.Parse(testURL(t))
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
	u.Host = p.Addr()
	return u.String(), p
}

// TestConnectionDropMidStream cuts the TCP connection three times while
// 3,000 messages flow through a consumer with claim-first idempotency: the
// Source reconnects by itself each time, every message's effect is applied
// exactly once, and nothing is left in the queue.
func TestConnectionDropMidStream(t *testing.T) {
	const n, cuts = 3000, 3
	addr, proxy := proxied(t)
	queue := uniqueName("drop")
	cleanupTopology(t, queue, "ledger", testTiers)
	publish(t, queue, msgs("m", n)...)

	src := newSource(t, Config{URL: addr, Queue: queue, Consumer: "ledger", Prefetch: 64})
	claims, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	effects := newSet()
	obs := newCounter()
	_, stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		time.Sleep(100 * time.Microsecond)
		effects.add(m.ID)
		return nil
	}), consumer.Config{Name: "ledger", Concurrency: 8, Ordering: consumer.Unordered, Observer: obs}, middleware.Idempotency(claims))

	for i := 1; i <= cuts; i++ {
		adaptertest.WaitUntil(t, 60*time.Second, "progress before the next cut", func() bool { return effects.len() >= i*n/(cuts+1) })
		before := src.reconnects.Load()
		proxy.Cut()
		adaptertest.WaitUntil(t, 30*time.Second, "the Source to reconnect", func() bool { return src.reconnects.Load() > before && src.Connected() })
	}
	adaptertest.WaitUntil(t, 60*time.Second, "every message's effect", func() bool { return effects.len() == n })
	adaptertest.WaitUntil(t, 30*time.Second, "the queue to drain", func() bool { return depth(t, queue) == 0 })
	stop()

	dupEffects := 0
	for id, c := range effects.snapshot() {
		if c != 1 {
			dupEffects++
			t.Errorf("%s applied %d times", id, c)
		}
	}
	t.Logf("%d messages, %d cuts, %d reconnects; effects: %d distinct, %d duplicated; redeliveries absorbed by claims: %d; abandoned on lost leases: %d",
		n, cuts, src.reconnects.Load(), effects.len(), dupEffects, obs.get(consumer.OutcomeDuplicate), obs.get(consumer.OutcomeAbandoned))
	if src.reconnects.Load() < cuts {
		t.Errorf("%d reconnects, want >= %d", src.reconnects.Load(), cuts)
	}
	if d := depth(t, DeadLetterQueue(queue, "ledger")); d != 0 {
		t.Errorf("%d dead letters, want 0", d)
	}
}

// TestBrokerClosesConnection has the broker close the Source's connection
// (rabbitmqctl close_connection, as an operator or a node shutting down
// would): the Source reconnects and every message is processed.
func TestBrokerClosesConnection(t *testing.T) {
	const n = 500
	queue := uniqueName("brokerclose")
	cleanupTopology(t, queue, "ledger", testTiers)
	publish(t, queue, msgs("m", n)...)
	name := "oncely test " + queue
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: 20, ConnectionName: name})
	claims, _ := memory.New(memory.Config{})
	effects := newSet()
	gate := make(chan struct{})
	var started atomic.Int64
	_, stop := runConsumer(t, src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		if started.Add(1) > 50 { // hold the stream until the broker closed the connection
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		effects.add(m.ID)
		return nil
	}), consumer.Config{Name: "ledger", Concurrency: 4, Ordering: consumer.Unordered}, middleware.Idempotency(claims))
	adaptertest.WaitUntil(t, 30*time.Second, "progress", func() bool { return effects.len() >= 50 })
	closeConnectionByName(t, name)
	adaptertest.WaitUntil(t, 30*time.Second, "the Source to reconnect", func() bool { return src.reconnects.Load() >= 1 && src.Connected() })
	close(gate)
	adaptertest.WaitUntil(t, 60*time.Second, "every message's effect", func() bool { return effects.len() == n })
	stop()
	for id, c := range effects.snapshot() {
		if c != 1 {
			t.Errorf("%s applied %d times", id, c)
		}
	}
	if d := depth(t, queue); d != 0 {
		t.Errorf("queue holds %d, want 0", d)
	}
}

// receivedBehindProxy publishes three messages to a fresh queue and returns
// a Source connected through a proxy the test can cut, the queue, and the
// three deliveries the Source received (unsettled).
func receivedBehindProxy(t *testing.T, prefix string) (*Source, *proxytest.Proxy, string, []consumer.Delivery) {
	t.Helper()
	addr, proxy := proxied(t)
	queue := uniqueName(prefix)
	cleanupTopology(t, queue, "ledger", testTiers)
	publish(t, queue, msgs("m", 3)...)
	src := newSource(t, Config{URL: addr, Queue: queue, Consumer: "ledger"})
	return src, proxy, queue, adaptertest.ReceiveN(t, src, 3, 20*time.Second)
}

// TestLateAckAfterReconnect holds three deliveries, loses the connection,
// receives the three again on the new channel (where delivery tags restart
// at 1, so the old tags name the new deliveries), then settles the old
// deliveries: each settlement fails with ErrStaleDelivery, publishes
// nothing, and leaves the new deliveries unacked.
func TestLateAckAfterReconnect(t *testing.T) {
	src, proxy, queue, old := receivedBehindProxy(t, "lateack")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proxy.Cut()
	for _, d := range old {
		select {
		case <-d.(consumer.Leased).Lost():
		case <-ctx.Done():
			t.Fatal("Lost not closed after the connection was cut")
		}
	}
	fresh := adaptertest.ReceiveN(t, src, 3, 20*time.Second)
	oldTags := make(map[string]bool)
	for _, d := range old {
		oldTags[d.Message().Coordinates["delivery-tag"]] = true
	}
	reused := 0
	for _, d := range fresh {
		if oldTags[d.Message().Coordinates["delivery-tag"]] {
			reused++
		}
	}
	if reused == 0 {
		t.Fatalf("no delivery tag reused on the new channel; the test would prove nothing")
	}
	for i, d := range fresh {
		if g, og := d.Message().Coordinates["generation"], old[i].Message().Coordinates["generation"]; g == og {
			t.Fatalf("redelivery on generation %s, same as before the cut", g)
		}
		if m := d.Message(); m.Attempt != 1 || m.Coordinates["x-delivery-count"] != "1" {
			t.Errorf("%s redelivered with Attempt %d and x-delivery-count %q, want 1 (no handler failed) and 1 (the lost channel)",
				m.ID, m.Attempt, m.Coordinates["x-delivery-count"])
		}
	}
	if err := old[0].Ack(ctx); !errors.Is(err, ErrStaleDelivery) {
		t.Errorf("late Ack: %v, want ErrStaleDelivery", err)
	}
	if err := old[1].Retry(ctx, 100*time.Millisecond, old[1].Message().Headers); !errors.Is(err, ErrStaleDelivery) {
		t.Errorf("late Retry: %v, want ErrStaleDelivery", err)
	}
	if err := old[2].DeadLetter(ctx, old[2].Message().Headers); !errors.Is(err, ErrStaleDelivery) {
		t.Errorf("late DeadLetter: %v, want ErrStaleDelivery", err)
	}
	for _, d := range fresh {
		select {
		case <-d.(consumer.Leased).Lost():
			t.Fatalf("a late settlement killed the new channel")
		default:
		}
	}
	// Close without settling the new deliveries: all three must be back.
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The broker requeues a closed channel's deliveries asynchronously.
	adaptertest.WaitUntil(t, 10*time.Second, "the three deliveries back in the queue (nothing acked)", func() bool { return depth(t, queue) == 3 })
	if got := depth(t, DeadLetterQueue(queue, "ledger")); got != 0 {
		t.Errorf("late DeadLetter published %d copies", got)
	}
	for _, q := range src.topo.retryNames() {
		if got := depth(t, q); got != 0 {
			t.Errorf("late Retry published %d copies to %s", got, q)
		}
	}
}
