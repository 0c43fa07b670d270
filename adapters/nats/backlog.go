package nats

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
)

// Backlog reports the source's lag (messages the durable consumer has not
// been delivered yet plus those delivered and unacknowledged) with the
// dead-letter stream's depth, then the retry stream's lag (DeadLetters -1).
func (src *Source) Backlog(ctx context.Context) ([]consumer.Backlog, error) {
	return Backlog(ctx, src.js, src.cfg.Source, src.cfg.Consumer)
}

// Backlog is Source.Backlog for any client: it reads the consumer and
// stream info of source and consumerName without consuming.
func Backlog(ctx context.Context, js jetstream.JetStream, source, consumerName string) ([]consumer.Backlog, error) {
	dead, err := streamDepth(ctx, js, DeadLetterSubject(source, consumerName))
	if err != nil {
		return nil, err
	}
	var out []consumer.Backlog
	for i, subject := range []string{source, RetrySubject(source, consumerName)} {
		lag, err := consumerLag(ctx, js, subject, consumerName)
		if err != nil {
			return nil, err
		}
		b := consumer.Backlog{Source: subject, Partition: -1, Lag: lag, DeadLetters: -1}
		if i == 0 {
			b.DeadLetters = dead
		}
		out = append(out, b)
	}
	return out, nil
}

func consumerLag(ctx context.Context, js jetstream.JetStream, subject, name string) (int64, error) {
	c, err := js.Consumer(ctx, StreamName(subject), name)
	if err != nil {
		return 0, fmt.Errorf("nats: backlog: consumer %s on stream %s: %w", name, StreamName(subject), err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("nats: backlog: consumer %s on stream %s: %w", name, StreamName(subject), err)
	}
	return int64(info.NumPending) + int64(info.NumAckPending), nil
}

func streamDepth(ctx context.Context, js jetstream.JetStream, subject string) (int64, error) {
	s, err := js.Stream(ctx, StreamName(subject))
	if err != nil {
		return 0, fmt.Errorf("nats: backlog: stream %s: %w", StreamName(subject), err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("nats: backlog: stream %s: %w", StreamName(subject), err)
	}
	return int64(info.State.Msgs), nil
}
