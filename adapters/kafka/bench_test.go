package kafka

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/benchtest"
	"github.com/oncely/oncely/internal/kafkatest"
	"github.com/oncely/oncely/middleware/metrics"
	"github.com/oncely/oncely/middleware/tracing"
)

// Benchmarks. Run with:
//
//	go test -run '^$' -bench . -benchtime 1x ./adapters/kafka/
//
// BenchmarkThroughput runs on the Kafka in KAFKA_BROKERS when set, else it
// starts kfake in a child process (`oncely dev kafka`, kafkatest.Process). It fills a topic with
// benchRecords records (200,000 unless ONCELY_KAFKA_BENCH_RECORDS says; 6
// partitions, 1,000 keys), then consumes it in fresh child processes,
// alternating (a) the baseline and (b) consumer.Consumer over this Source
// (Concurrency 16, MaxInFlight 4096, ReceiveBatch 1000; the library's
// defaults with ONCELY_KAFKA_BENCH_DEFAULTS=1), both with a no-op handler.
// With ONCELY_BENCH_HANDLER=json both handle 1 KB JSON orders with the
// realistic handler of BenchmarkObservability (benchtest.Work): the loop
// one record after another, as it is taught, oncely with its concurrency.
//
// The baseline is the loop franz-go's examples teach for a group consumer
// that commits itself: DisableAutoCommit, then PollFetches, handle every
// record of the poll, CommitUncommittedOffsets, repeat ("the recommended
// pattern", commit style "uncommitted" of
// https://github.com/twmb/franz-go/tree/master/examples/group_consuming),
// with the client's defaults otherwise.
//
// Each child reports records/s, CPU seconds, peak RSS, heap allocations,
// bytes allocated and GCs of its own process (the last four per record in
// each round's line). ONCELY_BENCH_ROUNDS sets the rounds (default 5),
// ONCELY_KAFKA_BENCH_NO_SOURCE=1 skips the Source-alone mode, and
// ONCELY_KAFKA_BENCH_OTHER (benchOtherEnv) adds another build's oncely.
// ONCELY_KAFKA_BENCH_PROFILE=<prefix> writes each child's CPU profile and
// allocation profile (<prefix>.<mode>-<round>[.alloc]).
// A third mode drives the Source without the runtime (Receive, then Ack in
// place) to separate the adapter's cost from the runtime's. Records/s is
// measured from creating the client (the Source, for oncely) to the last
// record handled, group join included for both. The last line logged is
// oncely's rate as a multiple of the baseline's (x_baseline: the median of
// the rounds' ratios).

const benchChildEnv = "ONCELY_KAFKA_BENCH_CHILD"

// benchOtherEnv names another build of this test binary: BenchmarkThroughput
// then also runs its oncely child each round (mode "other"), to compare two
// versions of oncely on the same topic in the same run.
const benchOtherEnv = "ONCELY_KAFKA_BENCH_OTHER"

// benchRecords is the number of records BenchmarkThroughput consumes:
// ONCELY_KAFKA_BENCH_RECORDS rounded up to whole produce chunks of 10,000
// (inherited by the child processes), default 200,000.
var benchRecords = func() int {
	if n, err := strconv.Atoi(os.Getenv("ONCELY_KAFKA_BENCH_RECORDS")); err == nil && n > 0 {
		return (n + 9999) / 10000 * 10000
	}
	return 200000
}()

type benchResult struct {
	Mode    string  `json:"mode"`
	Records int     `json:"records"`
	Seconds float64 `json:"seconds"`
	CPU     float64 `json:"cpu_seconds"`
	RSSKiB  int64   `json:"peak_rss_kib"`
	// Pause describes the first record's delay (and for oncely the longest
	// pause in progress after it).
	Pause string `json:"pause,omitempty"`
	// SteadySeconds and SteadyCPU are the wall and CPU seconds from the
	// first record handled to the last (oncely only): throughput without
	// the client's start and the group join.
	SteadySeconds float64 `json:"steady_seconds,omitempty"`
	SteadyCPU     float64 `json:"steady_cpu_seconds,omitempty"`
	// Mallocs, AllocBytes and GCs are the process's heap allocations,
	// bytes allocated and garbage collections, start-up included.
	Mallocs    uint64 `json:"mallocs"`
	AllocBytes uint64 `json:"alloc_bytes"`
	GCs        uint32 `json:"gcs"`
}

// perRecord describes r's CPU, allocations and bytes allocated per record.
func (r benchResult) perRecord() string {
	n := float64(r.Records)
	return fmt.Sprintf("%.2f µs cpu, %.2f allocs, %.0f B a record, %d GCs", r.CPU/n*1e6, float64(r.Mallocs)/n, float64(r.AllocBytes)/n, r.GCs)
}

func (r benchResult) rate() float64 { return float64(r.Records) / r.Seconds }

// steadyRate is the records/s from the first record handled to the last.
func (r benchResult) steadyRate() float64 { return float64(r.Records-1) / r.SteadySeconds }

// cpuSeconds is the CPU time this process has used.
func cpuSeconds(tb testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func BenchmarkThroughput(b *testing.B) {
	var addrs []string
	if kafkatest.Real() {
		addrs = brokers(b)
	} else {
		addrs = kafkatest.Process(b).Addrs
	}
	topic := fillBenchTopic(b, addrs)
	b.ResetTimer()
	// Rounds alternate the modes, and each round's ratios compare runs
	// seconds apart; their medians are reported, because the machine may be
	// shared and its speed drifts more between rounds than within one.
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("ONCELY_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	runs := map[string][]benchResult{"source": nil}
	modes := []string{"franz-go", "oncely", "source"}
	if os.Getenv("ONCELY_KAFKA_BENCH_NO_SOURCE") != "" {
		modes = modes[:2]
	}
	if os.Getenv(benchOtherEnv) != "" {
		modes = append(modes, "other")
	}
	var ratios, sourceRatios []float64
	for round := range rounds {
		var line []string
		for _, mode := range modes {
			r := runBenchChild(b, mode, addrs, topic, fmt.Sprintf("%s-%d", mode, round))
			line = append(line, fmt.Sprintf("%s %.0f/s %.2f s cpu %.2f s rss %.0f MiB (%s)", mode, r.rate(), r.Seconds, r.CPU, float64(r.RSSKiB)/1024, r.perRecord()))
			if r.Pause != "" {
				line = append(line, r.Pause)
			}
			runs[mode] = append(runs[mode], r)
		}
		base := runs["franz-go"][round].rate()
		ratios = append(ratios, runs["oncely"][round].rate()/base)
		if slices.Contains(modes, "source") {
			sourceRatios = append(sourceRatios, runs["source"][round].rate()/base)
		}
		if rs := runs["other"]; len(rs) > 0 {
			line = append(line, fmt.Sprintf("oncely ÷ other %.3f rate, %.3f cpu", runs["oncely"][round].rate()/rs[round].rate(), runs["oncely"][round].CPU/rs[round].CPU))
		}
		b.Logf("round %d: %s; oncely %.2fx", round, strings.Join(line, "; "), ratios[round])
	}
	// The median run of each mode, by rate.
	median := func(mode string) benchResult {
		rs := runs[mode]
		if len(rs) == 0 {
			return benchResult{Records: 1, Seconds: 1}
		}
		slices.SortFunc(rs, func(x, y benchResult) int { return cmp.Compare(x.rate(), y.rate()) })
		return rs[len(rs)/2]
	}
	mid := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	a, o, s := median("franz-go"), median("oncely"), median("source")
	ratio, sourceRatio := mid(ratios), mid(sourceRatios)
	b.Logf("medians: franz-go PollFetches loop %.0f/s, oncely %.0f/s, source alone %.0f/s; CPU per record: oncely %.2fx, source alone %.2fx of franz-go's; source alone %.2fx franz-go's rate (rounds %s)",
		a.rate(), o.rate(), s.rate(), o.CPU/a.CPU, s.CPU/a.CPU, sourceRatio, fmtRatios(sourceRatios))
	b.Logf("oncely ÷ franz-go PollFetches + CommitUncommittedOffsets loop (x_baseline): median %.2f (rounds %s)", ratio, fmtRatios(ratios))
	b.ReportMetric(sourceRatio, "source_only_x_baseline")
	b.ReportMetric(s.CPU, "source_only_cpu_s")
	b.ReportMetric(a.rate(), "franzgo_msgs/s")
	b.ReportMetric(o.rate(), "msgs/s")
	b.ReportMetric(ratio, "x_baseline")
	b.ReportMetric(a.CPU/o.CPU, "cpu_efficiency_x_baseline")
	b.ReportMetric(a.CPU, "franzgo_cpu_s")
	b.ReportMetric(o.CPU, "cpu_s")
	b.ReportMetric(float64(a.RSSKiB)/1024, "franzgo_rss_MiB")
	b.ReportMetric(float64(o.RSSKiB)/1024, "rss_MiB")
}

// fillBenchTopic creates a topic of 6 partitions holding benchRecords
// records of 100 bytes (1 KB orders under ONCELY_BENCH_HANDLER=json) over
// 1,000 keys, each with a message ID.
func fillBenchTopic(b *testing.B, addrs []string) string {
	topic := uniqueTopic("bench")
	deleteTopicsAfter(b, addrs, topic)
	cl := client(b, addrs, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	body := []byte(strings.Repeat("x", 100))
	const chunk = 10000
	for i := 0; i < benchRecords; i += chunk {
		recs := make([]*kgo.Record, chunk)
		for j := range recs {
			n := i + j
			value := body
			if benchtest.JSONWork() {
				value = benchtest.OrderJSON(n)
			}
			recs[j] = &kgo.Record{Topic: topic, Key: []byte("key-" + strconv.Itoa(n%1000)), Value: value,
				Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte("m-" + strconv.Itoa(n))}}}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	return topic
}

// BenchmarkObservability measures what Prometheus metrics and unsampled
// OpenTelemetry tracing cost on the Kafka pipeline of BenchmarkThroughput:
// rounds alternate the runtime bare, with metrics (a Recorder as Observer
// and its Middleware), and with metrics plus tracing whose sampler samples
// nothing (the producer's trace context absent), each in a fresh child
// process. It reports each as a multiple of bare in the same round (the
// median of the rounds' ratios): the rate and CPU of the whole child
// (metrics_x_bare, metrics_cpu_x_bare, ...), and from the first record
// handled to the last, without the client's start and the group join, whose
// duration varies from child to child (steady_metrics_x_bare, ...).
//
// With ONCELY_BENCH_HANDLER=json the records are 1 KB JSON orders and the
// handler decodes each and updates a map under a mutex (benchtest.Work,
// whose own cost BenchmarkWork in internal/benchtest measures) instead of
// doing nothing.
func BenchmarkObservability(b *testing.B) {
	var addrs []string
	if kafkatest.Real() {
		addrs = brokers(b)
	} else {
		addrs = kafkatest.Process(b).Addrs
	}
	topic := fillBenchTopic(b, addrs)
	b.ResetTimer()
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("ONCELY_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	modes := []string{"oncely", "oncely+metrics", "oncely+tracing"}
	var withMetrics, withTracing, cpuMetrics, cpuTracing []float64
	var steadyMetrics, steadyTracing, steadyCPUMetrics, steadyCPUTracing []float64
	for round := range rounds {
		res := map[string]benchResult{}
		// The order rotates, so no mode always runs first (on colder caches).
		for i := range modes {
			mode := modes[(round+i)%len(modes)]
			res[mode] = runBenchChild(b, mode, addrs, topic, fmt.Sprintf("obs-%s-%d", strings.ReplaceAll(mode, "+", "-"), round))
		}
		bare, m, tr := res["oncely"], res["oncely+metrics"], res["oncely+tracing"]
		withMetrics = append(withMetrics, m.rate()/bare.rate())
		withTracing = append(withTracing, tr.rate()/bare.rate())
		cpuMetrics = append(cpuMetrics, m.CPU/bare.CPU)
		cpuTracing = append(cpuTracing, tr.CPU/bare.CPU)
		steadyMetrics = append(steadyMetrics, m.steadyRate()/bare.steadyRate())
		steadyTracing = append(steadyTracing, tr.steadyRate()/bare.steadyRate())
		steadyCPUMetrics = append(steadyCPUMetrics, m.SteadyCPU/bare.SteadyCPU)
		steadyCPUTracing = append(steadyCPUTracing, tr.SteadyCPU/bare.SteadyCPU)
		// Round lines go to stderr: a benchmark's log keeps only 10 lines.
		fmt.Fprintf(os.Stderr, "%s: round %d: bare %.0f/s, metrics %.0f/s (%.3fx), metrics+tracing %.0f/s (%.3fx); CPU s %.2f, %.2f, %.2f; first record to last: %.0f/s, %.3fx, %.3fx, CPU µs/record %.2f, %.2f, %.2f\n", b.Name(), round,
			bare.rate(), m.rate(), withMetrics[round], tr.rate(), withTracing[round], bare.CPU, m.CPU, tr.CPU,
			bare.steadyRate(), steadyMetrics[round], steadyTracing[round],
			1e6*bare.SteadyCPU/float64(bare.Records), 1e6*m.SteadyCPU/float64(m.Records), 1e6*tr.SteadyCPU/float64(tr.Records))
	}
	mid := func(xs []float64) float64 { xs = slices.Clone(xs); slices.Sort(xs); return xs[len(xs)/2] }
	b.Logf("per-round rate ratios to bare: metrics %.3f (%s), metrics+unsampled tracing %.3f (%s)",
		mid(withMetrics), fmtRatios(withMetrics), mid(withTracing), fmtRatios(withTracing))
	b.Logf("per-round CPU ratios to bare: metrics %.3f (%s), metrics+unsampled tracing %.3f (%s)",
		mid(cpuMetrics), fmtRatios(cpuMetrics), mid(cpuTracing), fmtRatios(cpuTracing))
	b.ReportMetric(mid(withMetrics), "metrics_x_bare")
	b.ReportMetric(mid(withTracing), "tracing_x_bare")
	b.ReportMetric(mid(cpuMetrics), "metrics_cpu_x_bare")
	b.ReportMetric(mid(cpuTracing), "tracing_cpu_x_bare")
	b.Logf("first record to last, per-round rate ratios to bare: metrics %.3f (%s), metrics+unsampled tracing %.3f (%s)",
		mid(steadyMetrics), fmtRatios(steadyMetrics), mid(steadyTracing), fmtRatios(steadyTracing))
	b.Logf("first record to last, per-round CPU ratios to bare: metrics %.3f (%s), metrics+unsampled tracing %.3f (%s)",
		mid(steadyCPUMetrics), fmtRatios(steadyCPUMetrics), mid(steadyCPUTracing), fmtRatios(steadyCPUTracing))
	b.ReportMetric(mid(steadyMetrics), "steady_metrics_x_bare")
	b.ReportMetric(mid(steadyTracing), "steady_tracing_x_bare")
	b.ReportMetric(mid(steadyCPUMetrics), "steady_metrics_cpu_x_bare")
	b.ReportMetric(mid(steadyCPUTracing), "steady_tracing_cpu_x_bare")
}

// fmtRatios lists sorted ratios with two decimals.
func fmtRatios(xs []float64) string {
	xs = slices.Sorted(slices.Values(xs))
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}

func runBenchChild(tb testing.TB, mode string, addrs []string, topic, group string) benchResult {
	tb.Helper()
	bin, childMode := os.Args[0], mode
	if mode == "other" {
		bin, childMode = os.Getenv(benchOtherEnv), "oncely"
	}
	cmd := exec.Command(bin, "-test.run=^TestBenchChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+strings.Join([]string{childMode, strings.Join(addrs, ","), topic, group}, " "))
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s child: %v\n%s", mode, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if j, ok := strings.CutPrefix(line, "RESULT "); ok {
			var r benchResult
			if err := json.Unmarshal([]byte(j), &r); err != nil {
				tb.Fatal(err)
			}
			return r
		}
	}
	tb.Fatalf("%s child printed no result:\n%s", mode, out)
	return benchResult{}
}

// TestBenchChild is the consuming side of BenchmarkThroughput, run in a
// child process; it is skipped otherwise.
func TestBenchChild(t *testing.T) {
	spec := os.Getenv(benchChildEnv)
	if spec == "" {
		t.Skip("only run as BenchmarkThroughput's child process")
	}
	f := strings.Fields(spec)
	mode, addrs, topic, group := f[0], strings.Split(f[1], ","), f[2], f[3]
	if p := os.Getenv("ONCELY_KAFKA_BENCH_PROFILE"); p != "" {
		pf, err := os.Create(p + "." + group)
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
		defer writeAllocProfile(t, p+"."+group+".alloc")
	}
	var r benchResult
	switch mode {
	case "franz-go":
		r = consumeFranz(t, addrs, topic, group)
	case "oncely", "oncely+metrics", "oncely+tracing":
		r = consumeOncely(t, addrs, topic, group, mode)
	case "source":
		r = consumeSource(t, addrs, topic, group)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	r.Mode = mode
	r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	r.RSSKiB = ru.Maxrss
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.Mallocs, r.AllocBytes, r.GCs = ms.Mallocs, ms.TotalAlloc, ms.NumGC
	j, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", j)
}

// writeAllocProfile writes the heap profile, whose alloc_space and
// alloc_objects samples count every allocation since the process started,
// to path.
func writeAllocProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

// noop is the benchmarks' handler work.
func noop(m *consumer.Message) bool { return m.ID != "" }

// consumeFranz is the baseline: franz-go's group consumer as its examples
// teach it (see BenchmarkThroughput): PollFetches, handle every record of
// the poll, CommitUncommittedOffsets after each poll.
func consumeFranz(t *testing.T, addrs []string, topic, group string) benchResult {
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	n := 0
	var first, lastPoll, longest time.Duration
	var at int
	work, jsonWork := &benchtest.Work{}, benchtest.JSONWork()
	for n < benchRecords {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, partition int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, partition, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			m := &consumer.Message{ID: string(r.Headers[0].Value), Key: string(r.Key), Body: r.Value}
			if !noop(m) {
				return
			}
			if jsonWork {
				if err := work.Handle(m.Body); err != nil {
					t.Error(err)
				}
			}
			n++
		})
		if now := time.Since(start); n > 0 {
			if first == 0 {
				first = now
			} else if gap := now - lastPoll; gap > longest {
				longest, at = gap, n
			}
			lastPoll = now
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return benchResult{Records: n, Seconds: time.Since(start).Seconds(), Pause: fmt.Sprintf("first record after %v, longest pause %v at record %d", first.Round(time.Millisecond), longest.Round(time.Millisecond), at)}
}

// consumeSource drives the Source alone, without the runtime: Receive
// batches and Ack each delivery in place. It isolates the adapter's cost.
func consumeSource(t *testing.T, addrs []string, topic, group string) benchResult {
	ctx := context.Background()
	start := time.Now()
	src, err := New(ctx, Config{Brokers: addrs, Topic: topic, Group: group, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var first time.Duration
	work, jsonWork := &benchtest.Work{}, benchtest.JSONWork()
	for n < benchRecords {
		ds, err := src.Receive(ctx, MaxPollRecordsDefault)
		if err != nil {
			t.Fatal(err)
		}
		if first == 0 {
			first = time.Since(start)
		}
		for _, d := range ds {
			if !noop(d.Message()) {
				continue
			}
			if jsonWork {
				if err := work.Handle(d.Message().Body); err != nil {
					t.Error(err)
				}
			}
			n++
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	secs := time.Since(start).Seconds()
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return benchResult{Records: n, Seconds: secs, Pause: fmt.Sprintf("first record after %v", first.Round(time.Millisecond))}
}

// consumeOncely consumes with the runtime; mode oncely+metrics adds a
// metrics.Recorder, oncely+tracing that and unsampled tracing.
func consumeOncely(t *testing.T, addrs []string, topic, group, mode string) benchResult {
	ctx := context.Background()
	start := time.Now()
	src, err := New(ctx, Config{Brokers: addrs, Topic: topic, Group: group, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var firstAt atomic.Int64 // time.Since(start) at the first record
	var firstCPU float64
	done, first := make(chan struct{}), make(chan struct{})
	cfg := consumer.Config{Name: group, Concurrency: 16, MaxInFlight: 4096, ReceiveBatch: MaxPollRecordsDefault, Logger: testLogger()}
	if os.Getenv("ONCELY_KAFKA_BENCH_DEFAULTS") != "" {
		cfg = consumer.Config{Name: group, Logger: testLogger()} // the library's defaults
	}
	var mws []consumer.Middleware
	if mode != "oncely" {
		rec, err := metrics.New(prometheus.NewRegistry(), metrics.Config{Consumer: group})
		if err != nil {
			t.Fatal(err)
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
		if !noop(m) {
			return nil
		}
		if jsonWork {
			if err := work.Handle(m.Body); err != nil {
				t.Error(err)
			}
		}
		switch n.Add(1) {
		case 1:
			firstAt.Store(int64(time.Since(start)))
			firstCPU = cpuSeconds(t)
			close(first)
		case int64(benchRecords):
			close(done)
		}
		return nil
	}), cfg, mws...)
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	pause := watchProgress(start, &n, done)
	<-done
	secs := time.Since(start).Seconds()
	doneCPU := cpuSeconds(t)
	<-first
	steady := secs - time.Duration(firstAt.Load()).Seconds()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	return benchResult{Records: int(n.Load()), Seconds: secs, Pause: <-pause, SteadySeconds: steady, SteadyCPU: doneCPU - firstCPU}
}

// BenchmarkKeyConcurrency compares, on one partition with 100 keys and a
// handler sleeping 5ms, key-ordered concurrency 32 against strict partition
// order (consumer.OrderByPartition), on brokers(b). Rates are measured from
// the first handled record to the last.
func BenchmarkKeyConcurrency(b *testing.B) {
	addrs := brokers(b)
	topic := uniqueTopic("keys")
	deleteTopicsAfter(b, addrs, topic)
	const keyed, ordered = 3200, 300
	ctx := context.Background()
	cl := client(b, addrs)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	recs := make([]*kgo.Record, keyed)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte("key-" + strconv.Itoa(i%100)), Value: []byte("x"),
			Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte("m-" + strconv.Itoa(i))}}}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	run := func(group string, n int, cfg consumer.Config) float64 {
		src, err := New(ctx, Config{Brokers: addrs, Topic: topic, Group: group, Logger: testLogger()})
		if err != nil {
			b.Fatal(err)
		}
		var count atomic.Int64
		var first, last atomic.Int64
		done := make(chan struct{})
		cfg.Name, cfg.Logger = group, testLogger()
		cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
		c, err := consumer.New(src, consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
			first.CompareAndSwap(0, time.Now().UnixNano())
			time.Sleep(5 * time.Millisecond)
			if k := count.Add(1); k == int64(n) {
				last.Store(time.Now().UnixNano())
				close(done)
			}
			return nil
		}), cfg)
		if err != nil {
			b.Fatal(err)
		}
		runErr := make(chan error, 1)
		go func() { runErr <- c.Run(ctx) }()
		<-done
		if err := c.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		if err := <-runErr; err != nil {
			b.Fatal(err)
		}
		return float64(n-1) / time.Duration(last.Load()-first.Load()).Seconds()
	}
	b.ResetTimer()
	byKey := run("by-key", keyed, consumer.Config{Concurrency: 32})
	byPartition := run("by-partition", ordered, consumer.Config{Concurrency: 32, Ordering: consumer.OrderByPartition})
	b.Logf("key order, concurrency 32: %.0f records/s; partition order: %.0f records/s; ratio %.1f", byKey, byPartition, byKey/byPartition)
	b.ReportMetric(byKey, "msgs/s")
	b.ReportMetric(byPartition, "partition_order_msgs/s")
	b.ReportMetric(byKey/byPartition, "x_baseline")
}

// watchProgress samples n every millisecond until done is closed and then
// sends when the first record came and the longest time n did not move
// after it.
func watchProgress(start time.Time, n *atomic.Int64, done <-chan struct{}) <-chan string {
	out := make(chan string, 1)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var first, longest time.Duration
		var at int64
		last, lastMove := int64(0), time.Now()
		for {
			select {
			case <-done:
				out <- fmt.Sprintf("first record after %v, longest pause %v at record %d", first.Round(time.Millisecond), longest.Round(time.Millisecond), at)
				return
			case now := <-tick.C:
				v := n.Load()
				switch {
				case v != last && last == 0:
					first = now.Sub(start)
				case v == last && v > 0 && now.Sub(lastMove) > longest:
					longest, at = now.Sub(lastMove), v
				}
				if v != last {
					last, lastMove = v, now
				}
			}
		}
	}()
	return out
}

// deleteTopicsAfter deletes, when b ends, topic and the topics named after
// it (each child's retry tiers and dead-letter topic). A benchmark makes
// hundreds of partitions a run; a broker that keeps them all runs out of
// file descriptors after a day of runs.
func deleteTopicsAfter(b *testing.B, addrs []string, topic string) {
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
		if err != nil {
			b.Logf("deleting topics: %v", err)
			return
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			b.Logf("listing topics to delete: %v", err)
			return
		}
		var names []string
		for _, name := range topics.Names() {
			if name == topic || strings.HasPrefix(name, topic+".") {
				names = append(names, name)
			}
		}
		if _, err := adm.DeleteTopics(ctx, names...); err != nil {
			b.Logf("deleting %d topics: %v", len(names), err)
		}
	})
}
