package metrics

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncely/oncely/consumer"
)

type seriesKey struct{ source, consumer string }

// series holds the counts of one (source, consumer) pair: outcomes, handler
// durations and handlers running. They are plain atomic integers, cheaper to
// update than prometheus.Counter, Histogram and Gauge (a histogram
// observation there is a float compare-and-swap loop plus two more atomic
// additions), and exported by attemptCollector with the same names, types,
// labels and values.
//
// One counter per (outcome, duration bucket) pair makes an attempt one
// atomic addition there, plus one to the duration sum: an outcome's count
// is the sum of its row, a bucket's the sum of its column.
//
// Clever code kept by the project's rule (≥ 3 % on a broker-backed
// benchmark): with plain CounterVec, HistogramVec and GaugeVec looked up by
// WithLabelValues on every message instead (≈ 200 ns more a message), the
// Kafka BenchmarkObservability's steady metrics rate fell from 0.81–1.11 to
// 0.49–0.62 of bare (docs/benchmarks-log.md, "Complexity that pays for itself").
type series struct {
	// Updated on every attempt, together so that it touches few cache lines.
	running atomic.Int64  // handlers in flight
	sum     atomic.Uint64 // handler durations observed, in nanoseconds
	counted atomic.Bool   // Middleware saw this series: export running
	limits  []int64       // Recorder.limits
	// counts[row*cols+col]: row is the outcome's index in outcomes, or
	// len(outcomes) for any other; col the duration's bucket (the last
	// one +Inf), or len(limits)+1 when the handler did not run.
	counts []atomic.Uint64
	cols   int

	source, consumer string
	created          time.Time // exported as the counters' and histogram's creation time

	mu    sync.Mutex
	other map[consumer.Outcome]uint64 // outcomes not in outcomes, if an Observer caller invents any
}

func (m *Recorder) seriesFor(source, name string) *series {
	if s := m.last.Load(); s != nil && s.source == source && s.consumer == name {
		return s
	}
	k := seriesKey{source, name}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &series{
			source:   source,
			consumer: name,
			created:  time.Now(),
			limits:   m.limits,
			counts:   make([]atomic.Uint64, (len(outcomes)+1)*(len(m.limits)+2)),
			cols:     len(m.limits) + 2,
		})
	}
	s := v.(*series)
	m.last.Store(s)
	return s
}

// durationWithin returns the longest positive Duration d with d.Seconds() <=
// bound, or 0 if there is none: comparing a Duration with it places an
// observation in exactly the bucket prometheus.Histogram would place
// d.Seconds() in. Seconds() never decreases as d grows, so a binary search
// finds it.
func durationWithin(bound float64) int64 {
	lo, hi := int64(0), int64(math.MaxInt64) // lo is within, hi is above or the maximum
	if time.Duration(hi).Seconds() <= bound {
		return hi
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if time.Duration(mid).Seconds() <= bound {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// attemptCollector exports every series' outcome counters, duration
// histogram and, for series Middleware saw, in-flight gauge.
type attemptCollector struct {
	m                            *Recorder
	messages, duration, inFlight *prometheus.Desc
}

func (c attemptCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.messages
	ch <- c.duration
	ch <- c.inFlight
}

func (c attemptCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.series.Range(func(_, v any) bool {
		s := v.(*series)
		counts := make([]uint64, len(s.counts))
		for i := range counts {
			counts[i] = s.counts[i].Load()
		}
		for row, o := range outcomes {
			var n uint64
			for _, k := range counts[row*s.cols : (row+1)*s.cols] {
				n += k
			}
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(c.messages, prometheus.CounterValue, float64(n), s.created, s.source, s.consumer, string(o))
		}
		s.mu.Lock()
		for o, n := range s.other {
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(c.messages, prometheus.CounterValue, float64(n), s.created, s.source, s.consumer, string(o))
		}
		s.mu.Unlock()

		sum := float64(s.sum.Load()) / float64(time.Second)
		bucket := func(col int) (n uint64) {
			for row := 0; row <= len(outcomes); row++ {
				n += counts[row*s.cols+col]
			}
			return n
		}
		cumulative := make(map[float64]uint64, len(c.m.bounds))
		var count uint64
		for col, b := range c.m.bounds {
			count += bucket(col)
			cumulative[b] = count
		}
		count += bucket(len(c.m.bounds))
		ch <- prometheus.MustNewConstHistogramWithCreatedTimestamp(c.duration, count, sum, cumulative, s.created, s.source, s.consumer)

		if s.counted.Load() { // without Middleware, do not claim zero handlers run
			ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(s.running.Load()), s.source, s.consumer)
		}
		return true
	})
}
