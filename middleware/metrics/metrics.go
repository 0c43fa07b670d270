// Package metrics records oncely's Prometheus metrics: a Recorder is the
// consumer.Observer of message outcomes, handler durations and breaker
// state, a Middleware counting handlers in flight, and a poller of backlog
// and dead-letter depth. Handler serves a registry for scraping. Programs
// that do not import this package do not link Prometheus.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oncely/oncely/consumer"
)

// Names of the metrics a Recorder exports. They follow the Prometheus conventions:
// counters end in _total, durations are in seconds, counts of messages in
// _messages.
const (
	NameMessages          = "oncely_messages_total"
	NameHandlerDuration   = "oncely_handler_duration_seconds"
	NameInFlight          = "oncely_messages_in_flight"
	NameBreakerOpen       = "oncely_breaker_open"
	NameBreakerOpens      = "oncely_breaker_opens_total"
	NameBacklog           = "oncely_backlog_messages"
	NameDeadLetters       = "oncely_dead_letter_messages"
	NameBacklogPollErrors = "oncely_backlog_poll_errors_total"
	NameCopiesTrimmed     = "oncely_copies_trimmed_total"
)

// defaultBuckets are the handler duration histogram's default buckets.
func defaultBuckets() []float64 {
	return []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
}

// Config configures New. The zero value is valid.
type Config struct {
	// Buckets are the upper bounds, in seconds, of the handler duration
	// histogram's buckets, strictly increasing. Defaults to 0.5ms (a claim and
	// a no-op), 1ms, 2.5ms, 5ms, 10ms, 25ms, 50ms, 100ms, 250ms, 500ms, 1s,
	// 2.5s, 5s, 10s and 30s (the default settle timeout).
	Buckets []float64

	// Consumer labels the breaker metrics when *Recorder itself is passed as
	// consumer.Config.Observer (the Observer interface's BreakerChanged does
	// not name its consumer). A process that runs several consumers on one
	// registry passes Observer(name) to each instead. When set, the breaker
	// gauge of this consumer exists (at 0) from the start. Defaults to "".
	Consumer string

	// Logger receives backlog polling errors. Defaults to slog.Default().
	Logger *slog.Logger
}

// outcomes are the values of the outcome label, all initialised to zero
// when a (source, consumer) pair is first seen so that rate() sees the first
// increment. outcomeIndex maps them to their position.
var outcomes = [...]consumer.Outcome{
	consumer.OutcomeProcessed,
	consumer.OutcomeDuplicate,
	consumer.OutcomeRetried,
	consumer.OutcomeDeadLettered,
	consumer.OutcomeFailed,
	consumer.OutcomeAbandoned,
}

func outcomeIndex(o consumer.Outcome) int {
	switch o {
	case consumer.OutcomeProcessed:
		return 0
	case consumer.OutcomeDuplicate:
		return 1
	case consumer.OutcomeRetried:
		return 2
	case consumer.OutcomeDeadLettered:
		return 3
	case consumer.OutcomeFailed:
		return 4
	case consumer.OutcomeAbandoned:
		return 5
	}
	return -1
}

// Recorder records the runtime's Prometheus metrics. It is a consumer.Observer
// (pass it as consumer.Config.Observer: message outcomes, handler duration and
// breaker state) and provides Middleware (handlers in flight) and PollBacklog
// (lag and dead-letter depth). It is safe for concurrent use by any number of
// consumers. Recording an attempt allocates nothing, reads no clock (the
// duration is the one the runtime measured, consumer.Event.Duration) and costs
// four atomic additions: one counter for the outcome and duration bucket, the
// duration sum, and the in-flight count's increment and decrement.
//
// The metrics, all labelled by consumer and most by source (the Message.Source,
// so a retry topic or queue is its own source):
//
//   - oncely_messages_total{source,consumer,outcome}: counter of attempt
//     outcomes: processed, duplicate, retried, dead_lettered, failed (an
//     outage or a failed settlement; the delivery is tried again) and
//     abandoned (hard stop or lost lease; the broker redelivers).
//   - oncely_handler_duration_seconds{source,consumer}: histogram of the
//     time the handler chain ran, per attempt whose handler ran (Event.Duration
//     > 0), from the Observer.
//   - oncely_messages_in_flight{source,consumer}: gauge of handlers running,
//     from Middleware (absent for series Middleware never saw).
//   - oncely_breaker_open{consumer}: 1 while the breaker pauses intake, else 0.
//   - oncely_breaker_opens_total{consumer}: counter of breaker openings.
//   - oncely_backlog_messages{source,consumer,partition}: Kafka lag per
//     partition, or queue depth (partition ""), from PollBacklog.
//   - oncely_dead_letter_messages{source,consumer}: dead-letter depth, from
//     PollBacklog.
//   - oncely_backlog_poll_errors_total{consumer}: failed Backlog calls.
//   - oncely_copies_trimmed_total{source,consumer,outcome}: retry (outcome
//     retried) and dead-letter (dead_lettered) copies the adapter trimmed to
//     fit the broker's size limit (consumer.FitCopy): failure headers cut, or
//     a dead letter's body replaced by its size and SHA-256.
//   - oncely_consumer_duplicates_allowed{consumer,reason}: 1 while the
//     consumer runs without idempotency (consumer.AllowDuplicates, with its
//     reason), 0 while it deduplicates; from Duplicates.
//
// A scrape reads each series' counts one by one while attempts may be
// recorded: the histogram's count is always the sum of its buckets, but its
// sum may not include yet an observation its buckets include, or the
// reverse, until the next scrape.
type Recorder struct {
	attempts    attemptCollector
	breakerOpen *prometheus.GaugeVec
	breakerOps  *prometheus.CounterVec
	backlog     *prometheus.GaugeVec
	deadLetters *prometheus.GaugeVec
	pollErrors  *prometheus.CounterVec
	trimmed     *prometheus.CounterVec
	duplicates  *prometheus.GaugeVec // see Duplicates
	consumer    string
	log         *slog.Logger

	bounds []float64 // the histogram's upper bounds, without +Inf
	limits []int64   // per bound, the longest Duration whose Seconds() is within it

	series sync.Map               // seriesKey → *series
	last   atomic.Pointer[series] // the series used last, checked first
}

// New creates the metrics and registers them on reg. It returns an
// error, and leaves reg as it was, when reg is nil, cfg is invalid, or any
// metric is already registered there (so registering twice on one registry
// fails with an error wrapping prometheus.AlreadyRegisteredError).
func New(reg prometheus.Registerer, cfg Config) (*Recorder, error) {
	var errs []error
	if reg == nil {
		errs = append(errs, errors.New("nil prometheus.Registerer"))
	}
	if cfg.Buckets == nil {
		cfg.Buckets = defaultBuckets()
	}
	if len(cfg.Buckets) == 0 {
		errs = append(errs, errors.New("config.Buckets is empty"))
	}
	for i := 1; i < len(cfg.Buckets); i++ {
		if cfg.Buckets[i] <= cfg.Buckets[i-1] {
			errs = append(errs, fmt.Errorf("config.Buckets must be strictly increasing, got %v", cfg.Buckets))
			break
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("oncely: invalid metrics config: %w", errors.Join(errs...))
	}

	m := &Recorder{
		attempts: attemptCollector{
			messages: prometheus.NewDesc(NameMessages,
				"Delivery attempts by outcome: processed, duplicate, retried, dead_lettered, failed (held and tried again), abandoned (left to the broker to redeliver).",
				[]string{"source", "consumer", "outcome"}, nil),
			duration: prometheus.NewDesc(NameHandlerDuration,
				"Time the handler chain ran per delivery attempt, in seconds, as the runtime measured it.",
				[]string{"source", "consumer"}, nil),
			inFlight: prometheus.NewDesc(NameInFlight, "Messages whose handler chain is running.", []string{"source", "consumer"}, nil),
		},
		breakerOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameBreakerOpen,
			Help: "1 while the consumer's breaker pauses intake after consecutive outage failures, else 0.",
		}, []string{"consumer"}),
		breakerOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameBreakerOpens,
			Help: "Times the consumer's breaker opened.",
		}, []string{"consumer"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameBacklog,
			Help: "Messages not yet processed: Kafka end offset minus committed offset per partition, or queue depth (partition empty).",
		}, []string{"source", "consumer", "partition"}),
		deadLetters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameDeadLetters,
			Help: "Messages in the consumer's dead-letter destination.",
		}, []string{"source", "consumer"}),
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameBacklogPollErrors,
			Help: "Backlog polls that failed; the backlog gauges keep their last values meanwhile.",
		}, []string{"consumer"}),
		trimmed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameCopiesTrimmed,
			Help: "Retry and dead-letter copies trimmed to fit the broker's size limit (failure headers cut, or a dead letter's body replaced by its size and SHA-256).",
		}, []string{"source", "consumer", "outcome"}),
		duplicates: newDuplicatesGauge(),
		consumer:   cfg.Consumer,
		log:        cfg.Logger,
	}
	m.attempts.m = m
	// As prometheus.NewHistogram does, a last bound of +Inf is implied.
	m.bounds = cfg.Buckets
	if math.IsInf(m.bounds[len(m.bounds)-1], +1) {
		m.bounds = m.bounds[:len(m.bounds)-1]
	}
	m.limits = make([]int64, len(m.bounds))
	for i, b := range m.bounds {
		m.limits[i] = durationWithin(b)
	}
	collectors := []prometheus.Collector{m.attempts, m.breakerOpen, m.breakerOps, m.backlog, m.deadLetters, m.pollErrors, m.trimmed, m.duplicates}
	for i, c := range collectors {
		if err := reg.Register(c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("oncely: registering metrics: %w", err)
		}
	}
	if cfg.Consumer != "" {
		m.initBreaker(cfg.Consumer)
	}
	return m, nil
}

func (m *Recorder) initBreaker(name string) {
	m.breakerOpen.WithLabelValues(name)
	m.breakerOps.WithLabelValues(name)
}

// Settled counts ev under its source, consumer and outcome, and observes
// ev.Duration when the handler ran. It implements consumer.Observer and never
// blocks.
func (m *Recorder) Settled(_ context.Context, ev consumer.Event) {
	source := ""
	if ev.Message != nil {
		source = ev.Message.Source
	}
	s := m.seriesFor(source, ev.Consumer)
	row := outcomeIndex(ev.Outcome)
	if row < 0 {
		row = len(outcomes)
		s.mu.Lock()
		if s.other == nil {
			s.other = make(map[consumer.Outcome]uint64)
		}
		s.other[ev.Outcome]++
		s.mu.Unlock()
	}
	col := len(s.limits) + 1
	if d := ev.Duration; d > 0 {
		col = 0
		for col < len(s.limits) && int64(d) > s.limits[col] {
			col++
		}
		s.sum.Add(uint64(d))
	}
	s.counts[row*s.cols+col].Add(1)
	if ev.Trimmed {
		m.trimmed.WithLabelValues(source, ev.Consumer, string(ev.Outcome)).Inc()
	}
}

// BreakerChanged records the breaker state under Config.Consumer. It
// implements consumer.Observer.
func (m *Recorder) BreakerChanged(open bool) { m.breakerChanged(m.consumer, open) }

func (m *Recorder) breakerChanged(name string, open bool) {
	if open {
		m.breakerOpen.WithLabelValues(name).Set(1)
		m.breakerOps.WithLabelValues(name).Inc()
		return
	}
	m.breakerOpen.WithLabelValues(name).Set(0)
}

// Observer returns a consumer.Observer recording into m whose breaker
// metrics carry consumerName, for processes running several consumers on one
// registry. Its breaker gauge starts at 0.
func (m *Recorder) Observer(consumerName string) consumer.Observer {
	m.initBreaker(consumerName)
	return namedObserver{m: m, name: consumerName}
}

type namedObserver struct {
	m    *Recorder
	name string
}

func (o namedObserver) Settled(ctx context.Context, ev consumer.Event) { o.m.Settled(ctx, ev) }
func (o namedObserver) BreakerChanged(open bool)                       { o.m.breakerChanged(o.name, open) }

// Middleware counts the handlers running in oncely_messages_in_flight,
// labelled by the message's Source and the consumer name the runtime puts in
// the context. Handler durations come from the Observer side (Settled), which
// reuses the runtime's own measurement.
//
// Around a consumer.BatchHandler it returns one, which counts every message
// of a running batch.
func (m *Recorder) Middleware(next consumer.Handler) consumer.Handler {
	if bnext, ok := next.(consumer.BatchHandler); ok {
		return &batchMiddleware{m: m, next: bnext}
	}
	return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		s := m.seriesFor(msg.Source, consumer.NameFromContext(ctx))
		if !s.counted.Load() {
			s.counted.Store(true)
		}
		s.running.Add(1)
		defer s.running.Add(-1)
		return next.Handle(ctx, msg)
	})
}

// batchMiddleware is Recorder.Middleware around a BatchHandler.
type batchMiddleware struct {
	m    *Recorder
	next consumer.BatchHandler
}

func (h *batchMiddleware) Handle(ctx context.Context, msg *consumer.Message) error {
	return consumer.HandleOne(ctx, h, msg)
}

func (h *batchMiddleware) HandleBatch(ctx context.Context, msgs []*consumer.Message) error {
	name := consumer.NameFromContext(ctx)
	counted := map[*series]int64{}
	for _, msg := range msgs {
		counted[h.m.seriesFor(msg.Source, name)]++
	}
	for s, n := range counted {
		if !s.counted.Load() {
			s.counted.Store(true)
		}
		s.running.Add(n)
	}
	defer func() {
		for s, n := range counted {
			s.running.Add(-n)
		}
	}()
	return h.next.HandleBatch(ctx, msgs)
}

// Handler serves g's metrics for scraping, in the OpenMetrics format when
// the scraper asks for it, else in the text format; pass it to
// middleware.ListenOps or middleware.OpsHandler.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true})
}
