package adapters_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// TestOpenRedisParameters: every bad or unknown parameter of a redis://
// URL is reported at once, before anything connects.
func TestOpenRedisParameters(t *testing.T) {
	_, err := adapters.Open(context.Background(), "redis://127.0.0.1:1/0?lease=soon&block=-1s&tls_ca=x&colour=blue")
	require.Error(t, err)
	for _, want := range []string{`lease="soon"`, `block="-1s"`, "tls_* parameters configure TLS, which needs rediss://", `unknown query parameter "colour"`} {
		require.Contains(t, err.Error(), want)
	}
}

// TestOpenRedisUnreachable: a server that does not answer fails Open
// naming the host, never the password.
func TestOpenRedisUnreachable(t *testing.T) {
	const secret = "s3cret-pw"
	_, err := adapters.Open(context.Background(), "redis://default:"+secret+"@127.0.0.1:1/0")
	require.Error(t, err)
	require.Contains(t, err.Error(), "no Redis answers at 127.0.0.1:1")
	require.NotContains(t, err.Error(), secret)
}

// TestOpenRedis publishes, consumes and reads the backlog through a
// redis:// Broker.
func TestOpenRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := adapters.Open(ctx, envtest.Redis(t)+"?lease=5s&block=100ms")
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	require.Equal(t, "redis", b.Kind())
	source := fmt.Sprintf("open-%d", time.Now().UnixNano())
	require.NoError(t, b.Publish(ctx, source, &consumer.Message{ID: "r1", Key: "k", Body: []byte("x")}))
	_, err = b.Backlog(ctx, source, "ledger")
	require.ErrorIs(t, err, adapters.ErrNoConsumer, "a group not created yet is a consumer name that does not exist (issue 38)")
	seen := consume(t, ctx, b, source, "ledger", 1, func(context.Context, *consumer.Message) error { return nil })
	require.Len(t, seen, 1)
	require.Equal(t, "r1", seen[0].ID)
	require.Equal(t, "k", seen[0].Key)
	lines, err := b.Backlog(ctx, source, "ledger")
	require.NoError(t, err)
	require.Equal(t, []consumer.Backlog{{Source: source, Partition: -1, Lag: 0, DeadLetters: 0}}, lines)
}

// TestOpenRedisSentinelParameters: a redis+sentinel:// URL needs the
// primary's name and host:port Sentinel addresses; db is a number. All
// problems are reported at once, before anything connects.
func TestOpenRedisSentinelParameters(t *testing.T) {
	_, err := adapters.Open(context.Background(), "redis+sentinel://127.0.0.1:1,localhost:/?db=x&lease=soon")
	require.Error(t, err)
	for _, want := range []string{"no primary name", `sentinel address "localhost:": want host:port`, `db="x"`, `lease="soon"`} {
		require.Contains(t, err.Error(), want)
	}
	_, err = adapters.Open(context.Background(), "redis://127.0.0.1:1/0?db=1")
	require.ErrorContains(t, err, `unknown query parameter "db"`, "db is a path on redis://")
}

// TestOpenRedisSentinelUnreachable: Sentinels that do not answer fail Open
// naming them, never the password.
func TestOpenRedisSentinelUnreachable(t *testing.T) {
	const secret = "s3cret-pw"
	_, err := adapters.Open(context.Background(), "redis+sentinel://default:"+secret+"@127.0.0.1:1,127.0.0.1:2/oncely?db=0")
	require.Error(t, err)
	require.Contains(t, err.Error(), "no Redis answers at 127.0.0.1:1,127.0.0.1:2")
	require.NotContains(t, err.Error(), secret)
}

// TestOpenRedisClusterParameters: a redis+cluster:// URL needs host:port
// seed nodes and no database path; tls_* needs rediss+cluster://. All
// problems are reported at once, before anything connects.
func TestOpenRedisClusterParameters(t *testing.T) {
	_, err := adapters.Open(context.Background(), "redis+cluster://127.0.0.1:1,localhost:/0?lease=soon")
	require.Error(t, err)
	for _, want := range []string{`path "0": Redis Cluster has one database`, `cluster node address "localhost:": want host:port`, `lease="soon"`} {
		require.Contains(t, err.Error(), want)
	}
	_, err = adapters.Open(context.Background(), "redis+cluster://127.0.0.1:1/?tls_insecure_skip_verify=true")
	require.ErrorContains(t, err, "needs rediss:// or rediss+cluster://")
}

// TestOpenRedisClusterUnreachable: seed nodes that do not answer fail Open
// naming them, never the password.
func TestOpenRedisClusterUnreachable(t *testing.T) {
	const secret = "s3cret-pw"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := adapters.Open(ctx, "redis+cluster://default:"+secret+"@127.0.0.1:1,127.0.0.1:2/")
	require.Error(t, err)
	require.Contains(t, err.Error(), "no Redis answers at 127.0.0.1:1,127.0.0.1:2")
	require.NotContains(t, err.Error(), secret)
}
