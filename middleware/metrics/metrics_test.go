package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/obstest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/middleware/metrics"
	"github.com/oncely/oncely/middleware/tracing"
	memstore "github.com/oncely/oncely/store/memory"
)

// obsValue returns the value of the counter or gauge name with exactly the
// given labels, failing t when the series does not exist.
func obsValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	m := obsFind(t, g, name, labels)
	require.NotNil(t, m, "no series %s%v", name, labels)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", name)
	return 0
}

// obsFind returns the series name with exactly the given labels, or nil.
func obsFind(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	m, err := obsLookup(g, name, labels)
	require.NoError(t, err)
	return m
}

func obsSeries(t *testing.T, g prometheus.Gatherer, name string) []*dto.Metric {
	t.Helper()
	ms, err := obsGather(g, name)
	require.NoError(t, err)
	return ms
}

// obsLookup is obsFind for goroutines that must not call t.FailNow.
func obsLookup(g prometheus.Gatherer, name string, labels map[string]string) (*dto.Metric, error) {
	ms, err := obsGather(g, name)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if fmt.Sprint(got) == fmt.Sprint(labels) {
			return m, nil
		}
	}
	return nil, nil
}

func obsGather(g prometheus.Gatherer, name string) ([]*dto.Metric, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric(), nil
		}
	}
	return nil, nil
}

func TestMetricsCountOutcomesOfARun(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg, metrics.Config{Consumer: "ledger"})
	require.NoError(t, err)

	// 11 final settlements: 9 acks (7 processed, 2 duplicates), 2 dead letters.
	src := obstest.NewSource(11)
	for i := range 5 {
		src.Publish(obstest.Msg(fmt.Sprint("ok-", i)))
	}
	src.Publish(obstest.Msg("dup-1"), obstest.Msg("dup-2"), obstest.Msg("flaky"), obstest.Msg("poison"), obstest.Msg("perm"), obstest.Msg("outage"))

	var outages atomic.Int32
	var calls atomic.Int32
	h := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		calls.Add(1)
		switch {
		case strings.HasPrefix(msg.ID, "dup-"):
			consumer.MarkDuplicate(ctx)
		case msg.ID == "flaky" && msg.Attempt == 1:
			return errors.New("flaky")
		case msg.ID == "poison":
			return errors.New("poison")
		case msg.ID == "perm":
			return consumer.Permanent(errors.New("bad payload"))
		case msg.ID == "outage" && outages.Add(1) == 1:
			return consumer.Unavailable(errors.New("database down"))
		}
		return nil
	})
	cfg := obstest.FastConfig()
	cfg.Observer = m
	cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
	c, err := consumer.New(src, h, cfg, m.Middleware)
	require.NoError(t, err)
	obstest.Run(t, c, src)

	want := map[consumer.Outcome]float64{
		consumer.OutcomeProcessed:    7, // 5 ok, flaky on attempt 2, outage on its second try
		consumer.OutcomeDuplicate:    2,
		consumer.OutcomeRetried:      3, // flaky once, poison twice
		consumer.OutcomeDeadLettered: 2, // poison exhausted, perm
		consumer.OutcomeFailed:       1, // outage
		consumer.OutcomeAbandoned:    0,
	}
	require.Len(t, obsSeries(t, reg, metrics.NameMessages), len(want), "one series per outcome, no others")
	for outcome, n := range want {
		got := obsValue(t, reg, metrics.NameMessages, map[string]string{"consumer": "ledger", "outcome": string(outcome), "source": "payments"})
		require.Equal(t, n, got, "outcome %s", outcome)
	}
	require.Equal(t, int32(15), calls.Load())
	hist := obsFind(t, reg, metrics.NameHandlerDuration, map[string]string{"consumer": "ledger", "source": "payments"})
	require.NotNil(t, hist)
	require.Equal(t, uint64(15), hist.GetHistogram().GetSampleCount(), "one observation per handler call")
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameInFlight, map[string]string{"consumer": "ledger", "source": "payments"}))
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameBreakerOpen, map[string]string{"consumer": "ledger"}))

	// The run's settlements agree with the counters.
	require.Len(t, src.Acked(), 9)
	require.Len(t, src.Dead(), 2)
	require.Equal(t, consumer.ReasonExhausted, src.Dead()["poison"][consumer.HeaderDeadLetterReason])
	require.Equal(t, consumer.ReasonPermanent, src.Dead()["perm"][consumer.HeaderDeadLetterReason])

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP oncely_breaker_opens_total Times the consumer's breaker opened.
# TYPE oncely_breaker_opens_total counter
oncely_breaker_opens_total{consumer="ledger"} 0
`), metrics.NameBreakerOpens))
}

func TestMetricsInFlightWhileHandlerRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	h := m.Middleware(consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		close(entered)
		<-release
		return nil
	}))
	done := make(chan error, 1)
	go func() { done <- h.Handle(consumer.WithName(context.Background(), "ledger"), obstest.Msg("a")) }()
	<-entered
	labels := map[string]string{"consumer": "ledger", "source": "payments"}
	require.Equal(t, 1.0, obsValue(t, reg, metrics.NameInFlight, labels))
	close(release)
	require.NoError(t, <-done)
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameInFlight, labels))
}

func TestMetricsBreakerState(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	labels := map[string]string{"consumer": "ledger"}
	obs := m.Observer("ledger")
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameBreakerOpen, labels), "the gauge exists at 0 before any change")

	// A real consumer: one outage failure opens the breaker (threshold 1); the
	// held message's next attempt sees it open, succeeds and closes it.
	src := obstest.NewSource(1)
	src.Publish(obstest.Msg("a"))
	var c *consumer.Consumer
	var openSeen atomic.Bool
	var tries atomic.Int32
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error {
		if tries.Add(1) == 1 {
			return consumer.Unavailable(errors.New("down"))
		}
		g, err := obsLookup(reg, metrics.NameBreakerOpen, labels)
		openSeen.Store(c.Paused() && err == nil && g.GetGauge().GetValue() == 1)
		return nil
	})
	cfg := obstest.FastConfig()
	cfg.BreakerThreshold = 1
	cfg.Observer = obs
	cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
	c, err = consumer.New(src, h, cfg)
	require.NoError(t, err)
	obstest.Run(t, c, src)
	require.True(t, openSeen.Load(), "gauge was 1 while the breaker was open")
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameBreakerOpen, labels))
	require.Equal(t, 1.0, obsValue(t, reg, metrics.NameBreakerOpens, labels))
	require.Equal(t, 1.0, obsValue(t, reg, metrics.NameMessages, map[string]string{"consumer": "ledger", "outcome": "failed", "source": "payments"}))

	// *Metrics itself labels the breaker with MetricsConfig.Consumer.
	reg2 := prometheus.NewRegistry()
	m2, err := metrics.New(reg2, metrics.Config{Consumer: "billing"})
	require.NoError(t, err)
	m2.BreakerChanged(true)
	require.Equal(t, 1.0, obsValue(t, reg2, metrics.NameBreakerOpen, map[string]string{"consumer": "billing"}))
}

func TestNewMetricsTwiceOnOneRegistryFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	_, err = metrics.New(reg, metrics.Config{})
	var are prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &are)

	// A failure part-way unregisters what it registered: a second attempt
	// fails on the same clash again, not on an earlier metric.
	reg = prometheus.NewRegistry()
	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: metrics.NameBacklog, Help: "clash"})
	require.NoError(t, reg.Register(clash))
	for range 2 {
		_, err = metrics.New(reg, metrics.Config{})
		require.ErrorContains(t, err, metrics.NameBacklog)
		require.False(t, errors.As(err, &are), "no metric of the failed attempt stayed registered: %v", err)
	}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
}

func TestNewMetricsRejectsBadConfig(t *testing.T) {
	_, err := metrics.New(nil, metrics.Config{Buckets: []float64{1, 0.5}})
	require.ErrorContains(t, err, "nil prometheus.Registerer")
	require.ErrorContains(t, err, "strictly increasing")
	_, err = metrics.New(prometheus.NewRegistry(), metrics.Config{Buckets: []float64{}})
	require.ErrorContains(t, err, "config.Buckets is empty")
}

// obsReporter is a scripted consumer.BacklogReporter: each call announces
// itself on calls, waits for release, then returns the next answer (the last
// one repeats).
type obsReporter struct {
	mu      sync.Mutex
	answers []obsAnswer
	n       int
	calls   chan int
	release chan struct{}
}

type obsAnswer struct {
	lines []consumer.Backlog
	err   error
}

func (r *obsReporter) Backlog(ctx context.Context) ([]consumer.Backlog, error) {
	r.mu.Lock()
	r.n++
	n := r.n
	a := r.answers[min(n, len(r.answers))-1]
	r.mu.Unlock()
	select {
	case r.calls <- n:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return a.lines, a.err
}

func TestPollBacklog(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	r := &obsReporter{calls: make(chan int), release: make(chan struct{}), answers: []obsAnswer{
		{lines: []consumer.Backlog{
			{Source: "payments", Partition: 0, Lag: 7, DeadLetters: -1},
			{Source: "payments", Partition: 1, Lag: 0, DeadLetters: -1},
			{Source: "payments", Partition: 2, Lag: 42, DeadLetters: -1},
			{Source: "payments", Partition: -1, Lag: -1, DeadLetters: 3},
		}},
		{err: errors.New("broker unreachable")},
		{lines: []consumer.Backlog{ // partition 2 revoked from this member
			{Source: "payments", Partition: 0, Lag: 5, DeadLetters: -1},
			{Source: "payments", Partition: 1, Lag: 1, DeadLetters: -1},
			{Source: "payments", Partition: -1, Lag: -1, DeadLetters: 0},
		}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.PollBacklog(ctx, r, "ledger", time.Millisecond) }()
	// poll lets call n return and waits until call n+1 has begun, so the
	// gauges hold exactly poll n's result.
	poll := func(n int) {
		t.Helper()
		r.release <- struct{}{}
		require.Equal(t, n+1, <-r.calls)
	}
	require.Equal(t, 1, <-r.calls)

	lag := func(p string) map[string]string {
		return map[string]string{"consumer": "ledger", "source": "payments", "partition": p}
	}
	dlq := map[string]string{"consumer": "ledger", "source": "payments"}
	errs := map[string]string{"consumer": "ledger"}
	poll(1)
	require.Equal(t, 7.0, obsValue(t, reg, metrics.NameBacklog, lag("0")))
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameBacklog, lag("1")))
	require.Equal(t, 42.0, obsValue(t, reg, metrics.NameBacklog, lag("2")))
	require.Nil(t, obsFind(t, reg, metrics.NameBacklog, lag("")), "unknown lag sets no series")
	require.Equal(t, 3.0, obsValue(t, reg, metrics.NameDeadLetters, dlq))
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameBacklogPollErrors, errs))

	poll(2) // fails and keeps the values
	require.Equal(t, 1.0, obsValue(t, reg, metrics.NameBacklogPollErrors, errs))
	require.Equal(t, 42.0, obsValue(t, reg, metrics.NameBacklog, lag("2")))

	poll(3)
	require.Equal(t, 5.0, obsValue(t, reg, metrics.NameBacklog, lag("0")))
	require.Equal(t, 1.0, obsValue(t, reg, metrics.NameBacklog, lag("1")))
	require.Nil(t, obsFind(t, reg, metrics.NameBacklog, lag("2")), "a partition no longer reported is removed")
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameDeadLetters, dlq))
	require.Len(t, obsSeries(t, reg, metrics.NameBacklog), 2)

	cancel()
	require.NoError(t, <-done)

	require.Error(t, m.PollBacklog(context.Background(), nil, "ledger", time.Second))
	require.Error(t, m.PollBacklog(context.Background(), r, "ledger", 0))
}

// obsBenchSource hands out n pre-built messages as fast as asked and closes
// done when all were acked.
type obsBenchSource struct {
	mu     sync.Mutex
	msgs   []*consumer.Message
	acked  atomic.Int64
	n      int64
	done   chan struct{}
	closed chan struct{}
	once   sync.Once
}

type obsBenchDelivery struct {
	s *obsBenchSource
	m *consumer.Message
}

func (d obsBenchDelivery) Message() *consumer.Message { return d.m }
func (d obsBenchDelivery) Ack(context.Context) error {
	if d.s.acked.Add(1) == d.s.n {
		close(d.s.done)
	}
	return nil
}
func (d obsBenchDelivery) Retry(context.Context, time.Duration, map[string]string) error {
	return errors.New("unexpected retry")
}
func (d obsBenchDelivery) DeadLetter(context.Context, map[string]string) error {
	return errors.New("unexpected dead letter")
}

func (s *obsBenchSource) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	s.mu.Lock()
	n := min(max, len(s.msgs))
	out := make([]consumer.Delivery, n)
	for i := range n {
		out[i] = obsBenchDelivery{s: s, m: s.msgs[i]}
	}
	s.msgs = s.msgs[n:]
	s.mu.Unlock()
	if n > 0 {
		return out, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.closed:
		return nil, consumer.ErrSourceClosed
	}
}

func (s *obsBenchSource) Close(context.Context) error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *obsBenchSource) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "kafka"}
}

// obsNoopObserver ignores the runtime's events.
type obsNoopObserver struct{}

func (obsNoopObserver) Settled(context.Context, consumer.Event) {}
func (obsNoopObserver) BreakerChanged(bool)                     {}

// obsDiscardExporter drops exported spans, as a collector that keeps up would.
type obsDiscardExporter struct{}

func (obsDiscardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (obsDiscardExporter) Shutdown(context.Context) error                             { return nil }

// Trace contexts of the benchmark's messages: a sampled and an unsampled
// producer span.
const (
	obsSampledParent   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	obsUnsampledParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
)

// obsBenchRun consumes n messages (carrying traceparent, 64 keys) with a
// no-op handler and returns the elapsed time and heap allocations.
func obsBenchRun(b *testing.B, n int, traceparent string, obs consumer.Observer, mws ...consumer.Middleware) (time.Duration, uint64) {
	b.Helper()
	src := &obsBenchSource{n: int64(n), done: make(chan struct{}), closed: make(chan struct{})}
	for i := range n {
		m := obstest.Msg(fmt.Sprint("m-", i))
		m.Key = fmt.Sprint(i % 64)
		m.Partition, m.Offset = int32(i%8), int64(i)
		m.Headers = map[string]string{consumer.HeaderTraceParent: traceparent}
		src.msgs = append(src.msgs, m)
	}
	noop := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	c, err := consumer.New(src, noop, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: "ledger", Observer: obs, Logger: slog.New(slog.DiscardHandler)}, mws...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	select {
	case <-src.done:
	case <-ctx.Done():
		b.Fatal("benchmark run timed out")
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	if err := <-runErr; err != nil {
		b.Fatal(err)
	}
	return elapsed, after.Mallocs - before.Mallocs
}

// BenchmarkObservabilityOverhead runs the consumer runtime with a no-op
// handler without and with the metrics observer and middleware and the tracing
// middleware (OTel SDK, batched to a discarding exporter; every span sampled,
// or none with _unsampled: NeverSample, or with _parent_unsampled the default
// ParentBased sampler and messages whose producer span was not sampled),
// alternating in the same run, and reports the
// instrumented throughput as a ratio of the baseline's (x_baseline; 0.9 means
// 10 % loss) and the added time per message (overhead_ns/msg). noop_observer
// measures what any Observer costs: the runtime then reads the clock twice
// per attempt to report handler durations.
func BenchmarkObservabilityOverhead(b *testing.B) {
	type instrument func(b *testing.B) (consumer.Observer, []consumer.Middleware, func())
	metrics := func(b *testing.B) (*metrics.Recorder, consumer.Observer) {
		m, err := metrics.New(prometheus.NewRegistry(), metrics.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return m, m
	}
	tracing := func(sampler sdktrace.Sampler) (consumer.Middleware, func()) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(obsDiscardExporter{}))
		return tracing.Middleware(tp, propagation.TraceContext{}), func() { _ = tp.Shutdown(context.Background()) }
	}
	cases := []struct {
		name        string
		inst        instrument
		traceparent string // of every message
	}{
		// The runtime times handlers only when an Observer is set: this
		// separates the cost of those clock reads from that of Metrics.
		{"noop_observer", func(*testing.B) (consumer.Observer, []consumer.Middleware, func()) {
			return obsNoopObserver{}, nil, func() {}
		}, obsSampledParent},
		{"metrics", func(b *testing.B) (consumer.Observer, []consumer.Middleware, func()) {
			m, obs := metrics(b)
			return obs, []consumer.Middleware{m.Middleware}, func() {}
		}, obsSampledParent},
		{"tracing", func(b *testing.B) (consumer.Observer, []consumer.Middleware, func()) {
			mw, stop := tracing(sdktrace.AlwaysSample())
			return nil, []consumer.Middleware{mw}, stop
		}, obsSampledParent},
		{"metrics+tracing", func(b *testing.B) (consumer.Observer, []consumer.Middleware, func()) {
			m, obs := metrics(b)
			mw, stop := tracing(sdktrace.AlwaysSample())
			return obs, []consumer.Middleware{mw, m.Middleware}, stop
		}, obsSampledParent},
		{"metrics+tracing_unsampled", func(b *testing.B) (consumer.Observer, []consumer.Middleware, func()) {
			m, obs := metrics(b)
			mw, stop := tracing(sdktrace.NeverSample())
			return obs, []consumer.Middleware{mw, m.Middleware}, stop
		}, obsSampledParent},
		{"tracing_unsampled", func(b *testing.B) (consumer.Observer, []consumer.Middleware, func()) {
			mw, stop := tracing(sdktrace.NeverSample())
			return nil, []consumer.Middleware{mw}, stop
		}, obsSampledParent},
		{"tracing_parent_unsampled", func(b *testing.B) (consumer.Observer, []consumer.Middleware, func()) {
			mw, stop := tracing(sdktrace.ParentBased(sdktrace.AlwaysSample()))
			return nil, []consumer.Middleware{mw}, stop
		}, obsUnsampledParent},
	}
	// Rounds alternate which run goes first, and the ratio reported is the
	// median of the rounds' ratios, so load from other processes skews it
	// little.
	const rounds = 8
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			n := max(b.N/rounds, 2000)
			var baseT, instT time.Duration
			var baseA, instA uint64
			ratios := make([]float64, 0, rounds)
			for r := range rounds {
				var bd, id time.Duration
				var ba, ia uint64
				runInst := func() {
					obs, mws, stop := tc.inst(b)
					id, ia = obsBenchRun(b, n, tc.traceparent, obs, mws...)
					stop()
				}
				if r%2 == 1 {
					runInst()
				}
				bd, ba = obsBenchRun(b, n, tc.traceparent, nil)
				if r%2 == 0 {
					runInst()
				}
				baseT, baseA, instT, instA = baseT+bd, baseA+ba, instT+id, instA+ia
				ratios = append(ratios, bd.Seconds()/id.Seconds())
			}
			slices.Sort(ratios)
			total := float64(rounds * n)
			b.ReportMetric(total/baseT.Seconds(), "base_msgs/s")
			b.ReportMetric(total/instT.Seconds(), "msgs/s")
			b.ReportMetric((ratios[rounds/2-1]+ratios[rounds/2])/2, "x_baseline")
			b.ReportMetric(float64(instT-baseT)/total, "overhead_ns/msg")
			b.ReportMetric(float64(baseA)/total, "base_allocs/msg")
			b.ReportMetric(float64(instA)/total, "allocs/msg")
		})
	}
}

func ExampleNew() {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{Consumer: "ledger"})
	if err != nil {
		panic(err)
	}
	// m is the consumer's Observer; m.Middleware times the handler.
	m.Settled(context.Background(), consumer.Event{Consumer: "ledger", Message: &consumer.Message{Source: "payments"}, Outcome: consumer.OutcomeProcessed})
	fmt.Println(testutil.CollectAndCount(reg, metrics.NameMessages), "outcome series")

	_, err = metrics.New(reg, metrics.Config{})
	fmt.Println(errors.As(err, new(prometheus.AlreadyRegisteredError)))
	// Output:
	// 6 outcome series
	// true
}

// The same run on adapters/memory, with duplicates found by Idempotency over
// store/memory, and the backlog read from the memory source at the end.
func TestMetricsOnMemoryBroker(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	claims, err := memstore.New(memstore.Config{})
	require.NoError(t, err)

	b := memory.NewBroker()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msgs := []*consumer.Message{{ID: "dup", Key: "dup"}, {ID: "dup", Key: "dup"}, {ID: "flaky"}, {ID: "poison"}, {ID: "perm"}}
	for i := range 5 {
		msgs = append(msgs, &consumer.Message{ID: fmt.Sprint("ok-", i)})
	}
	require.NoError(t, b.Publish(ctx, "payments", msgs...))

	h := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		switch {
		case msg.ID == "flaky" && msg.Attempt == 1:
			return errors.New("flaky")
		case msg.ID == "poison":
			return errors.New("poison")
		case msg.ID == "perm":
			return consumer.Permanent(errors.New("bad payload"))
		}
		return nil
	})
	src := b.NewSource("payments", "ledger")
	cfg := obstest.FastConfig()
	cfg.Observer = m.Observer("ledger")
	cfg.Duplicates = consumer.Duplicates{} // the chain deduplicates
	c, err := consumer.New(src, h, cfg, m.Middleware, middleware.Idempotency(claims))
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	require.Eventually(t, func() bool {
		return b.Depth("payments") == 0 && b.InFlight("payments") == 0 && len(b.DeadLetters("payments", "ledger")) == 2
	}, 10*time.Second, time.Millisecond, "every message is settled")

	// A checkpoint of the backlog: nothing left, two dead letters.
	r := &obsReporter{calls: make(chan int), release: make(chan struct{}), answers: []obsAnswer{{}}}
	pctx, stopPoll := context.WithCancel(ctx)
	polled := make(chan error, 1)
	go func() {
		polled <- m.PollBacklog(pctx, obsForward{src.(consumer.BacklogReporter), r}, "ledger", time.Millisecond)
	}()
	require.Equal(t, 1, <-r.calls)
	r.release <- struct{}{}
	require.Equal(t, 2, <-r.calls)
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameBacklog, map[string]string{"consumer": "ledger", "source": "payments", "partition": ""}))
	require.Equal(t, 2.0, obsValue(t, reg, metrics.NameDeadLetters, map[string]string{"consumer": "ledger", "source": "payments"}))
	stopPoll()
	require.NoError(t, <-polled)

	require.NoError(t, c.Stop(ctx))
	require.NoError(t, <-runErr)

	want := map[consumer.Outcome]float64{
		consumer.OutcomeProcessed:    7, // 5 ok, the first dup, flaky on attempt 2
		consumer.OutcomeDuplicate:    1, // the second dup
		consumer.OutcomeRetried:      3, // flaky once, poison twice
		consumer.OutcomeDeadLettered: 2, // poison exhausted, perm
		consumer.OutcomeFailed:       0,
		consumer.OutcomeAbandoned:    0,
	}
	require.Len(t, obsSeries(t, reg, metrics.NameMessages), len(want))
	for outcome, n := range want {
		got := obsValue(t, reg, metrics.NameMessages, map[string]string{"consumer": "ledger", "outcome": string(outcome), "source": "payments"})
		require.Equal(t, n, got, "outcome %s", outcome)
	}
}

// obsForward answers with r's backlog, announcing each call on gate first
// (gate's own answers are ignored).
type obsForward struct {
	r    consumer.BacklogReporter
	gate *obsReporter
}

func (f obsForward) Backlog(ctx context.Context) ([]consumer.Backlog, error) {
	if _, err := f.gate.Backlog(ctx); err != nil {
		return nil, err
	}
	return f.r.Backlog(ctx)
}

func TestMetricsInFlightOnlyWithMiddleware(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	m.Settled(context.Background(), consumer.Event{Consumer: "ledger", Message: obstest.Msg("a"), Outcome: consumer.OutcomeProcessed, Duration: time.Millisecond})
	require.Empty(t, obsSeries(t, reg, metrics.NameInFlight), "without the Middleware nobody counts handlers")
	hist := obsFind(t, reg, metrics.NameHandlerDuration, map[string]string{"consumer": "ledger", "source": "payments"})
	require.Equal(t, uint64(1), hist.GetHistogram().GetSampleCount())
	require.InDelta(t, 0.001, hist.GetHistogram().GetSampleSum(), 1e-9)

	h := m.Middleware(consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }))
	require.NoError(t, h.Handle(consumer.WithName(context.Background(), "ledger"), obstest.Msg("b")))
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameInFlight, map[string]string{"consumer": "ledger", "source": "payments"}))
}

// The duration histogram places every observation in the bucket
// prometheus.Histogram places it in, bounds included, and a last bound of
// +Inf is implied as there.
func TestMetricsHistogramMatchesPrometheus(t *testing.T) {
	for _, buckets := range [][]float64{nil, {0.001, 0.25, 1, math.Inf(+1)}} {
		reg := prometheus.NewPedanticRegistry()
		m, err := metrics.New(reg, metrics.Config{Buckets: buckets})
		require.NoError(t, err)
		refBuckets := buckets
		if refBuckets == nil {
			refBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
		}
		ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ref", Buckets: refBuckets})

		var durations []time.Duration
		for _, b := range refBuckets {
			if math.IsInf(b, +1) {
				continue
			}
			d := time.Duration(b * float64(time.Second))
			durations = append(durations, d-1, d, d+1)
		}
		durations = append(durations, 1, time.Minute, time.Duration(math.MaxInt64))
		for _, d := range durations {
			m.Settled(context.Background(), consumer.Event{Consumer: "ledger", Message: obstest.Msg("a"), Outcome: consumer.OutcomeProcessed, Duration: d})
			ref.Observe(d.Seconds())
		}
		var want dto.Metric
		require.NoError(t, ref.Write(&want))
		got := obsFind(t, reg, metrics.NameHandlerDuration, map[string]string{"consumer": "ledger", "source": "payments"}).GetHistogram()
		require.Equal(t, want.GetHistogram().GetSampleCount(), got.GetSampleCount())
		require.InEpsilon(t, want.GetHistogram().GetSampleSum(), got.GetSampleSum(), 1e-12)
		require.Len(t, got.GetBucket(), len(want.GetHistogram().GetBucket()))
		for i, wb := range want.GetHistogram().GetBucket() {
			require.Equal(t, wb.GetUpperBound(), got.GetBucket()[i].GetUpperBound())
			require.Equal(t, wb.GetCumulativeCount(), got.GetBucket()[i].GetCumulativeCount(), "bucket le=%g", wb.GetUpperBound())
		}
		require.Equal(t, float64(len(durations)), obsValue(t, reg, metrics.NameMessages, map[string]string{"consumer": "ledger", "outcome": "processed", "source": "payments"}))
	}
}

// Outcomes the runtime does not report are counted all the same, and
// their durations observed.
func TestMetricsCountsOtherOutcomes(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	for range 3 {
		m.Settled(context.Background(), consumer.Event{Consumer: "ledger", Message: obstest.Msg("a"), Outcome: "skipped", Duration: time.Second})
	}
	require.Equal(t, 3.0, obsValue(t, reg, metrics.NameMessages, map[string]string{"consumer": "ledger", "outcome": "skipped", "source": "payments"}))
	require.Len(t, obsSeries(t, reg, metrics.NameMessages), 7)
	hist := obsFind(t, reg, metrics.NameHandlerDuration, map[string]string{"consumer": "ledger", "source": "payments"}).GetHistogram()
	require.Equal(t, uint64(3), hist.GetSampleCount())
	require.Equal(t, 3.0, hist.GetSampleSum())
}

// Recording from many goroutines while scrapes run loses no count, and the
// in-flight gauge returns to zero.
func TestMetricsConcurrentExactCounts(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	h := m.Middleware(consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }))
	ctx := consumer.WithName(context.Background(), "ledger")
	const workers, each = 8, 500
	var wg sync.WaitGroup
	stop := make(chan struct{})
	scraped := make(chan error, 1)
	go func() {
		defer close(scraped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				scraped <- err
				return
			}
		}
	}()
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				msg := obstest.Msg("a")
				if w%2 == 1 {
					msg.Source = "payments.retry"
				}
				if err := h.Handle(ctx, msg); err != nil {
					panic(err)
				}
				m.Settled(ctx, consumer.Event{Consumer: "ledger", Message: msg, Outcome: outcomesCycle[i%len(outcomesCycle)], Duration: time.Duration(i+1) * time.Microsecond})
			}
		})
	}
	wg.Wait()
	close(stop)
	require.NoError(t, <-scraped)
	for _, source := range []string{"payments", "payments.retry"} {
		labels := map[string]string{"consumer": "ledger", "source": source}
		for _, o := range outcomesCycle {
			got := obsValue(t, reg, metrics.NameMessages, map[string]string{"consumer": "ledger", "outcome": string(o), "source": source})
			require.Equal(t, float64(workers/2*each/len(outcomesCycle)), got, "%s %s", source, o)
		}
		hist := obsFind(t, reg, metrics.NameHandlerDuration, labels).GetHistogram()
		require.Equal(t, uint64(workers/2*each), hist.GetSampleCount())
		require.InDelta(t, float64(workers/2)*float64(each*(each+1)/2)*1e-6, hist.GetSampleSum(), 1e-9)
		require.Equal(t, 0.0, obsValue(t, reg, metrics.NameInFlight, labels))
	}
}

var outcomesCycle = []consumer.Outcome{
	consumer.OutcomeProcessed, consumer.OutcomeDuplicate, consumer.OutcomeRetried,
	consumer.OutcomeDeadLettered, consumer.OutcomeFailed,
}

// Copies the adapter trimmed to fit the broker are counted per outcome;
// untrimmed ones are not.
func TestMetricsCountsTrimmedCopies(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	ctx := context.Background()
	m.Settled(ctx, consumer.Event{Consumer: "ledger", Message: obstest.Msg("a"), Outcome: consumer.OutcomeDeadLettered, Trimmed: true})
	m.Settled(ctx, consumer.Event{Consumer: "ledger", Message: obstest.Msg("b"), Outcome: consumer.OutcomeDeadLettered, Trimmed: true})
	m.Settled(ctx, consumer.Event{Consumer: "ledger", Message: obstest.Msg("c"), Outcome: consumer.OutcomeRetried, Trimmed: true})
	m.Settled(ctx, consumer.Event{Consumer: "ledger", Message: obstest.Msg("d"), Outcome: consumer.OutcomeDeadLettered})
	require.Equal(t, 2.0, obsValue(t, reg, metrics.NameCopiesTrimmed, map[string]string{"consumer": "ledger", "outcome": "dead_lettered", "source": "payments"}))
	require.Equal(t, 1.0, obsValue(t, reg, metrics.NameCopiesTrimmed, map[string]string{"consumer": "ledger", "outcome": "retried", "source": "payments"}))
}

// BenchmarkRecorderSettled and BenchmarkRecorderMiddleware time one Settled
// call and one pass through Middleware (over a no-op handler) on one series,
// as a consumer calls them for every message.
func BenchmarkRecorderSettled(b *testing.B) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Config{})
	require.NoError(b, err)
	var obs consumer.Observer = m
	ev := consumer.Event{Consumer: "ledger", Message: &consumer.Message{ID: "m", Source: "payments"},
		Outcome: consumer.OutcomeProcessed, Duration: 700 * time.Nanosecond}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		obs.Settled(ctx, ev)
	}
}

func BenchmarkRecorderMiddleware(b *testing.B) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Config{})
	require.NoError(b, err)
	h := m.Middleware(consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }))
	msg := &consumer.Message{ID: "m", Source: "payments"}
	ctx := consumer.WithAttemptState(consumer.WithName(context.Background(), "ledger"))
	b.ReportAllocs()
	for b.Loop() {
		if err := h.Handle(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMetricsInFlightBatch counts a running batch's messages. Bug caught: a
// batch of 3 counted as one handler in flight, or not counted down.
func TestMetricsInFlightBatch(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	h, ok := m.Middleware(consumer.BatchHandlerFunc(func(context.Context, []*consumer.Message) error {
		close(entered)
		<-release
		return nil
	})).(consumer.BatchHandler)
	require.True(t, ok, "around a BatchHandler the middleware is one")
	done := make(chan error, 1)
	go func() {
		done <- h.HandleBatch(consumer.WithName(context.Background(), "ledger"), []*consumer.Message{obstest.Msg("a"), obstest.Msg("b"), obstest.Msg("c")})
	}()
	<-entered
	labels := map[string]string{"consumer": "ledger", "source": "payments"}
	require.Equal(t, 3.0, obsValue(t, reg, metrics.NameInFlight, labels))
	close(release)
	require.NoError(t, <-done)
	require.Equal(t, 0.0, obsValue(t, reg, metrics.NameInFlight, labels))
}
