package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
)

// groupPosition is group's last-delivered ID on stream.
func groupPosition(t *testing.T, client goredis.UniversalClient, stream, group string) string {
	t.Helper()
	groups, err := client.XInfoGroups(context.Background(), stream).Result()
	require.NoError(t, err)
	for _, g := range groups {
		if g.Name == group {
			return g.LastDeliveredID
		}
	}
	t.Fatalf("no group %s on %s", group, stream)
	return ""
}

// TestReplayRefusedWhileQuietSourceRuns: a running Source that read its
// last entry longer ago than the replay's window (XINFO CONSUMERS idle,
// 300ms here) and longer than three heartbeat lifetimes (600ms here, so
// only renewals keep it) is listed as live and refuses the replay, naming
// it; the group stays where it is. Once it is closed, the replay goes
// through at once.
func TestReplayRefusedWhileQuietSourceRuns(t *testing.T) {
	client := newClient(t)
	stream := fmt.Sprintf("hb-quiet-%d", time.Now().UnixNano())
	const group, window, ttl = "ledger", 300 * time.Millisecond, 600 * time.Millisecond
	t.Cleanup(func() {
		_ = client.Del(context.Background(), stream, RetryStream(stream, group), LiveKey(stream, group)).Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish(t, client, stream, testMessages("q", 1)...)
	src := newSource(t, client, Config{Stream: stream, Consumer: group, Block: 50 * time.Millisecond, heartbeatTTL: ttl})
	ds, err := src.Receive(ctx, 1)
	require.NoError(t, err)
	ackAll(t, ds)
	position := groupPosition(t, client, stream, group)
	received := make(chan error, 1)
	go func() {
		_, err := src.Receive(ctx, 1)
		received <- err
	}()

	for {
		consumers, err := client.XInfoConsumers(ctx, stream, group).Result()
		require.NoError(t, err)
		require.Len(t, consumers, 1)
		if consumers[0].Idle > 3*ttl {
			break
		}
		require.NoError(t, ctx.Err(), "the Source's idle time never grew past %s", 3*ttl)
		time.Sleep(50 * time.Millisecond)
	}
	live, err := liveConsumers(ctx, client, stream, group, window)
	require.NoError(t, err)
	require.Len(t, live, 1, "the running Source is live")
	require.Contains(t, live[0], src.name+" (running")
	err = commitReplay(ctx, client, stream, group, "0-0", window)
	require.ErrorIs(t, err, ErrLiveConsumers)
	require.ErrorContains(t, err, src.name)
	require.Equal(t, position, groupPosition(t, client, stream, group), "the refused replay moved nothing")

	require.NoError(t, src.Close(ctx))
	require.ErrorIs(t, <-received, consumer.ErrSourceClosed)
	live, err = liveConsumers(ctx, client, stream, group, window)
	require.NoError(t, err)
	require.Empty(t, live, "Close deleted the heartbeat")
	require.NoError(t, commitReplay(ctx, client, stream, group, "0-0", window))
	require.Equal(t, "0-0", groupPosition(t, client, stream, group))
}

// TestReplayWaitsForCrashedHeartbeat: the heartbeat of a Source that
// stopped without Close (written once, never renewed nor deleted) refuses a
// replay until it expires by itself, and then the key is gone.
func TestReplayWaitsForCrashedHeartbeat(t *testing.T) {
	client := newClient(t)
	stream := fmt.Sprintf("hb-crash-%d", time.Now().UnixNano())
	const group, ttl = "ledger", 400 * time.Millisecond
	key := LiveKey(stream, group)
	t.Cleanup(func() { _ = client.Del(context.Background(), stream, key).Err() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish(t, client, stream, testMessages("c", 2)...)
	require.NoError(t, client.XGroupCreate(ctx, stream, group, "$").Err())
	require.NoError(t, beatScript.Run(ctx, client, []string{key}, "crashed-1", ttl.Milliseconds()).Err())

	live, err := liveConsumers(ctx, client, stream, group, ReplayLiveWithin)
	require.NoError(t, err)
	require.Len(t, live, 1)
	require.Contains(t, live[0], "crashed-1 (running")
	err = CommitReplay(ctx, client, stream, group, "0-0")
	require.ErrorIs(t, err, ErrLiveConsumers)
	require.ErrorContains(t, err, "crashed-1")
	require.ErrorContains(t, err, "expires within 15s")
	for {
		err = CommitReplay(ctx, client, stream, group, "0-0")
		if err == nil {
			break
		}
		require.ErrorIs(t, err, ErrLiveConsumers)
		require.NoError(t, ctx.Err(), "the crashed heartbeat never expired")
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, "0-0", groupPosition(t, client, stream, group))
	for {
		n, err := client.Exists(ctx, key).Result()
		require.NoError(t, err)
		if n == 0 {
			break
		}
		require.NoError(t, ctx.Err(), "the live set outlived its last heartbeat")
		time.Sleep(10 * time.Millisecond)
	}
}
