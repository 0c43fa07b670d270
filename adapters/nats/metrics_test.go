package nats

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware/metrics"
)

// TestBacklogGauges: Backlog reports the source's undelivered plus
// unacknowledged messages and the dead-letter stream's depth, and the
// metrics poller turns them into oncely_backlog_messages and
// oncely_dead_letter_messages.
func TestBacklogGauges(t *testing.T) {
	c := connect(t)
	source := adaptertest.SourceName("gauges")
	cfg := Config{Source: source, Consumer: "gauges", Prefetch: 4}
	c.cleanup(t, source, cfg.Consumer)
	var msgs []*consumer.Message
	for _, id := range []string{"g1", "g2", "g3", "g4", "g5", "g6"} {
		msgs = append(msgs, &consumer.Message{ID: id, Body: []byte(id)})
	}
	c.publish(t, source, msgs...)
	src := c.newSource(t, cfg)
	defer closeSrc(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ds := adaptertest.ReceiveN(t, src, 3, adaptertest.WaitTimeout)
	if err := ds[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ds[1].DeadLetter(ctx, map[string]string{consumer.HeaderDeadLetterReason: consumer.ReasonPermanent, consumer.HeaderError: "bad"}); err != nil {
		t.Fatal(err)
	}
	// 6 published, 2 settled: 4 left (one held, the rest pending or buffered).

	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.PollBacklog(pctx, src, cfg.Consumer, 10*time.Millisecond) }()
	var lag, dlq, retryLag float64
	adaptertest.WaitUntil(t, adaptertest.WaitTimeout, "the gauges", func() bool {
		lag, dlq, retryLag = -1, -1, -1
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, mt := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range mt.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				switch {
				case mf.GetName() == metrics.NameBacklog && l["source"] == source:
					lag = mt.GetGauge().GetValue()
				case mf.GetName() == metrics.NameBacklog && l["source"] == RetrySubject(source, cfg.Consumer):
					retryLag = mt.GetGauge().GetValue()
				case mf.GetName() == metrics.NameDeadLetters && l["source"] == source:
					dlq = mt.GetGauge().GetValue()
				}
			}
		}
		return lag == 4 && dlq == 1 && retryLag == 0
	})
	stop()
	if err := <-done; err != nil {
		t.Errorf("PollBacklog: %v", err)
	}
}
