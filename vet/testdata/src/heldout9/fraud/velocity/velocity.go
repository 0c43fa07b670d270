// Package velocity counts card uses per time window in Redis.
package velocity

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Counter counts events per key and window.
type Counter struct {
	rdb    *redis.Client
	window time.Duration
}

// New returns a counter with the given window.
func New(rdb *redis.Client, window time.Duration) *Counter { return &Counter{rdb: rdb, window: window} }

func (c *Counter) key(card string, now time.Time) string {
	return fmt.Sprintf("vel:%s:%d", card, now.Unix()/int64(c.window.Seconds()))
}

// Bump counts one use of card and returns the window's count.
func (c *Counter) Bump(ctx context.Context, card string, now time.Time) (int64, error) {
	k := c.key(card, now)
	if err := c.rdb.Incr(ctx, k).Err(); err != nil {
		return 0, err
	}
	return c.Peek(ctx, card, now)
}

// Peek returns the window's count without counting.
func (c *Counter) Peek(ctx context.Context, card string, now time.Time) (int64, error) {
	s, err := c.rdb.Get(ctx, c.key(card, now)).Result()
	if err != nil {
		return 0, nil
	}
	var n int64
	_, err = fmt.Sscan(s, &n)
	return n, err
}
