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
	// published again later).
	NamePublishFailures = "oncely_outbox_publish_failures_total"
	// NameDeleted counts published rows deleted by cleanup.
	NameDeleted = "oncely_outbox_deleted_total"
)

// relayMetrics is nil-safe: without a Registerer every method is a no-op.
type relayMetrics struct {
	depthG, ageG        prometheus.Gauge
	publishedC, failedC prometheus.Counter
	deletedC            prometheus.Counter
}

func newRelayMetrics(reg prometheus.Registerer, schema string) (*relayMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	labels := prometheus.Labels{"schema": schema}
	m := &relayMetrics{
		depthG:     prometheus.NewGauge(prometheus.GaugeOpts{Name: NameDepth, Help: "Outbox rows not yet published.", ConstLabels: labels}),
		ageG:       prometheus.NewGauge(prometheus.GaugeOpts{Name: NameOldestAge, Help: "Age in seconds of the oldest unpublished outbox row.", ConstLabels: labels}),
		publishedC: prometheus.NewCounter(prometheus.CounterOpts{Name: NamePublished, Help: "Outbox rows published and marked.", ConstLabels: labels}),
		failedC:    prometheus.NewCounter(prometheus.CounterOpts{Name: NamePublishFailures, Help: "Outbox rows whose publish failed (published again later).", ConstLabels: labels}),
		deletedC:   prometheus.NewCounter(prometheus.CounterOpts{Name: NameDeleted, Help: "Published outbox rows deleted by cleanup.", ConstLabels: labels}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.depthG, m.ageG, m.publishedC, m.failedC, m.deletedC} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("outbox: metrics: %w", err)
	}
	return m, nil
}

func (m *relayMetrics) depth(n int64, age time.Duration) {
	if m != nil {
		m.depthG.Set(float64(n))
		m.ageG.Set(age.Seconds())
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
