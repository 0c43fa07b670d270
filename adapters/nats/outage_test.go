package nats

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/proxytest"
)

// TestServerOutage: the Source reaches the server through a TCP proxy that
// cuts every connection and refuses new ones mid-drain, as a server that
// crashed would. Once the proxy accepts again the consumer goes on by
// itself and every message, those published during the outage included,
// is handled; afterwards nothing is left unacknowledged or undelivered.
// It catches a Source that gives up its connection or its pull
// subscriptions after an outage (with reconnects off, 207 of 800 were
// handled) and one that loses what was in flight when the connection broke.
func TestServerOutage(t *testing.T) {
	c := connect(t)
	proxy, err := proxytest.New(strings.TrimPrefix(c.url, "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	source := adaptertest.SourceName("outage")
	cfg := Config{URL: "nats://" + proxy.Addr(), Source: source, Consumer: "outage", AckWait: 2 * time.Second, Prefetch: 32}
	c.cleanup(t, source, cfg.Consumer)
	const before, during = 600, 200
	batch := func(prefix string, n int) []*consumer.Message {
		ms := make([]*consumer.Message, n)
		for i := range ms {
			ms[i] = &consumer.Message{ID: fmt.Sprintf("%s-%04d", prefix, i), Key: fmt.Sprintf("k%d", i%8), Body: []byte("b")}
		}
		return ms
	}
	c.publish(t, source, batch("before", before)...)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	third := make(chan struct{})
	all := make(chan struct{})
	handler := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID]++
		switch len(seen) {
		case before / 3:
			if seen[m.ID] == 1 {
				close(third)
			}
		case before + during:
			if seen[m.ID] == 1 {
				close(all)
			}
		}
		return nil
	})
	cons, err := consumer.New(src, handler, consumer.Config{Name: cfg.Consumer, Concurrency: 4, MaxInFlight: 32,
		Logger: slog.New(slog.DiscardHandler), Duplicates: consumer.AllowDuplicates("test: counts deliveries; redeliveries after the outage are expected")})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- cons.Run(context.Background()) }()

	select {
	case <-third:
	case <-time.After(adaptertest.WaitTimeout):
		t.Fatal("no third of the messages handled before the outage")
	}
	proxy.Refuse()
	proxy.Cut()
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the Source to notice the outage", func() bool { return src.nc.Status() != nats.CONNECTED })
	c.publish(t, source, batch("during", during)...) // straight to the server
	proxy.Accept()

	select {
	case <-all:
	case <-time.After(60 * time.Second):
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		t.Fatalf("%d of %d messages handled 60s after the outage ended", n, before+during)
	}
	// Acks lost in the cut come back after AckWait, are handled again and
	// acked: then the server has nothing left for the consumer.
	var undelivered uint64
	var unacked int
	adaptertest.WaitUntil(t, 30*time.Second, "every message acknowledged", func() bool {
		info, err := c.js.Consumer(ctx, StreamName(source), cfg.Consumer)
		if err != nil {
			t.Fatal(err)
		}
		ci := info.CachedInfo()
		undelivered, unacked = ci.NumPending, ci.NumAckPending
		return undelivered == 0 && unacked == 0
	})
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	if err := cons.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, prefix := range []string{"before", "during"} {
		for i := range map[string]int{"before": before, "during": during}[prefix] {
			if id := fmt.Sprintf("%s-%04d", prefix, i); seen[id] == 0 {
				t.Errorf("%s never handled", id)
			}
		}
	}
}
