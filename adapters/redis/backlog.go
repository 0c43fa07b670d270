package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/consumer"
)

// Backlog reports how far the Source's consumer name is behind (see
// Backlog).
func (s *Source) Backlog(ctx context.Context) ([]consumer.Backlog, error) {
	return Backlog(ctx, s.client, s.cfg.Stream, s.cfg.Consumer)
}

// Backlog reports how far consumer name consumerName is behind on stream,
// without joining its group, in one line: Lag counts the entries of the
// group not yet delivered, those pending, and the retry copies waiting
// (due in the retry stream or delayed), DeadLetters the dead-letter
// stream's length. A group that does not exist yet has every entry of the
// stream to read.
func Backlog(ctx context.Context, client goredis.UniversalClient, stream, consumerName string) ([]consumer.Backlog, error) {
	lag, err := groupLag(ctx, client, stream, consumerName)
	if err != nil {
		return nil, err
	}
	p := client.Pipeline()
	dlq := p.XLen(ctx, DeadLetterStream(stream, consumerName))
	retry := p.XLen(ctx, RetryStream(stream, consumerName))
	delayed := p.ZCard(ctx, DelayedKey(stream, consumerName))
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis: backlog of %s: %w", stream, err)
	}
	return []consumer.Backlog{{Source: stream, Partition: -1, Lag: lag + retry.Val() + delayed.Val(), DeadLetters: dlq.Val()}}, nil
}

// groupLag is the group's undelivered plus pending entries. Redis reports
// no lag after deletions in the middle of the stream; it is then counted
// from the group's last delivered ID.
func groupLag(ctx context.Context, client goredis.UniversalClient, stream, group string) (int64, error) {
	groups, err := client.XInfoGroups(ctx, stream).Result()
	if err != nil {
		if isNoKey(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("redis: backlog of %s: %w", stream, err)
	}
	for _, g := range groups {
		if g.Name != group {
			continue
		}
		if g.Lag >= 0 {
			return g.Lag + g.Pending, nil
		}
		n, err := client.XRange(ctx, stream, "("+g.LastDeliveredID, "+").Result()
		if err != nil {
			return 0, fmt.Errorf("redis: counting the undelivered entries of %s: %w", stream, err)
		}
		return int64(len(n)) + g.Pending, nil
	}
	n, err := client.XLen(ctx, stream).Result()
	if err != nil {
		return 0, fmt.Errorf("redis: backlog of %s: %w", stream, err)
	}
	return n, nil
}

// isNoKey reports Redis's error for XINFO on a missing key.
func isNoKey(err error) bool {
	return err != nil && err.Error() == "ERR no such key"
}
