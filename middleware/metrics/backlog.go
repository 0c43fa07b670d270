package metrics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oncely/oncely/consumer"
)

// PollBacklog calls r.Backlog now and then every interval until ctx is done,
// and sets oncely_backlog_messages and oncely_dead_letter_messages from the
// answer, labelled with consumerName. Series missing from an answer (a Kafka
// partition revoked from this member) are removed; a failed poll is logged,
// counted in oncely_backlog_poll_errors_total and leaves the gauges as they
// were. Lines with a negative Lag or DeadLetters (unknown) set no value.
// PollBacklog blocks; run it in its own goroutine. It returns nil when ctx is
// done, or an error at once when r is nil or interval is not positive.
func (m *Recorder) PollBacklog(ctx context.Context, r consumer.BacklogReporter, consumerName string, interval time.Duration) error {
	if r == nil {
		return errors.New("oncely: PollBacklog: nil BacklogReporter")
	}
	if interval <= 0 {
		return fmt.Errorf("oncely: PollBacklog: interval must be > 0, got %s", interval)
	}
	m.pollErrors.WithLabelValues(consumerName)
	p := backlogPoller{m: m, consumer: consumerName, lag: map[[2]string]bool{}, dlq: map[string]bool{}}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		p.poll(ctx, r)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

type backlogPoller struct {
	m        *Recorder
	consumer string
	lag      map[[2]string]bool // {source, partition} set by the last poll
	dlq      map[string]bool    // sources set by the last poll
}

func (p *backlogPoller) poll(ctx context.Context, r consumer.BacklogReporter) {
	lines, err := r.Backlog(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		p.m.pollErrors.WithLabelValues(p.consumer).Inc()
		p.m.log.Warn("backlog poll failed; backlog metrics keep their last values", "consumer", p.consumer, "error", err)
		return
	}
	lag := make(map[[2]string]bool, len(lines))
	dlq := make(map[string]bool)
	for _, b := range lines {
		part := ""
		if b.Partition >= 0 {
			part = strconv.FormatInt(int64(b.Partition), 10)
		}
		if b.Lag >= 0 {
			p.m.backlog.WithLabelValues(b.Source, p.consumer, part).Set(float64(b.Lag))
			lag[[2]string{b.Source, part}] = true
		}
		if b.DeadLetters >= 0 {
			p.m.deadLetters.WithLabelValues(b.Source, p.consumer).Set(float64(b.DeadLetters))
			dlq[b.Source] = true
		}
	}
	for k := range p.lag {
		if !lag[k] {
			p.m.backlog.DeleteLabelValues(k[0], p.consumer, k[1])
		}
	}
	for s := range p.dlq {
		if !dlq[s] {
			p.m.deadLetters.DeleteLabelValues(s, p.consumer)
		}
	}
	p.lag, p.dlq = lag, dlq
}
