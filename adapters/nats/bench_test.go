package nats

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/benchround"
)

// benchPrefetch is the Source's default prefetch: the pull depth of each of
// its two pull subscriptions (source and retry stream).
const benchPrefetch = PrefetchDefault

// BenchmarkConsume fills one stream with ONCELY_BENCH_MESSAGES messages
// (default 100,000) and drains it, once per round (ONCELY_BENCH_ROUNDS,
// default 1) with each side, each under a durable consumer of its own (so
// both read the same messages): a hand-written nats.go jetstream loop (a pull
// subscription buffering at most benchPrefetch messages, as the Source's
// pull loop on the source stream; explicit Ack after a no-op "processing") and oncely's Consumer on this Source (no-op handler, default
// Config, 64 ordering keys). It reports the rates and oncely's as a multiple
// of raw (x_baseline, the median of the rounds' ratios; the target is >=
// 0.9). Run it with -bench Consume -benchtime 1x.
func BenchmarkConsume(b *testing.B) {
	n, rounds := benchround.EnvInt("ONCELY_BENCH_MESSAGES", 100_000), benchround.EnvInt("ONCELY_BENCH_ROUNDS", 1)
	c := connect(b)
	source := adaptertest.SourceName("bench")
	ms := make([]*consumer.Message, n)
	for i := range ms {
		ms[i] = &consumer.Message{ID: fmt.Sprintf("m-%07d", i), Key: fmt.Sprintf("k%d", i%64), Body: []byte("payload-0123456789-0123456789-0123456789")}
	}
	start := time.Now()
	for chunk := range slices.Chunk(ms, 1000) {
		c.publish(b, source, chunk...)
	}
	b.Logf("filled %s with %d messages in %s", source, n, time.Since(start).Round(time.Millisecond))
	res := benchround.Rounds{Messages: n}
	b.ResetTimer()
	for i := range b.N {
		for r := range rounds {
			name := fmt.Sprintf("b%d-%d", i, r)
			c.cleanup(b, source, "oncely-"+name)
			raw := drainRaw(b, c, source, "raw-"+name, n)
			onc := drainOncely(b, c, source, "oncely-"+name, n)
			res.Add(b, raw, onc)
		}
	}
	res.Report(b, "raw nats.go jetstream")
}

// drainRaw reads n messages of source with a durable consumer of the
// Source's settings and a pull subscription buffering at most benchPrefetch
// (the Source's pull depth on the source stream), acking each after a no-op
// handler.
func drainRaw(b *testing.B, c *conn, source, name string, n int) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cons, err := c.js.CreateOrUpdateConsumer(ctx, StreamName(source), jetstream.ConsumerConfig{
		Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: AckWaitDefault,
		MaxDeliver: MaxDeliverDefault, MaxAckPending: MaxAckPendingDefault,
	})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	it, err := cons.Messages(jetstream.PullMaxMessages(benchPrefetch))
	if err != nil {
		b.Fatal(err)
	}
	for got := 0; got < n; got++ {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			b.Fatalf("raw: %d of %d: %v", got, n, err)
		}
		if err := m.Ack(); err != nil {
			b.Fatal(err)
		}
	}
	it.Stop()
	if err := c.nc.Flush(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func drainOncely(b *testing.B, c *conn, source, name string, n int) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	start := time.Now()
	src, err := New(ctx, Config{URL: c.url, Source: source, Consumer: name, Prefetch: benchPrefetch, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	all := make(chan struct{})
	cons, err := consumer.New(src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		if done.Add(1) == int64(n) {
			close(all)
		}
		return nil
	}), consumer.Config{Name: name, Logger: quiet, Duplicates: consumer.AllowDuplicates("bench: counts deliveries, not effects")})
	if err != nil {
		b.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- cons.Run(context.Background()) }()
	select {
	case <-all:
	case <-ctx.Done():
		b.Fatalf("oncely: %d of %d: %v", done.Load(), n, ctx.Err())
	}
	took := time.Since(start)
	if err := cons.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
	return took
}
