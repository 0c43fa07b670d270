package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncely/oncely/consumer"
)

// NameDuplicatesAllowed is the gauge Duplicates sets: 1 with the reason label
// while a consumer runs with consumer.AllowDuplicates (no idempotency
// middleware), 0 with an empty reason while it deduplicates.
const NameDuplicatesAllowed = "oncely_consumer_duplicates_allowed"

func newDuplicatesGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: NameDuplicatesAllowed,
		Help: "1 while the consumer runs without an idempotency middleware (consumer.AllowDuplicates), labelled with the reason it gave; 0 while it deduplicates.",
	}, []string{"consumer", "reason"})
}

// Duplicates exports d, a consumer's Config.Duplicates (Consumer.Duplicates),
// as oncely_consumer_duplicates_allowed{consumer,reason}: 1 with d's reason
// when d allows duplicates, else 0 with reason "". It replaces the series
// an earlier call set for consumerName, so a consumer has one at a time.
// Nothing is exported for a consumer until Duplicates is called for it.
func (m *Recorder) Duplicates(consumerName string, d consumer.Duplicates) {
	m.duplicates.DeletePartialMatch(prometheus.Labels{"consumer": consumerName})
	if d.Allowed() {
		m.duplicates.WithLabelValues(consumerName, d.Reason()).Set(1)
		return
	}
	m.duplicates.WithLabelValues(consumerName, "").Set(0)
}
