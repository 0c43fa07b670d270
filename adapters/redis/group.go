package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/internal/startpos"
)

// groupTimeout bounds the recreation of the consumer group after it
// vanished.
const groupTimeout = 10 * time.Second

// ensureGroups creates the group on the source and retry streams where it
// is missing (creating the streams: XGROUP CREATE … MKSTREAM): on the
// source stream at sourceStart (groupStartID), on the retry stream at ID 0.
func (s *Source) ensureGroups(ctx context.Context, sourceStart startpos.Position) error {
	for _, stream := range []string{s.cfg.Stream, s.retry} {
		id := "0"
		if stream == s.cfg.Stream {
			id = groupStartID(sourceStart)
		}
		err := s.client.XGroupCreateMkStream(ctx, stream, s.cfg.Consumer, id).Err()
		if err != nil && !hasRedisPrefix(err, "BUSYGROUP") {
			return fmt.Errorf("redis: creating consumer group %q on %s: %w", s.cfg.Consumer, stream, err)
		}
	}
	return nil
}

// groupStartID is the last-delivered ID a group starting at p is created
// with: it gets the entries with a greater ID.
func groupStartID(p startpos.Position) string {
	switch {
	case p.Latest:
		return "$"
	case p.Time.IsZero() || p.Time.UnixMilli() <= 0:
		return "0"
	default:
		// Every entry added in the millisecond before p.Time is below it.
		return strconv.FormatInt(p.Time.UnixMilli()-1, 10) + "-18446744073709551615"
	}
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
	if gerr := s.ensureGroups(ctx, startpos.Position{}); gerr != nil {
		s.log.WarnContext(ctx, "redis: the consumer group is gone and recreating it failed; trying again on the next call", "error", gerr)
		return false
	}
	s.groupEpoch.Add(1)
	s.log.WarnContext(ctx, "redis: the consumer group was gone (Redis restarted without persistence, or the stream or group was deleted); recreated it at the start of the stream", "error", err)
	return true
}
