//go:build faults

package adapters_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// TestFaultRedisClusterUnreplicatedWrites pins what asynchronous
// replication loses when a primary dies, on the Redis Cluster of
// scripts/cluster.sh start rediscluster. The replica of the source's slot
// is paused and the primary drops its link, so the primary confirms writes
// its replica never gets; then the primary is killed and the replica
// resumed and promoted. Of 20 entries delivered, the 10 acked before the
// cut stay settled and the 10 acked after it come back (a lost XACK is a
// redelivery, which the idempotency claim absorbs); the 5 entries published
// after the cut are gone (a lost XADD: the producer's confirmation came
// before replication, see docs/brokers.md, "Redis Cluster").
func TestFaultRedisClusterUnreplicatedWrites(t *testing.T) {
	raw := clusterVar(t, "REDIS_CLUSTER_URL", "rediscluster")
	nodes := clusterVar(t, "REDIS_CLUSTER_NODES", "rediscluster")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cc := redisClusterClient(t, raw)
	source := fmt.Sprintf("{lost%d}", time.Now().UnixNano())
	slot, err := cc.ClusterKeySlot(ctx, source).Result()
	require.NoError(t, err)
	// shard returns the slot's online primary and replica addresses.
	shard := func() (primary, replica string) {
		shards, err := cc.ClusterShards(ctx).Result()
		if err != nil {
			return "", ""
		}
		for _, sh := range shards {
			if !slices.ContainsFunc(sh.Slots, func(r goredis.SlotRange) bool { return r.Start <= slot && slot <= r.End }) {
				continue
			}
			for _, n := range sh.Nodes {
				addr := net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
				switch {
				case n.Health != "online":
				case n.Role == "master":
					primary = addr
				case n.Role == "replica":
					replica = addr
				}
			}
		}
		return primary, replica
	}
	var primaryAddr, replicaAddr string
	waitFor(t, ctx, "a primary and a replica of "+source, func() bool {
		primaryAddr, replicaAddr = shard()
		return primaryAddr != "" && replicaAddr != ""
	})
	primary, replica := nodeAt(t, nodes, primaryAddr), nodeAt(t, nodes, replicaAddr)
	rc := goredis.NewClient(&goredis.Options{Addr: primaryAddr})
	defer func() { _ = rc.Close() }()

	b, err := adapters.Open(ctx, raw+"?lease=2s&block=200ms", adapters.WithLogger(quietLog))
	require.NoError(t, err)
	defer func() { _ = b.Close() }()
	src, err := b.Source(ctx, source, "ledger")
	require.NoError(t, err)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			require.NoError(t, b.Publish(ctx, source, &consumer.Message{ID: fmt.Sprintf("m-%d", i), Key: "k", Body: []byte("x")}))
		}
	}
	receive := func(src consumer.Source, n int) map[string]consumer.Delivery {
		got := map[string]consumer.Delivery{}
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		for len(got) < n {
			ds, err := src.Receive(rctx, n-len(got))
			require.NoError(t, err, "after %d of %d deliveries", len(got), n)
			for _, d := range ds {
				got[d.Message().ID] = d
			}
		}
		return got
	}
	ackAndWait := func(ds map[string]consumer.Delivery, from, to, pending int) {
		for i := from; i < to; i++ {
			require.NoError(t, ds[fmt.Sprintf("m-%d", i)].Ack(ctx))
		}
		waitFor(t, ctx, fmt.Sprintf("%d entries pending on the primary", pending), func() bool {
			p, err := rc.XPending(ctx, source, "ledger").Result()
			return err == nil && p.Count == int64(pending)
		})
	}
	// replicated waits until the replica has every write so far: WAIT
	// counts the replicas holding this connection's last write, and the
	// primary sends its writes in order.
	replicated := func() {
		require.NoError(t, rc.Set(ctx, source+".mark", time.Now().UnixNano(), time.Minute).Err())
		n, err := rc.Wait(ctx, 1, 10*time.Second).Result()
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "replicas holding the writes")
	}

	publish(0, 20)
	first := receive(src, 20)
	ackAndWait(first, 0, 10, 10)
	replicated()

	clusterNode(t, "pause", replica)
	paused := true
	t.Cleanup(func() {
		if paused {
			clusterNode(t, "resume", replica)
		}
	})
	require.NoError(t, rc.ClientKillByFilter(ctx, "TYPE", "replica").Err())
	ackAndWait(first, 10, 20, 0) // confirmed by the primary, never replicated
	publish(20, 25)              // the same
	require.NoError(t, src.Close(ctx))
	clusterNode(t, "kill", primary)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			clusterNode(t, "restart", primary)
		}
	})
	clusterNode(t, "resume", replica)
	paused = false
	killed := time.Now()
	waitFor(t, ctx, replica+" promoted", func() bool { p, _ := shard(); return p == replicaAddr })
	t.Logf("%s promoted %v after %s was killed", replica, time.Since(killed).Round(time.Millisecond), primary)

	entries, err := cc.XRange(ctx, source, "-", "+").Result()
	require.NoError(t, err)
	var kept []string
	for _, e := range entries {
		kept = append(kept, fmt.Sprint(e.Values["message-id"]))
	}
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("m-%d", i))
	}
	require.Equal(t, want, kept, "entries on the promoted replica: the 5 published after the cut are lost")

	again, err := b.Source(ctx, source, "ledger")
	require.NoError(t, err)
	defer func() { _ = again.Close(context.Background()) }()
	redelivered := receive(again, 10)
	var ids []string
	for id, d := range redelivered {
		ids = append(ids, id)
		require.NoError(t, d.Ack(ctx))
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, _ := strconv.Atoi(strings.TrimPrefix(a, "m-"))
		y, _ := strconv.Atoi(strings.TrimPrefix(b, "m-"))
		return x - y
	})
	require.Equal(t, want[10:], ids, "redelivered: exactly the entries whose XACK was lost")
	t.Logf("lost with the primary: %d acks (redelivered), %d publishes (gone)", len(ids), 25-len(kept))

	clusterNode(t, "restart", primary)
	restarted = true
	old := goredis.NewClient(&goredis.Options{Addr: primaryAddr})
	defer func() { _ = old.Close() }()
	waitFor(t, ctx, primary+" back as a replica in sync", func() bool {
		repl, err := old.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(repl, "role:slave") && strings.Contains(repl, "master_link_status:up")
	})
}
