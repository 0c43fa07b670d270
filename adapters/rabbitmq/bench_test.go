package rabbitmq

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/benchtest"
	"github.com/oncely/oncely/middleware/metrics"
	"github.com/oncely/oncely/middleware/tracing"
)

// benchPrefetch is the prefetch of both sides of BenchmarkConsume: the
// default, which the runtime's default MaxInFlight (128) admits.
const benchPrefetch = PrefetchDefault

// BenchmarkConsume drains a quorum queue pre-filled with
// ONCELY_BENCH_MESSAGES messages (default 100,000) with the baseline and
// with oncely's Consumer on this Source (no-op handler, default Config, 64
// ordering keys), both at prefetch 128, alternating ONCELY_BENCH_ROUNDS
// times (default 1) so both see the same machine load.
//
// The baseline is the loop amqp091-go and RabbitMQ's Go tutorial teach: Qos
// with the prefetch, Consume with auto-ack off, and for each delivery of the
// channel the handling and then d.Ack(false) ("Message acknowledgment" and
// "Fair dispatch", https://www.rabbitmq.com/tutorials/tutorial-two-go;
// amqp091-go's
// https://github.com/rabbitmq/amqp091-go/blob/main/_examples/consumer/consumer.go);
// here the handling is a no-op.
//
// It reports the total rates, the CPU per message of this process on each
// side and, when the broker runs on this machine, the broker's, and
// oncely's rate as a multiple of the baseline's (x_baseline, the median of
// the rounds' ratios), logged last. Run it with -bench Consume -benchtime
// 1x.
func BenchmarkConsume(b *testing.B) {
	n, rounds := benchtest.EnvInt("ONCELY_BENCH_MESSAGES", 100_000), benchtest.EnvInt("ONCELY_BENCH_ROUNDS", 1)
	queue := uniqueName("bench")
	cleanupTopology(b, queue, "bench", testTiers)
	ms := make([]*consumer.Message, n)
	for i := range ms {
		ms[i] = &consumer.Message{ID: fmt.Sprintf("m-%07d", i), Key: fmt.Sprintf("k%d", i%64), Body: []byte("payload-0123456789-0123456789-0123456789")}
	}
	fill := func() {
		b.StopTimer()
		defer b.StartTimer()
		start := time.Now()
		publish(b, queue, ms...)
		fmt.Fprintf(os.Stderr, "%s: filled %s with %d messages in %s\n", b.Name(), queue, n, time.Since(start).Round(time.Millisecond))
	}
	var rawBroker, oncelyBroker time.Duration
	broker, brokerOK := brokerProcess()
	res := benchtest.Rounds{Messages: n}
	for range b.N {
		for range rounds {
			fill()
			c0, b0 := benchtest.CPUTime(), broker()
			raw := drainRaw(b, queue, n)
			rawCPU := benchtest.CPUTime() - c0
			rawBroker += broker() - b0
			fill()
			c0, b0 = benchtest.CPUTime(), broker()
			onc := drainOncely(b, queue, n, "oncely")
			res.AddCPU(rawCPU, benchtest.CPUTime()-c0)
			oncelyBroker += broker() - b0
			res.Add(b, raw, onc)
		}
	}
	if total := res.Total(); brokerOK {
		b.ReportMetric(float64(rawBroker.Microseconds())/total, "raw_broker_cpu_us/msg")
		b.ReportMetric(float64(oncelyBroker.Microseconds())/total, "broker_cpu_us/msg")
	}
	res.Report(b, fmt.Sprintf("amqp091-go Consume loop, manual ack, prefetch %d", benchPrefetch))
}

// BenchmarkObservability measures what Prometheus metrics and unsampled
// OpenTelemetry tracing cost on the RabbitMQ pipeline of BenchmarkConsume
// (ONCELY_BENCH_MESSAGES messages, ONCELY_BENCH_ROUNDS rounds, default 3):
// each round drains the same filled queue with the runtime bare, with
// metrics (a Recorder as Observer and its Middleware), and with metrics
// plus tracing whose sampler samples nothing. It reports each as a multiple
// of bare's rate in the same round (the median of the rounds' ratios).
//
// With ONCELY_BENCH_HANDLER=json the messages are 1 KB JSON orders and the
// handler decodes each and updates a map under a mutex (benchtest.Work,
// whose own cost BenchmarkWork in internal/benchtest measures) instead of
// doing nothing. ONCELY_BENCH_PROFILE=<prefix> writes a CPU profile of each
// drain to <prefix>.obs-<mode>-<round> (what scripts/obsshare.sh reads).
func BenchmarkObservability(b *testing.B) {
	n, rounds := benchtest.EnvInt("ONCELY_BENCH_MESSAGES", 100_000), benchtest.EnvInt("ONCELY_BENCH_ROUNDS", 3)
	queue := uniqueName("obsbench")
	cleanupTopology(b, queue, "bench", testTiers)
	ms := make([]*consumer.Message, n)
	for i := range ms {
		body := []byte("payload-0123456789-0123456789-0123456789")
		if benchtest.JSONWork() {
			body = benchtest.OrderJSON(i)
		}
		ms[i] = &consumer.Message{ID: fmt.Sprintf("m-%07d", i), Key: fmt.Sprintf("k%d", i%64), Body: body}
	}
	modes := []string{"oncely", "oncely+metrics", "oncely+tracing"}
	var withMetrics, withTracing, cpuMetrics, cpuTracing []float64
	for range b.N {
		for r := range rounds {
			took, cpu := map[string]time.Duration{}, map[string]time.Duration{}
			// The order rotates, so no mode always drains first.
			for i := range modes {
				mode := modes[(r+i)%len(modes)]
				b.StopTimer()
				publish(b, queue, ms...)
				b.StartTimer()
				stop := profileDrain(b, fmt.Sprintf("obs-%s-%d", strings.ReplaceAll(mode, "+", "-"), r))
				c0 := benchtest.CPUTime()
				took[mode] = drainOncely(b, queue, n, mode)
				cpu[mode] = benchtest.CPUTime() - c0
				stop()
			}
			withMetrics = append(withMetrics, took["oncely"].Seconds()/took["oncely+metrics"].Seconds())
			withTracing = append(withTracing, took["oncely"].Seconds()/took["oncely+tracing"].Seconds())
			cpuMetrics = append(cpuMetrics, cpu["oncely+metrics"].Seconds()/cpu["oncely"].Seconds())
			cpuTracing = append(cpuTracing, cpu["oncely+tracing"].Seconds()/cpu["oncely"].Seconds())
			// Round lines go to stderr: a benchmark's log keeps only 10 lines.
			fmt.Fprintf(os.Stderr, "%s: round %d: bare %.0f msgs/s, metrics %.3fx, metrics+tracing %.3fx; CPU µs/msg %.2f, %.2f, %.2f\n", b.Name(), r+1,
				float64(n)/took["oncely"].Seconds(), withMetrics[len(withMetrics)-1], withTracing[len(withTracing)-1],
				perMsg(cpu["oncely"], n), perMsg(cpu["oncely+metrics"], n), perMsg(cpu["oncely+tracing"], n))
		}
	}
	mid := func(xs []float64) float64 { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
	b.Logf("per-round rate ratios to bare: metrics %.3f %.3f, metrics+unsampled tracing %.3f %.3f", mid(withMetrics), withMetrics, mid(withTracing), withTracing)
	b.Logf("per-round CPU ratios to bare: metrics %.3f %.3f, metrics+unsampled tracing %.3f %.3f", mid(cpuMetrics), cpuMetrics, mid(cpuTracing), cpuTracing)
	b.ReportMetric(mid(withMetrics), "metrics_x_bare")
	b.ReportMetric(mid(withTracing), "tracing_x_bare")
	b.ReportMetric(mid(cpuMetrics), "metrics_cpu_x_bare")
	b.ReportMetric(mid(cpuTracing), "tracing_cpu_x_bare")
}

// perMsg is d per message, in microseconds.
func perMsg(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }

// brokerProcess returns a func reporting the CPU time (user+system) of the
// local RabbitMQ server, the one beam.smp process in /proc, which serves
// both sides on the same cores; ok is false (and the func returns 0) when
// there is no single such process. The server also serves any other
// client at the time, so its figures are only as clean as the machine.
func brokerProcess() (cpu func() time.Duration, ok bool) {
	none := func() time.Duration { return 0 }
	var stat string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		if comm, err := os.ReadFile(dir + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "beam.smp" {
			if stat != "" {
				return none, false
			}
			stat = dir + "/stat"
		}
	}
	if stat == "" {
		return none, false
	}
	return func() time.Duration {
		b, err := os.ReadFile(stat)
		if err != nil {
			return 0
		}
		// Fields after the parenthesised command name: state is field 3,
		// utime 14 and stime 15, in clock ticks (USER_HZ, 100 on Linux).
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			return 0
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(ut+st) * 10 * time.Millisecond
	}, true
}

// drainRaw drains n messages of queue with the baseline loop.
func drainRaw(b *testing.B, queue string, n int) time.Duration {
	b.Helper()
	ch, closeConn := openChannel(b)
	defer closeConn()
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
	took := time.Since(start)
	if err := ch.Cancel("raw", false); err != nil {
		b.Fatal(err)
	}
	if err := ch.Close(); err != nil {
		b.Fatal(err)
	}
	return took
}

// drainOncely drains queue with the runtime; mode oncely+metrics adds a
// metrics.Recorder, oncely+tracing that and unsampled tracing.
// profileDrain starts a CPU profile written to
// $ONCELY_BENCH_PROFILE.<name> when that variable is set, and returns what
// stops it.
func profileDrain(b *testing.B, name string) (stop func()) {
	prefix := os.Getenv("ONCELY_BENCH_PROFILE")
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(prefix + "." + name)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func drainOncely(b *testing.B, queue string, n int, mode string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := New(ctx, Config{URL: testURL(b), Queue: queue, Consumer: "bench", Prefetch: benchPrefetch, Tiers: testTiers, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	all := make(chan struct{})
	cfg := consumer.Config{Name: "bench", Logger: testLogger()}
	var mws []consumer.Middleware
	if mode != "oncely" {
		rec, err := metrics.New(prometheus.NewRegistry(), metrics.Config{Consumer: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		cfg.Observer = rec
		mws = append(mws, rec.Middleware)
	}
	if mode == "oncely+tracing" {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		mws = append([]consumer.Middleware{tracing.Middleware(tp, propagation.TraceContext{})}, mws...)
	}
	cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
	work, jsonWork := &benchtest.Work{}, benchtest.JSONWork()
	c, err := consumer.New(src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		if jsonWork {
			if err := work.Handle(m.Body); err != nil {
				b.Error(err)
			}
		}
		if done.Add(1) == int64(n) {
			close(all)
		}
		return nil
	}), cfg, mws...)
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
	return took
}
