//go:build faults

package redis

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/internal/envtest"
)

// newClusterClient connects to the Redis Cluster scripts/cluster.sh start
// rediscluster started (REDIS_CLUSTER_URL, redis+cluster://h:p,h:p/), with
// hooks, closed at the end of t. Missing, it fails under CI and skips
// elsewhere.
func newClusterClient(t *testing.T, hooks ...goredis.Hook) *goredis.ClusterClient {
	t.Helper()
	raw := os.Getenv("REDIS_CLUSTER_URL")
	if raw == "" {
		envtest.Missing(t, `REDIS_CLUSTER_URL (eval "$(scripts/cluster.sh start rediscluster)")`, errors.New("REDIS_CLUSTER_URL is not set"))
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("REDIS_CLUSTER_URL=%q: %v", raw, err)
	}
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(u.Host, ","), ClusterStateReloadInterval: time.Second})
	for _, h := range hooks {
		c.AddHook(h)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		envtest.Missing(t, "the Redis Cluster at "+u.Host, err)
	}
	return c
}

// TestFaultRedisClusterConformance runs the adapter conformance suite on a
// Redis Cluster of three primaries and three replicas, each source a
// stream named with a hash tag. Catches a settlement script or multi-key
// command whose keys do not share a slot (CROSSSLOT).
func TestFaultRedisClusterConformance(t *testing.T) {
	h := &harness{tagged: true}
	h.client = newClusterClient(t, faultHook{check: h.fault})
	adaptertest.Run(t, h)
}
