package consumer_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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

// cost is what one phase of the benchmark took.
type cost struct {
	wall, cpu time.Duration // cpu: user + system time of the whole process
	allocs    uint64
}

// measure runs f and returns its cost.
func measure(b *testing.B, f func()) cost {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.StartTimer()
	start := time.Now()
	var ru0, ru1 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru0); err != nil {
		b.Fatal(err)
	}
	f()
	el := time.Since(start)
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru1); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	cpu := time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano() + ru1.Stime.Nano() - ru0.Stime.Nano())
	return cost{wall: el, cpu: cpu, allocs: after.Mallocs - before.Mallocs}
}

// baseline reads n messages straight from a memory broker: Receive + Ack in
// one loop, no runtime.
func baseline(b *testing.B, n, batch int) cost {
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
func withRuntime(b *testing.B, n int, cfg consumer.Config) cost {
	broker := memory.NewBroker()
	// The handler does nothing but notice the last message: the source is
	// FIFO, so once it is handled every message has been received, and
	// Stop's drain settles the rest. (A shared counter would cost each
	// message an atomic add that the baseline loop does not pay.)
	msgs := benchMessages(n)
	if err := broker.Publish(context.Background(), "bench", msgs...); err != nil {
		b.Fatal(err)
	}
	last := msgs[n-1].ID
	all := make(chan struct{})
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		if m.ID == last {
			close(all)
		}
		return nil
	})
	cfg.Name, cfg.Logger = "bench", discard
	cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
	c, err := consumer.New(broker.NewSource("bench", "bench"), h, cfg)
	if err != nil {
		b.Fatal(err)
	}
	c2 := measure(b, func() {
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
	if dl := broker.DeadLetters("bench", "bench"); len(dl) != 0 {
		b.Fatalf("%d messages dead-lettered", len(dl))
	}
	return c2
}

// BenchmarkRuntime compares the Consumer runtime with a no-op handler
// (Recover only, the default retry policy, logging discarded, no observer)
// against a loop reading the same memory broker directly (Receive + Ack), in
// the same run. Each round runs the baseline and then the runtime over 20,000
// messages, b.N/20,000 rounds (at least 5); the medians of the rounds are
// reported, because the machines this runs on are shared:
//
//   - msgs/s, baseline_msgs/s: wall-clock throughput;
//   - x_baseline: runtime throughput / baseline throughput (a
//     microbenchmark, not a target: see docs/benchmarks.md);
//   - x_baseline_cpu: the same ratio in messages per CPU-second of the
//     process, which other processes on the machine disturb less;
//   - allocs/msg, baseline_allocs/msg: heap allocations per message.
func BenchmarkRuntime(b *testing.B) {
	const perRound = 20_000 // keeps the broker's live heap, and so GC cost, small
	for _, workers := range []int{1, 4, consumer.ConcurrencyDefault} {
		b.Run(fmt.Sprintf("concurrency=%d", workers), func(b *testing.B) {
			b.StopTimer()
			n, rounds := perRound, max(5, b.N/perRound)
			cfg := consumer.Config{Concurrency: workers}
			batch := 8 * workers // the runtime's default ReceiveBatch
			var rates, bases, ratios, cpuRatios, allocs, baseAllocs []float64
			for range rounds {
				bc := baseline(b, n, batch)
				rc := withRuntime(b, n, cfg)
				base, rate := float64(n)/bc.wall.Seconds(), float64(n)/rc.wall.Seconds()
				rates, bases, ratios = append(rates, rate), append(bases, base), append(ratios, rate/base)
				cpuRatios = append(cpuRatios, bc.cpu.Seconds()/rc.cpu.Seconds())
				allocs, baseAllocs = append(allocs, float64(rc.allocs)/float64(n)), append(baseAllocs, float64(bc.allocs)/float64(n))
			}
			b.ReportMetric(median(rates), "msgs/s")
			b.ReportMetric(median(bases), "baseline_msgs/s")
			b.ReportMetric(median(ratios), "x_baseline")
			b.ReportMetric(median(cpuRatios), "x_baseline_cpu")
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
