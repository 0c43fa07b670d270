package redis

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/benchtest"
)

// benchBatch is the baseline's XREADGROUP COUNT: the runtime's default
// MaxInFlight, the most the oncely side asks one Receive for.
const benchBatch = 128

// BenchmarkConsume drains a stream pre-filled with ONCELY_BENCH_MESSAGES
// entries (default 100,000) with the baseline and with oncely's Consumer on
// this Source (no-op handler, default Config, 64 ordering keys), each as its
// own consumer group of the same stream, alternating ONCELY_BENCH_ROUNDS
// times (default 1) so both see the same machine load.
//
// The baseline is the consumer-group loop Redis's docs teach with go-redis:
// XREADGROUP with ">" for new entries, handle them, XACK them
// (https://redis.io/docs/latest/develop/use-cases/streaming/go/, and
// "Consumer groups" of
// https://redis.io/docs/latest/develop/data-types/streams/): here
// XREADGROUP COUNT 128 BLOCK 1s, a no-op handling of each entry, then one
// XACK of the batch's IDs.
//
// It reports the total rates, the CPU per message of this process on each
// side, and oncely's rate as a multiple of the baseline's (x_baseline, the
// median of the rounds' ratios), logged last. Run it with -bench Consume
// -benchtime 1x.
func BenchmarkConsume(b *testing.B) {
	n, rounds := benchtest.EnvInt("ONCELY_BENCH_MESSAGES", 100_000), benchtest.EnvInt("ONCELY_BENCH_ROUNDS", 1)
	client := newClient(b)
	stream := adaptertest.SourceName("bench")
	b.Cleanup(func() { _ = client.Del(context.Background(), stream).Err() })
	fill(b, client, stream, n)
	res := benchtest.Rounds{Messages: n}
	for i := range b.N {
		for r := range rounds {
			round := fmt.Sprintf("%d-%d", i, r)
			c0 := benchtest.CPUTime()
			raw := drainRaw(b, client, stream, "raw-"+round, n)
			c1 := benchtest.CPUTime()
			onc := drainOncely(b, client, stream, "oncely-"+round, n)
			res.AddCPU(c1-c0, benchtest.CPUTime()-c1)
			res.Add(b, raw, onc)
		}
	}
	res.Report(b, "go-redis XREADGROUP + XACK loop")
}

// fill appends n entries to stream in pipelines of 1,000.
func fill(b *testing.B, client *goredis.Client, stream string, n int) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	start := time.Now()
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
		p := client.Pipeline()
		for j := i; j < min(i+1000, n); j++ {
			m := &consumer.Message{ID: fmt.Sprintf("m-%07d", j), Key: fmt.Sprintf("k%d", j%64), Body: []byte("payload-0123456789-0123456789-0123456789")}
			p.XAdd(ctx, &goredis.XAddArgs{Stream: stream, Values: EntryFields(m)})
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("filled %s with %d entries in %s", stream, n, time.Since(start).Round(time.Millisecond))
}

// drainRaw reads every entry of stream as a new group with the baseline
// loop.
func drainRaw(b *testing.B, client *goredis.Client, stream, group string, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	if err := client.XGroupCreate(ctx, stream, group, "0").Err(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	got := 0
	deadline := start.Add(10 * time.Minute)
	for got < n {
		if time.Now().After(deadline) {
			b.Fatalf("raw: %d of %d after 10m", got, n)
		}
		res, err := client.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: group, Consumer: "raw", Streams: []string{stream, ">"}, Count: benchBatch, Block: time.Second}).Result()
		if errors.Is(err, goredis.Nil) {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, 0, benchBatch)
		for _, st := range res {
			for _, e := range st.Messages {
				ids = append(ids, e.ID) // the no-op "processing"
			}
		}
		if err := client.XAck(ctx, stream, group, ids...).Err(); err != nil {
			b.Fatal(err)
		}
		got += len(ids)
	}
	return time.Since(start)
}

// drainOncely reads every entry of stream as a new consumer name with the
// runtime on a Source.
func drainOncely(b *testing.B, client *goredis.Client, stream, group string, n int) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := New(ctx, Config{Client: client, Stream: stream, Consumer: group, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = client.Del(context.Background(), RetryStream(stream, group), DelayedKey(stream, group), DeadLetterStream(stream, group)).Err()
	})
	var done atomic.Int64
	all := make(chan struct{})
	cfg := consumer.Config{Name: group, Logger: quietLogger(), Duplicates: consumer.AllowDuplicates("benchmark: counts deliveries, not effects")}
	c, err := consumer.New(src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		if done.Add(1) == int64(n) {
			close(all)
		}
		return nil
	}), cfg)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(context.Background()) }()
	select {
	case <-all:
	case <-time.After(10 * time.Minute):
		b.Fatalf("oncely: %d of %d after 10m", done.Load(), n)
	}
	took := time.Since(start)
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
	if p := pendingOf(b, client, stream, group); p != 0 {
		b.Fatalf("oncely: %d entries still pending after the drain", p)
	}
	return took
}

func pendingOf(b *testing.B, client *goredis.Client, stream, group string) int64 {
	b.Helper()
	p, err := client.XPending(context.Background(), stream, group).Result()
	if err != nil {
		b.Fatal(err)
	}
	return p.Count
}
