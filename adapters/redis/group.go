package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// groupTimeout bounds the recreation of the consumer group after it
// vanished.
const groupTimeout = 10 * time.Second

// ensureGroups creates the group on the source and retry streams where it
// is missing (at ID 0, creating the streams: XGROUP CREATE … MKSTREAM).
func (s *Source) ensureGroups(ctx context.Context) error {
	for _, stream := range []string{s.cfg.Stream, s.retry} {
		err := s.client.XGroupCreateMkStream(ctx, stream, s.cfg.Consumer, "0").Err()
		if err != nil && !hasRedisPrefix(err, "BUSYGROUP") {
			return fmt.Errorf("redis: creating consumer group %q on %s: %w", s.cfg.Consumer, stream, err)
		}
	}
	return nil
}

// isNoGroup reports whether err, however wrapped, carries Redis's NOGROUP
// reply: the stream or the consumer group is gone (a Redis restarted
// without persistence, a deleted stream, XGROUP DESTROY). Commands and
// scripts (whose error replies keep the prefix) both answer it.
func isNoGroup(err error) bool { return hasRedisPrefix(err, "NOGROUP") }

// hasRedisPrefix reports whether an error reply of Redis in err's tree
// starts with prefix.
func hasRedisPrefix(err error, prefix string) bool {
	var rerr goredis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), prefix)
}

// recoverGroup recreates the consumer group when err says it is gone and
// reports whether it did: every entry pending with the group vanished with
// it, and the group starts again at ID 0 of what is left of the streams
// (entries already processed come back, and the idempotency claim absorbs
// them). Any Redis call of the Source may notice (reads, reclaims,
// renewals, settlement scripts), so intake never stops on it.
func (s *Source) recoverGroup(ctx context.Context, err error) bool {
	if !isNoGroup(err) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
	defer cancel()
	if gerr := s.ensureGroups(ctx); gerr != nil {
		s.log.WarnContext(ctx, "redis: the consumer group is gone and recreating it failed; trying again on the next call", "error", gerr)
		return false
	}
	s.groupEpoch.Add(1)
	s.log.WarnContext(ctx, "redis: the consumer group was gone (Redis restarted without persistence, or the stream or group was deleted); recreated it at the start of the stream", "error", err)
	return true
}
