package main

import (
	"context"
	"net/url"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/redis"
	"github.com/oncely/oncely/retry"
)

// redisTopology: the consumer group exists on the source stream and on
// the consumer's retry stream; then every key (the events stream too) is
// deleted.
func redisTopology(t *testing.T, brokerURL, source, consumerName, events string, _ retry.Tiers) {
	t.Cleanup(func() {
		u, err := url.Parse(brokerURL)
		require.NoError(t, err)
		u.RawQuery = "" // the adapter's parameters, not go-redis's
		opts, err := goredis.ParseURL(u.String())
		require.NoError(t, err)
		client := goredis.NewClient(opts)
		defer client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !t.Failed() {
			for _, stream := range []string{source, redis.RetryStream(source, consumerName)} {
				groups, err := client.XInfoGroups(ctx, stream).Result()
				require.NoError(t, err, "stream %s exists", stream)
				require.Len(t, groups, 1, "one group on %s", stream)
				require.Equal(t, consumerName, groups[0].Name)
			}
		}
		_ = client.Del(ctx, source, redis.RetryStream(source, consumerName), redis.DelayedKey(source, consumerName), redis.DeadLetterStream(source, consumerName)).Err()
		if events != "" {
			_ = client.Del(ctx, events).Err()
		}
	})
}
