//go:build faults

package adapters_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestFaultRedisClusterPrimaryKilled: on a Redis Cluster of three primaries
// with a replica each (scripts/cluster.sh start rediscluster), reached by a
// redis+cluster:// URL, the primary owning the source stream's slot is
// killed mid-run, three times over (each run a new stream); its replica is
// promoted (cluster-node-timeout 2 s) and the killed node comes back as its
// replica. Every message's effect commits once, per key in publish order.
// Replication is asynchronous: an XADD the dead primary confirmed and had
// not yet sent on is gone (counted as lost: the producer's confirmation
// came too early; see docs/brokers.md, "Running on a cluster"), an XACK or
// settlement gone the same way only redelivers (absorbed by the claim).
// The test reports those numbers and fails on any loss.
func TestFaultRedisClusterPrimaryKilled(t *testing.T) {
	raw := clusterVar(t, "REDIS_CLUSTER_URL", "rediscluster")
	nodes := clusterVar(t, "REDIS_CLUSTER_NODES", "rediscluster")
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	cc := redisClusterClient(t, raw)
	addrOf := func(node string) string {
		for _, n := range strings.Split(nodes, ",") {
			if name, a, _ := strings.Cut(n, "="); name == node {
				return a
			}
		}
		t.Fatalf("no node %s in %s", node, nodes)
		return ""
	}
	for run := 1; run <= 3; run++ {
		// The stream's name carries a hash tag, so its retry and
		// dead-letter keys share its slot (and its primary).
		source := fmt.Sprintf("{cluster%d}", time.Now().UnixNano())
		var killed string
		res := runClusterFault(t, clusterFault{
			url:    raw + "?lease=5s&block=200ms",
			source: source,
			leader: func(t *testing.T) string {
				// The slot's owner by a fresh CLUSTER SHARDS, confirmed by
				// the node itself: the client's cached map may be older.
				var addr string
				waitFor(t, ctx, "the primary of "+source, func() bool {
					slot, err := cc.ClusterKeySlot(ctx, source).Result()
					if err != nil {
						return false
					}
					shards, err := cc.ClusterShards(ctx).Result()
					if err != nil {
						return false
					}
					addr = ""
					for _, sh := range shards {
						for _, r := range sh.Slots {
							if r.Start <= slot && slot <= r.End {
								for _, n := range sh.Nodes {
									if n.Role == "master" && n.Health == "online" {
										addr = net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
									}
								}
							}
						}
					}
					if addr == "" {
						return false
					}
					rc := goredis.NewClient(&goredis.Options{Addr: addr})
					defer func() { _ = rc.Close() }()
					repl, err := rc.Info(ctx, "replication").Result()
					return err == nil && strings.Contains(repl, "role:master")
				})
				killed = nodeAt(t, nodes, addr)
				return killed
			},
			settled: func(t *testing.T) {
				rc := goredis.NewClient(&goredis.Options{Addr: addrOf(killed)})
				defer func() { _ = rc.Close() }()
				waitFor(t, ctx, killed+" back as a replica in sync, the cluster ok", func() bool {
					repl, err := rc.Info(ctx, "replication").Result()
					if err != nil || !strings.Contains(repl, "role:slave") || !strings.Contains(repl, "master_link_status:up") {
						return false
					}
					info, err := rc.ClusterInfo(ctx).Result()
					return err == nil && strings.Contains(info, "cluster_state:ok")
				})
			},
		})
		t.Logf("run %d: %s killed, %d lost, %d duplicated, %d out of order, producer resumed after %v, consumer after %v",
			run, res.killed, res.lost, res.duplicated, res.outOfOrder, res.publishStall.Round(time.Millisecond), res.resume.Round(time.Millisecond))
		require.Zero(t, res.lost, "lost effects (asynchronous replication: see docs/brokers.md)")
		require.Zero(t, res.duplicated, "duplicated effects")
		require.Zero(t, res.outOfOrder, "effects out of key order")
	}
}

// redisClusterClient is a cluster client of the nodes a redis+cluster://
// URL lists, reloading its slot map every second, closed when the test ends.
func redisClusterClient(t *testing.T, raw string) *goredis.ClusterClient {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(u.Host, ","), ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
