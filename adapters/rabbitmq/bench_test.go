package rabbitmq

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/consumer"
)

// benchPrefetch is the prefetch of both sides of BenchmarkConsume.
const benchPrefetch = 200

// BenchmarkConsume drains a quorum queue pre-filled with
// ONCELY_BENCH_MESSAGES messages (default 100,000) twice in one run: raw
// amqp091-go (manual ack per message, no-op handler) and oncely's Consumer
// on this Source (no-op handler, default Config, 64 ordering keys), both at
// prefetch 200. It reports both rates and oncely's as a multiple of raw
// (x_baseline; the target is >= 0.9). Run it with -bench Consume
// -benchtime 1x.
func BenchmarkConsume(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("ONCELY_BENCH_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	queue := uniqueName("bench")
	cleanupTopology(b, queue, "bench", testTiers)
	ms := make([]*consumer.Message, n)
	for i := range ms {
		ms[i] = &consumer.Message{ID: fmt.Sprintf("m-%07d", i), Key: fmt.Sprintf("k%d", i%64), Body: []byte("payload-0123456789-0123456789-0123456789")}
	}
	var rawRate, oncelyRate float64
	for range b.N {
		fill := func() {
			start := time.Now()
			publish(b, queue, ms...)
			b.Logf("filled %s with %d messages in %s", queue, n, time.Since(start).Round(time.Millisecond))
		}
		b.StopTimer()
		fill()
		b.StartTimer()
		rawRate = drainRaw(b, queue, n)
		b.StopTimer()
		fill()
		b.StartTimer()
		oncelyRate = drainOncely(b, queue, n)
	}
	b.ReportMetric(rawRate, "raw_msgs/s")
	b.ReportMetric(oncelyRate, "msgs/s")
	b.ReportMetric(oncelyRate/rawRate, "x_baseline")
	b.Logf("%d messages at prefetch %d: raw amqp091-go %.0f msgs/s, oncely %.0f msgs/s, ratio %.3f", n, benchPrefetch, rawRate, oncelyRate, oncelyRate/rawRate)
}

func drainRaw(b *testing.B, queue string, n int) float64 {
	b.Helper()
	conn, err := amqp.Dial(testURL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Qos(benchPrefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	ds, err := ch.Consume(queue, "raw", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	got := 0
	timeout := time.After(10 * time.Minute)
	for got < n {
		select {
		case d := <-ds:
			if err := d.Ack(false); err != nil {
				b.Fatal(err)
			}
			got++
		case <-timeout:
			b.Fatalf("raw: %d of %d after 10m", got, n)
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	if err := ch.Cancel("raw", false); err != nil {
		b.Fatal(err)
	}
	if err := ch.Close(); err != nil {
		b.Fatal(err)
	}
	return rate
}

func drainOncely(b *testing.B, queue string, n int) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := New(ctx, Config{URL: testURL(b), Queue: queue, Consumer: "bench", Prefetch: benchPrefetch, Tiers: testTiers, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	all := make(chan struct{})
	c, err := consumer.New(src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		if done.Add(1) == int64(n) {
			close(all)
		}
		return nil
	}), consumer.Config{Name: "bench", Logger: testLogger()})
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
	rate := float64(n) / time.Since(start).Seconds()
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
	return rate
}
