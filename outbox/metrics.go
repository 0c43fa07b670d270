package outbox

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names, each with the constant label schema.
const (
	// NameDepth is a gauge: unpublished rows (refreshed every
	// Config.MaintenanceInterval).
	NameDepth = "oncely_outbox_depth_messages"
	// NameOldestAge is a gauge: seconds since the oldest unpublished row was
	// written, 0 when none is.
	NameOldestAge = "oncely_outbox_oldest_unpublished_seconds"
	// NamePublished counts rows published and marked.
	NamePublished = "oncely_outbox_published_total"
	// NamePublishFailures counts rows whose Publish failed (each is
	// published again later, or dead-lettered after Config.Refused's
	// attempts).
	NamePublishFailures = "oncely_outbox_publish_failures_total"
	// NameRefused counts refusals of a row by the broker while other rows
	// of its destination passed: each row waits, holding its key, and is
	// tried again (dead-lettering refusals are counted by NameDeadLettered).
	NameRefused = "oncely_outbox_refused_total"
	// NameDeadLettered counts rows moved to outbox_dead after
	// Config.Refused's attempts.
	NameDeadLettered = "oncely_outbox_dead_lettered_total"
	// NameDeadDepth is a gauge: rows in outbox_dead (refreshed every
	// Config.MaintenanceInterval).
	NameDeadDepth = "oncely_outbox_dead_messages"
	// NameFailingDestinations is a gauge: destinations none of whose rows
	// passed since their last failure, each held with its own backoff.
	NameFailingDestinations = "oncely_outbox_failing_destinations"
	// NameDeleted counts published rows deleted by cleanup.
	NameDeleted = "oncely_outbox_deleted_total"
)

// relayMetrics is nil-safe: without a Registerer every method is a no-op.
type relayMetrics struct {
	depthG, ageG, deadG, failingG prometheus.Gauge
	publishedC, failedC           prometheus.Counter
	refusedC, deadLetteredC       prometheus.Counter
	deletedC                      prometheus.Counter
}

func newRelayMetrics(reg prometheus.Registerer, schema string) (*relayMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	labels := prometheus.Labels{"schema": schema}
	m := &relayMetrics{
		depthG:        prometheus.NewGauge(prometheus.GaugeOpts{Name: NameDepth, Help: "Outbox rows not yet published.", ConstLabels: labels}),
		ageG:          prometheus.NewGauge(prometheus.GaugeOpts{Name: NameOldestAge, Help: "Age in seconds of the oldest unpublished outbox row.", ConstLabels: labels}),
		publishedC:    prometheus.NewCounter(prometheus.CounterOpts{Name: NamePublished, Help: "Outbox rows published and marked.", ConstLabels: labels}),
		failedC:       prometheus.NewCounter(prometheus.CounterOpts{Name: NamePublishFailures, Help: "Outbox rows whose publish failed (published again later).", ConstLabels: labels}),
		deletedC:      prometheus.NewCounter(prometheus.CounterOpts{Name: NameDeleted, Help: "Published outbox rows deleted by cleanup.", ConstLabels: labels}),
		refusedC:      prometheus.NewCounter(prometheus.CounterOpts{Name: NameRefused, Help: "Outbox rows refused by the broker while others of their destination passed (tried again later).", ConstLabels: labels}),
		deadLetteredC: prometheus.NewCounter(prometheus.CounterOpts{Name: NameDeadLettered, Help: "Outbox rows moved to outbox_dead after their attempts.", ConstLabels: labels}),
		deadG:         prometheus.NewGauge(prometheus.GaugeOpts{Name: NameDeadDepth, Help: "Rows in outbox_dead.", ConstLabels: labels}),
		failingG:      prometheus.NewGauge(prometheus.GaugeOpts{Name: NameFailingDestinations, Help: "Destinations held because none of their rows passed since they last failed.", ConstLabels: labels}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.depthG, m.ageG, m.publishedC, m.failedC, m.deletedC, m.refusedC, m.deadLetteredC, m.deadG, m.failingG} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("outbox: metrics: %w", err)
	}
	return m, nil
}

func (m *relayMetrics) depth(n int64, age time.Duration, dead int64) {
	if m != nil {
		m.depthG.Set(float64(n))
		m.ageG.Set(age.Seconds())
		m.deadG.Set(float64(dead))
	}
}

func (m *relayMetrics) refused(n int) {
	if m != nil {
		m.refusedC.Add(float64(n))
	}
}

func (m *relayMetrics) deadLettered(n int) {
	if m != nil {
		m.deadLetteredC.Add(float64(n))
	}
}

func (m *relayMetrics) failingDestinations(n int) {
	if m != nil {
		m.failingG.Set(float64(n))
	}
}

func (m *relayMetrics) published(n int) {
	if m != nil {
		m.publishedC.Add(float64(n))
	}
}

func (m *relayMetrics) failed(n int) {
	if m != nil {
		m.failedC.Add(float64(n))
	}
}

func (m *relayMetrics) deleted(n int64) {
	if m != nil {
		m.deletedC.Add(float64(n))
	}
}
