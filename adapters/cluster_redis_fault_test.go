//go:build faults

package adapters_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestFaultRedisSentinelPrimaryKilled: on a primary, a replica and three
// Sentinels (scripts/cluster.sh start redis), reached by a redis+sentinel://
// URL, the primary is killed mid-run; the Sentinels promote the replica and
// the killed node comes back as a replica. Every message's effect commits
// once, per key in publish order, except what asynchronous replication
// lost: entries the primary confirmed and had not yet sent to the replica
// (see docs/brokers.md, "Running on a cluster"). The test reports that
// number and fails on any loss.
func TestFaultRedisSentinelPrimaryKilled(t *testing.T) {
	res := redisSentinelFault(t, false)
	res.requireNothingLost(t) // asynchronous replication: see docs/brokers.md
	res.requireKeyOrder(t)
}

// TestFaultRedisSentinelCopyPrimaryKilled: as above, but the primary is
// killed as a handler fails, while its retry (or dead-letter) copy is being
// written.
func TestFaultRedisSentinelCopyPrimaryKilled(t *testing.T) {
	res := redisSentinelFault(t, true)
	res.requireNothingLost(t)
	res.requireKeyOrder(t)
}

// redisSentinelFault runs one node-failure run on the Sentinel setup,
// killing the primary between two effects or, with onCopy, as a copy is
// written.
func redisSentinelFault(t *testing.T, onCopy bool) clusterResult {
	raw := clusterVar(t, "REDIS_SENTINEL_URL", "redis")
	nodes := clusterVar(t, "REDIS_SENTINEL_NODES", "redis")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	master := strings.Trim(u.Path, "/")
	sentinels := strings.Split(u.Host, ",")
	// primary is the address every Sentinel names as the primary ("" while
	// they disagree or one does not answer).
	primary := func() string {
		var agreed string
		for _, a := range sentinels {
			sc := goredis.NewSentinelClient(&goredis.Options{Addr: a})
			addr, err := sc.GetMasterAddrByName(ctx, master).Result()
			_ = sc.Close()
			if err != nil {
				return ""
			}
			got := net.JoinHostPort(addr[0], addr[1])
			if agreed != "" && got != agreed {
				return ""
			}
			agreed = got
		}
		return agreed
	}
	var killed string
	return runClusterFault(t, clusterFault{
		url:    raw + "?lease=5s&block=200ms",
		source: fmt.Sprintf("cluster%d", time.Now().UnixNano()),
		leader: func(t *testing.T) string {
			var p string
			waitFor(t, ctx, "a primary all Sentinels agree on", func() bool { p = primary(); return p != "" })
			killed = nodeAt(t, nodes, p)
			return killed
		},
		settled: func(t *testing.T) {
			addr := ""
			for _, n := range strings.Split(nodes, ",") {
				if name, a, _ := strings.Cut(n, "="); name == killed {
					addr = a
				}
			}
			rc := goredis.NewClient(&goredis.Options{Addr: addr})
			defer func() { _ = rc.Close() }()
			waitFor(t, ctx, killed+" back as a replica in sync", func() bool {
				info, err := rc.Info(ctx, "replication").Result()
				return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
			})
		},
		onCopy: onCopy,
	})
}
