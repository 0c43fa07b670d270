package consumer_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// benchMessages returns n messages over 1,000 ordering keys.
func benchMessages(n int) []*consumer.Message {
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("m-%d", i), Key: fmt.Sprintf("k%d", i%1000), Body: []byte("{}")}
	}
	return msgs
}

// measure runs f and returns its duration and heap allocations.
func measure(b *testing.B, f func()) (time.Duration, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.StartTimer()
	start := time.Now()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(0, &ru0)
	f()
	el := time.Since(start)
	syscall.Getrusage(0, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano() + ru1.Stime.Nano() - ru0.Stime.Nano())
	if os.Getenv("BENCH_CPU") != "" {
		fmt.Println("wall", el, "cpu", cpu)
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	return el, after.Mallocs - before.Mallocs
}

// baseline reads n messages straight from a memory broker: Receive + Ack in
// one loop, no runtime.
func baseline(b *testing.B, n, batch int) (time.Duration, uint64) {
	broker := memory.NewBroker()
	if err := broker.Publish(context.Background(), "bench", benchMessages(n)...); err != nil {
		b.Fatal(err)
	}
	src := broker.NewSource("bench", "bench")
	ctx := context.Background()
	return measure(b, func() {
		for got := 0; got < n; {
			ds, err := src.Receive(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range ds {
				if err := d.Ack(ctx); err != nil {
					b.Fatal(err)
				}
			}
			got += len(ds)
		}
	})
}

// withRuntime consumes n messages from a memory broker with a Consumer: a
// no-op handler, Recover only, the default retry policy, logging discarded.
// The time runs from Run to Stop's return (every delivery acked).
func withRuntime(b *testing.B, n int, cfg consumer.Config) (time.Duration, uint64) {
	broker := memory.NewBroker()
	if err := broker.Publish(context.Background(), "bench", benchMessages(n)...); err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	all := make(chan struct{})
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		if handled.Add(1) == int64(n) {
			close(all)
		}
		return nil
	})
	cfg.Name, cfg.Logger = "bench", discard
	c, err := consumer.New(broker.NewSource("bench", "bench"), h, cfg)
	if err != nil {
		b.Fatal(err)
	}
	el, allocs := measure(b, func() {
		done := make(chan error, 1)
		go func() { done <- c.Run(context.Background()) }()
		<-all
		if err := c.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	})
	if d := broker.Depth("bench"); d != 0 {
		b.Fatalf("%d messages left unsettled", d)
	}
	return el, allocs
}

// BenchmarkRuntime compares the Consumer runtime with a no-op handler against
// a loop reading the same memory broker directly, in the same run. Each of
// five rounds runs the baseline and then the runtime over b.N/5 messages (at
// least 2,000); on a shared machine the rounds' medians are reported:
// msgs/s of the runtime and of the baseline, x_baseline (the median of the
// rounds' throughput ratios; the target is >= 0.8) and allocs/msg of both.
func BenchmarkRuntime(b *testing.B) {
	const rounds = 5
	for _, workers := range []int{1, 4, consumer.ConcurrencyDefault} {
		b.Run(fmt.Sprintf("concurrency=%d", workers), func(b *testing.B) {
			b.StopTimer()
			n := max(b.N/rounds, 2000)
			cfg := consumer.Config{Concurrency: workers}
			batch := 8 * workers // the runtime's default ReceiveBatch
			var rates, bases, ratios, allocs, baseAllocs []float64
			for range rounds {
				bt, ba := baseline(b, n, batch)
				rt, ra := withRuntime(b, n, cfg)
				base, rate := float64(n)/bt.Seconds(), float64(n)/rt.Seconds()
				rates, bases, ratios = append(rates, rate), append(bases, base), append(ratios, rate/base)
				allocs, baseAllocs = append(allocs, float64(ra)/float64(n)), append(baseAllocs, float64(ba)/float64(n))
			}
			b.ReportMetric(median(rates), "msgs/s")
			b.ReportMetric(median(bases), "baseline_msgs/s")
			b.ReportMetric(median(ratios), "x_baseline")
			b.ReportMetric(median(allocs), "allocs/msg")
			b.ReportMetric(median(baseAllocs), "baseline_allocs/msg")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
