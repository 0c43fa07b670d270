package orchard

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var errLocked = errors.New("block is being weighed elsewhere")

// priceBoard reads the day's price per kilogram, which the sales desk
// writes into Redis, and holds the scale's per-block lock.
type priceBoard struct {
	rdb *redis.Client
}

func (p priceBoard) centsPerKg(ctx context.Context, variety string) (int64, error) {
	s, err := p.rdb.Get(ctx, "price:"+variety).Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// lockBlock takes the block's scale lock; the caller releases it.
func (p priceBoard) lockBlock(ctx context.Context, block string) (func(), error) {
	key := "scale-lock:" + block
	ok, err := p.rdb.SetNX(ctx, key, "1", 30*time.Second).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errLocked
	}
	return func() { p.rdb.Del(context.WithoutCancel(ctx), key) }, nil
}
