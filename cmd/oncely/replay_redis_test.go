package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/redis"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/internal/replayplan"
)

// TestReplayRedis: a Redis consumer group is moved with XGROUP SETID,
// refused while a Source reads, its covered claims deleted with
// --reprocess and nothing else; a time before the trimmed entries starts at
// the oldest entry kept.
func TestReplayRedis(t *testing.T) {
	url := envtest.Redis(t)
	source := fmt.Sprintf("replay-%d", time.Now().UnixNano())
	name := "ledger"
	client := redisReplayClient(t, url, source, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer b.Close()
	var all []string
	for i := range 10 {
		id := fmt.Sprintf("r-%02d", i+1)
		all = append(all, id)
		// Entry IDs 1000-1 … 10000-1: the i-th entry added at millisecond i*1000.
		require.NoError(t, client.XAdd(ctx, &goredis.XAddArgs{Stream: source, ID: fmt.Sprintf("%d-1", (i+1)*1000), Values: redis.EntryFields(&consumer.Message{ID: id, Body: []byte(id)})}).Err())
	}
	require.Equal(t, all, consumeAck(t, url, source, name, 10))

	db := pgtest.New(t)
	claims := replayplan.ClaimsTable(db.Schema)
	for _, id := range append(slices.Clone(all), "z-outside") {
		_, err := db.Pool.Exec(t.Context(), "INSERT INTO "+claims+" (consumer, message_id) VALUES ($1, $2)", name, id)
		require.NoError(t, err)
	}
	base := []string{"replay", "--broker", url, "--source", source, "--consumer", name}
	withDB := append(slices.Clone(base), "--database-url", db.URL, "--schema", db.Schema)

	code, out, errs := cli(t, nil, nil, append(slices.Clone(withDB), "--to", "earliest", "--plan", "--output", "json")...)
	require.Equal(t, 0, code, errs)
	plan := replayJSONOf(t, out)
	require.EqualValues(t, 10, plan.Covered)
	require.EqualValues(t, 10, *plan.ClaimedTotal)
	require.Equal(t, "10000-1", plan.Partitions[0].PositionID)

	// Entries added from millisecond 6000 on: r-06 … r-10.
	at := time.UnixMilli(6000).UTC().Format(time.RFC3339Nano)
	reprocess := append(slices.Clone(withDB), "--to", at, "--reprocess", "--yes", "--output", "json")
	code, out, errs = cli(t, nil, nil, reprocess...)
	require.Equal(t, 0, code, errs)
	require.EqualValues(t, 5, *replayJSONOf(t, out).ClaimsDeleted)
	require.Equal(t, append(slices.Clone(all[:5]), "z-outside"), claimedIDs(t, db, claims, name))

	code, out, errs = cli(t, nil, nil, reprocess...)
	require.Equal(t, 0, code, errs)
	require.EqualValues(t, 0, replayJSONOf(t, out).Covered, "a second run changes nothing")

	require.Equal(t, all[5:], consumeAck(t, url, source, name, 5), "the consumer reads exactly the rewound entries again")

	// Entries up to r-03 trimmed, as trim_interval would.
	require.NoError(t, client.XTrimMinID(ctx, source, "4000-1").Err())
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "earliest", "--plan")...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "starts at the earliest available entry")

	// A running Source that just read an entry: refused, named
	// (TestReplayRedisQuietSource: one that read nothing).
	require.NoError(t, client.XAdd(ctx, &goredis.XAddArgs{Stream: source, Values: redis.EntryFields(&consumer.Message{ID: "r-11"})}).Err())
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)
	defer func() { require.NoError(t, src.Close(ctx)) }()
	ds, err := src.Receive(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "r-11", ds[0].Message().ID)
	code, _, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "earliest")...)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "live members")
	require.Contains(t, errs, "1 pending")
}

// TestReplayRedisEntryID: --to 0:<entry ID> rewinds a Redis group so that
// the entry with that ID (or the first after it) is delivered again; the
// plan counts the covered entries and their claims, a second run changes
// nothing, an ID after the stream's last entry is refused, and so is one
// after the group's position that would skip entries.
func TestReplayRedisEntryID(t *testing.T) {
	url := envtest.Redis(t)
	source := fmt.Sprintf("replay-id-%d", time.Now().UnixNano())
	name := "ledger"
	client := redisReplayClient(t, url, source, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var all []string
	for i := range 10 {
		id := fmt.Sprintf("r-%02d", i+1)
		all = append(all, id)
		require.NoError(t, client.XAdd(ctx, &goredis.XAddArgs{Stream: source, ID: fmt.Sprintf("%d-1", (i+1)*1000), Values: redis.EntryFields(&consumer.Message{ID: id, Body: []byte(id)})}).Err())
	}
	require.Equal(t, all, consumeAck(t, url, source, name, 10))
	db := pgtest.New(t)
	claims := replayplan.ClaimsTable(db.Schema)
	for _, id := range all[:8] {
		_, err := db.Pool.Exec(t.Context(), "INSERT INTO "+claims+" (consumer, message_id) VALUES ($1, $2)", name, id)
		require.NoError(t, err)
	}
	base := []string{"replay", "--broker", url, "--source", source, "--consumer", name, "--output", "json"}
	withDB := append(slices.Clone(base), "--database-url", db.URL, "--schema", db.Schema)

	// 0:6000-1 is r-06's ID: r-06 … r-10 are delivered again, r-06 … r-08 claimed.
	code, out, errs := cli(t, nil, nil, append(slices.Clone(withDB), "--to", "0:6000-1", "--plan")...)
	require.Equal(t, 0, code, errs)
	plan := replayJSONOf(t, out)
	require.EqualValues(t, 5, plan.Covered)
	require.EqualValues(t, 3, *plan.ClaimedTotal)
	require.Equal(t, "0:6000-1", plan.To)
	require.Equal(t, []string{"10000-1", "6000-0"}, []string{plan.Partitions[0].PositionID, plan.Partitions[0].TargetID})

	// An ID between two entries: the first entry after it, r-06, again.
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:5500-0", "--plan")...)
	require.Equal(t, 0, code, errs)
	require.EqualValues(t, 5, replayJSONOf(t, out).Covered)

	code, _, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:10000-2")...)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "after the last entry of stream")
	code, _, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "6000")...)
	require.Equal(t, 2, code, "a partition-less number is no target")
	require.NotEmpty(t, errs)
	code, _, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:6")...)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "entry IDs, not offsets")

	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:6000-1")...)
	require.Equal(t, 0, code, errs)
	require.EqualValues(t, 5, replayJSONOf(t, out).Covered)
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:6000-1")...)
	require.Equal(t, 0, code, errs)
	require.EqualValues(t, 0, replayJSONOf(t, out).Covered, "a second run changes nothing")

	// The group's position is 5000-1 now: 0:8000-1 would skip r-06 and r-07;
	// 0:5000-2 skips nothing and moves nothing.
	code, _, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:8000-1")...)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "would skip 2 entries")
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:5000-2")...)
	require.Equal(t, 0, code, errs)
	require.EqualValues(t, 0, replayJSONOf(t, out).Covered)

	require.Equal(t, all[5:], consumeAck(t, url, source, name, 5), "the consumer reads exactly the rewound entries again")
}

// TestReplayRedisQuietSource: a running Source that was delivered nothing
// (a quiet stream) refuses a replay of its group, by name, in the plan and
// the commit, and the group stays where it is; once the Source is closed
// the same replay goes through.
func TestReplayRedisQuietSource(t *testing.T) {
	url := envtest.Redis(t)
	source := fmt.Sprintf("replay-quiet-%d", time.Now().UnixNano())
	name := "ledger"
	client := redisReplayClient(t, url, source, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		require.NoError(t, client.XAdd(ctx, &goredis.XAddArgs{Stream: source, Values: redis.EntryFields(&consumer.Message{ID: fmt.Sprintf("q-%d", i)})}).Err())
	}
	require.Len(t, consumeAck(t, url, source, name, 3), 3)
	position := func() string {
		groups, err := client.XInfoGroups(ctx, source).Result()
		require.NoError(t, err)
		require.Len(t, groups, 1)
		return groups[0].LastDeliveredID
	}
	before := position()

	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer b.Close()
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)
	received := make(chan error, 1)
	go func() {
		_, err := src.Receive(ctx, 1)
		received <- err
	}()
	host, err := os.Hostname()
	require.NoError(t, err)
	ours := fmt.Sprintf("%s-%d-", host, os.Getpid())
	base := []string{"replay", "--broker", url, "--source", source, "--consumer", name, "--to", "earliest"}

	code, out, errs := cli(t, nil, nil, append(slices.Clone(base), "--plan", "--output", "json")...)
	require.Equal(t, 0, code, errs)
	require.Len(t, replayJSONOf(t, out).Members, 1, "the running Source is a live member")
	require.Contains(t, replayJSONOf(t, out).Members[0], ours)
	code, _, errs = cli(t, nil, nil, slices.Clone(base)...)
	require.Equal(t, 1, code, "a replay while a Source runs is refused")
	require.Contains(t, errs, "live members")
	require.Contains(t, errs, ours)
	require.Equal(t, before, position(), "the refused replay moved nothing")

	require.NoError(t, src.Close(ctx))
	require.ErrorIs(t, <-received, consumer.ErrSourceClosed)
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--output", "json")...)
	require.Equal(t, 0, code, errs)
	require.EqualValues(t, 3, replayJSONOf(t, out).Covered)
	require.Equal(t, "0-0", position())
}

// redisReplayClient is a client of url that deletes source's stream and the
// keys consumer name's Source keeps beside it when the test ends.
func redisReplayClient(t *testing.T, url, source, name string) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(url)
	require.NoError(t, err)
	client := goredis.NewClient(opts)
	t.Cleanup(func() {
		_ = client.Del(context.Background(), source, redis.RetryStream(source, name), redis.DelayedKey(source, name), redis.DeadLetterStream(source, name), redis.LiveKey(source, name)).Err()
		_ = client.Close()
	})
	return client
}
