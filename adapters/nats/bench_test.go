package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/benchtest"
)

// BenchmarkConsume fills one stream with ONCELY_BENCH_MESSAGES messages
// (default 100,000) and drains it, once per round (ONCELY_BENCH_ROUNDS,
// default 1) with each side, each under a durable consumer of its own (so
// both read the same messages): the baseline and oncely's Consumer on this
// Source (no-op handler, default Config and Prefetch, 64 ordering keys).
//
// The baseline is the loop nats.go's jetstream package teaches for
// continuous consuming: a pull consumer with explicit acks and Consume with
// a callback that handles the message and calls Ack ("Using Consume() to
// receive messages in a callback",
// https://github.com/nats-io/nats.go/blob/main/jetstream/README.md#continuous-polling),
// with Consume's default options (a buffer of 500 messages, 30 s pulls);
// here the callback's handling is a no-op. Its durable consumer has the
// Source's settings (AckWait, MaxDeliver, MaxAckPending).
//
// It reports the rates and oncely's as a multiple of the baseline's
// (x_baseline, the median of the rounds' ratios), logged last. Each side's
// clock starts once its durable consumer is set up, as in the Redis
// benchmark: the baseline's created, oncely's Source (streams and
// consumers) and Consumer made. The Source starts pulling in New, so it may
// hold up to its Prefetch (256, 0.26 % of a round) when its clock starts.
// Run it with -bench Consume -benchtime 1x.
func BenchmarkConsume(b *testing.B) {
	n, rounds := benchtest.EnvInt("ONCELY_BENCH_MESSAGES", 100_000), benchtest.EnvInt("ONCELY_BENCH_ROUNDS", 1)
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
	res := benchtest.Rounds{Messages: n}
	var rawWrites, oncelyWrites int64
	b.ResetTimer()
	for i := range b.N {
		for r := range rounds {
			name := fmt.Sprintf("b%d-%d", i, r)
			c.cleanup(b, source, "oncely-"+name)
			c0, w0 := benchtest.CPUTime(), writeCalls()
			raw := drainRaw(b, c, source, "raw-"+name, n)
			c1, w1 := benchtest.CPUTime(), writeCalls()
			onc := drainOncely(b, c, source, "oncely-"+name, n)
			res.AddCPU(c1-c0, benchtest.CPUTime()-c1)
			rawWrites, oncelyWrites = rawWrites+w1-w0, oncelyWrites+writeCalls()-w1
			res.Add(b, raw, onc)
		}
	}
	if rawWrites > 0 {
		b.ReportMetric(float64(rawWrites)/res.Total(), "raw_writes/msg")
		b.ReportMetric(float64(oncelyWrites)/res.Total(), "writes/msg")
	}
	b.ReportMetric(float64(rawMissed.Load()), "raw_hb_missed")
	b.ReportMetric(float64(oncelyWarned.Load()), "warnings")
	res.Report(b, "nats.go jetstream Consume loop")
}

// rawMissed and oncelyWarned count the raw loop's missed heartbeats and the
// Source's warnings (a pull subscription reopened after missed heartbeats).
var rawMissed, oncelyWarned atomic.Int64

// warnCounter is a slog.Handler counting warnings in oncelyWarned.
type warnCounter struct{}

func (warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (warnCounter) Handle(context.Context, slog.Record) error {
	oncelyWarned.Add(1)
	return nil
}
func (h warnCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnCounter) WithGroup(string) slog.Handler      { return h }

// writeCalls is the number of write system calls of this process so far
// (syscw in /proc/self/io; 0 where there is none): socket writes, in this
// benchmark.
func writeCalls() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// drainRaw reads n messages of source with the baseline loop: a durable
// consumer of the Source's settings and Consume with its default options,
// whose callback acks each message after a no-op handler (Ack, not waiting
// for a reply, as the Source). A missed heartbeat, which Consume survives
// with a new pull, is counted in rawMissed.
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
	var got atomic.Int64
	all := make(chan struct{})
	failed := make(chan error, 1)
	start := time.Now()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if err := m.Ack(); err != nil {
			select {
			case failed <- err:
			default:
			}
			return
		}
		if got.Add(1) == int64(n) {
			close(all)
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if errors.Is(err, jetstream.ErrNoHeartbeat) {
			rawMissed.Add(1)
			return
		}
		select {
		case failed <- err:
		default:
		}
	}))
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-all:
	case err := <-failed:
		cc.Stop()
		b.Fatalf("raw: %d of %d: %v", got.Load(), n, err)
	case <-ctx.Done():
		cc.Stop()
		b.Fatalf("raw: %d of %d: %v", got.Load(), n, ctx.Err())
	}
	cc.Stop()
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
	src, err := New(ctx, Config{URL: c.url, Source: source, Consumer: name, Logger: slog.New(warnCounter{})})
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
	start := time.Now()
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
