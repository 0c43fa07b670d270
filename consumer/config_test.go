package consumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// limitedSource reports a partitioned broker with a delay limit.
type limitedSource struct{ consumer.Source }

func (limitedSource) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "limited", Partitioned: true, MaxDelay: time.Minute}
}

func TestConfigValidation(t *testing.T) {
	// Only the interface: the cases name the consumer freely.
	src := struct{ consumer.Source }{memory.NewBroker().NewSource("src", "test")}
	noop := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	for _, tc := range []struct {
		name string
		src  consumer.Source
		cfg  consumer.Config
		want []string // substrings of the error; none means valid
	}{
		{"defaults", src, consumer.Config{Name: "ok"}, nil},
		{"missing name", src, consumer.Config{}, []string{"Name is required"}},
		{"name differs from the source's", named{src, "ledger"}, consumer.Config{Name: "billing"}, []string{`config.Name is "billing" but the Source was opened for consumer "ledger"`}},
		{"name with a NUL byte", src, consumer.Config{Name: "led\x00ger"}, []string{"config.Name keys idempotency claims", "control character"}},
		{"prefetch above in-flight", prefetching{src}, consumer.Config{Name: "x", MaxInFlight: 16}, []string{"MaxInFlight (16) is below memory's prefetch (100)"}},
		{"negative concurrency", src, consumer.Config{Name: "x", Concurrency: -1}, []string{"Concurrency must be >= 1, got -1"}},
		{"in-flight below concurrency", src, consumer.Config{Name: "x", Concurrency: 8, MaxInFlight: 4}, []string{"MaxInFlight (4) must be >= Concurrency (8)"}},
		{"batch above in-flight", src, consumer.Config{Name: "x", MaxInFlight: 16, ReceiveBatch: 32}, []string{"ReceiveBatch (32) must be <= MaxInFlight (16)"}},
		{"negative limits", src, consumer.Config{Name: "x", MaxIDLength: -1, BreakerThreshold: -2}, []string{"MaxIDLength must be >= 1, got -1", "BreakerThreshold must be >= 1, got -2"}},
		{"negative timeouts", src, consumer.Config{Name: "x", SoftStopTimeout: -time.Second, SettleTimeout: -1}, []string{"SoftStopTimeout must be > 0", "SettleTimeout must be > 0"}},
		{"unknown ordering", src, consumer.Config{Name: "x", Ordering: 7}, []string{"unknown Ordering 7"}},
		{"partition order without partitions", src, consumer.Config{Name: "x", Ordering: consumer.OrderByPartition}, []string{"OrderByPartition needs a partitioned broker; memory has no partitions"}},
		{"partition order with partitions", limitedSource{src}, consumer.Config{Name: "x", Ordering: consumer.OrderByPartition, Retry: retry.Policy{MaxInterval: time.Second}}, nil},
		{"bad retry policy", src, consumer.Config{Name: "x", Retry: retry.Policy{Multiplier: 0.5}}, []string{"Multiplier must be >= 1"}},
		{"bad outage backoff", src, consumer.Config{Name: "x", OutageBackoff: retry.Policy{Jitter: 2}}, []string{"OutageBackoff", "Jitter"}},
		{"delay above broker limit", limitedSource{src}, consumer.Config{Name: "x"}, []string{"limited supports at most 1m0s", "lower Retry.MaxInterval"}},
		{"everything at once", src, consumer.Config{Concurrency: -1, MaxIDLength: -1, Ordering: 9}, []string{"Name is required", "Concurrency must be >= 1", "MaxIDLength must be >= 1", "unknown Ordering 9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
			_, err := consumer.New(tc.src, noop, tc.cfg)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid config rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid config accepted")
			}
			if !strings.HasPrefix(err.Error(), "oncely: invalid consumer config") {
				t.Errorf("error %q lacks the prefix", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, err := consumer.New(nil, noop, consumer.Config{Name: "x", Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects")}); err == nil || !strings.Contains(err.Error(), "nil Source") {
		t.Errorf("nil source: %v", err)
	}
	if _, err := consumer.New(src, nil, consumer.Config{Name: "x", Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects")}); err == nil || !strings.Contains(err.Error(), "nil Handler") {
		t.Errorf("nil handler: %v", err)
	}
}

// prefetching is a source whose broker pushes 100 deliveries ahead.
type prefetching struct{ consumer.Source }

func (p prefetching) Capabilities() consumer.Capabilities {
	caps := p.Source.Capabilities()
	caps.Prefetch = 100
	return caps
}

// named is a source opened for a consumer name.
type named struct {
	consumer.Source
	name string
}

func (n named) ConsumerName() string { return n.name }

// deepPrefetching is a source whose broker pushes prefetch deliveries
// ahead and which records the max of each Receive.
type deepPrefetching struct {
	consumer.Source
	prefetch int
	asked    chan int
}

func (p deepPrefetching) Capabilities() consumer.Capabilities {
	caps := p.Source.Capabilities()
	caps.Prefetch = p.prefetch
	return caps
}

func (p deepPrefetching) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	select {
	case p.asked <- max:
	default:
	}
	return p.Source.Receive(ctx, max)
}

// TestMaxInFlightDefaultCoversPrefetch: an unset MaxInFlight is at least
// the Source's prefetch, so a Source that prefetches more than 8 ×
// Concurrency works with the defaults (ReceiveBatch, defaulting to
// MaxInFlight, is the max of the first Receive). It catches a default that
// ignores the prefetch (New then refuses the config).
func TestMaxInFlightDefaultCoversPrefetch(t *testing.T) {
	noop := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	for _, tc := range []struct{ prefetch, want int }{{300, 300}, {100, 8 * consumer.ConcurrencyDefault}} {
		src := deepPrefetching{memory.NewBroker().NewSource("src", "test"), tc.prefetch, make(chan int, 1)}
		c, err := consumer.New(src, noop, consumer.Config{Name: "test", Duplicates: consumer.AllowDuplicates("test: no effects")})
		if err != nil {
			t.Fatalf("prefetch %d, default MaxInFlight: %v", tc.prefetch, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- c.Run(ctx) }()
		if got := <-src.asked; got != tc.want {
			t.Errorf("prefetch %d: first Receive asked for %d, want %d", tc.prefetch, got, tc.want)
		}
		cancel()
		if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	}
}
