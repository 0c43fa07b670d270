package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/kafkatest"
	"github.com/oncely/oncely/internal/pgtest"
)

// replayPartitions and replayPerPartition shape the replay tests' topic.
const (
	replayPartitions   = 2
	replayPerPartition = 10
)

// produceReplayTopic creates topic and produces replayPerPartition records
// to each partition, the first half stamped old, the rest recent, with IDs
// "m-<partition>-<i>".
func produceReplayTopic(t *testing.T, addrs []string, topic string, old, recent time.Time) {
	t.Helper()
	kafkatest.CreateTopic(t, addrs, topic, replayPartitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for p := range int32(replayPartitions) {
		for i := range replayPerPartition {
			at := old
			if i >= replayPerPartition/2 {
				at = recent
			}
			id := fmt.Sprintf("m-%d-%d", p, i)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Timestamp: at, Value: []byte(id),
				Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(id)}}})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(recs) > 0 { // a new topic's partitions may be unknown for a moment
		var failed []*kgo.Record
		for _, r := range cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				require.NoError(t, ctx.Err(), "producing: %v", r.Err)
				failed = append(failed, r.Record)
			}
		}
		recs = failed
	}
}

// consumeAck reads n messages as consumer name, acks them and closes the
// Source (which commits), returning their IDs.
func consumeAck(t *testing.T, url, topic, name string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer b.Close()
	src, err := b.Source(ctx, topic, name)
	require.NoError(t, err)
	var ids []string
	for len(ids) < n {
		ds, err := src.Receive(ctx, n-len(ids))
		require.NoError(t, err, "received %d of %d", len(ids), n)
		for _, d := range ds {
			ids = append(ids, d.Message().ID)
			require.NoError(t, d.Ack(ctx))
		}
	}
	require.NoError(t, src.Close(ctx))
	slices.Sort(ids)
	return ids
}

// replayIDs are the IDs m-<p>-<i> for every partition and i in [from, to).
func replayIDs(from, to int) []string {
	var ids []string
	for p := range replayPartitions {
		for i := from; i < to; i++ {
			ids = append(ids, fmt.Sprintf("m-%d-%d", p, i))
		}
	}
	slices.Sort(ids)
	return ids
}

func replayJSONOf(t testing.TB, out string) replayJSON {
	t.Helper()
	var doc replayJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc
}

// TestReplayKafka: the plan counts the covered records and their claims;
// a group with a live member is refused, naming it; --reprocess deletes the
// claims of exactly the covered records, with audit rows, and commits the
// targets, after which the consumer reads exactly those records again; a
// second run does the same; a time before the retention starts at the
// earliest record kept, said so; forward offsets are refused.
func TestReplayKafka(t *testing.T) {
	addrs := kafkatest.Brokers(t, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	url := "kafka://" + strings.Join(addrs, ",")
	topic := fmt.Sprintf("replay-%d", time.Now().UnixNano())
	name := "ledger"
	now := time.Now()
	produceReplayTopic(t, addrs, topic, now.Add(-2*time.Hour), now.Add(-time.Minute))
	require.Equal(t, replayIDs(0, replayPerPartition), consumeAck(t, url, topic, name, replayPartitions*replayPerPartition))

	db := pgtest.New(t)
	claims := pgx.Identifier{db.Schema, "processed_messages"}.Sanitize()
	for _, id := range append(replayIDs(0, replayPerPartition), "outside-1", "outside-2") {
		_, err := db.Pool.Exec(t.Context(), "INSERT INTO "+claims+" (consumer, message_id) VALUES ($1, $2), ('other', $2)", name, id)
		require.NoError(t, err)
	}
	hourAgo := now.Add(-time.Hour).UTC().Format(time.RFC3339)
	base := []string{"replay", "--broker", url, "--source", topic, "--consumer", name}
	withDB := append(slices.Clone(base), "--database-url", db.URL, "--schema", db.Schema)

	// The plan: per partition committed 10, target 5, 5 covered, 5 claimed.
	code, out, errs := cli(t, nil, nil, append(slices.Clone(withDB), "--to", hourAgo, "--plan", "--output", "json")...)
	require.Equal(t, 0, code, errs)
	plan := replayJSONOf(t, out)
	require.Equal(t, "plan", plan.Status)
	require.EqualValues(t, replayPartitions*replayPerPartition/2, plan.Covered)
	require.EqualValues(t, replayPartitions*replayPerPartition/2, *plan.ClaimedTotal)
	for _, p := range plan.Partitions {
		require.EqualValues(t, replayPerPartition, p.Committed, "partition %d", p.Partition)
		require.EqualValues(t, replayPerPartition/2, p.Target, "partition %d", p.Partition)
		require.EqualValues(t, replayPerPartition/2, p.Covered, "partition %d", p.Partition)
		require.EqualValues(t, replayPerPartition/2, plan.Claimed[p.Partition], "partition %d", p.Partition)
	}
	code, out, errs = cli(t, nil, nil, append(slices.Clone(withDB), "--to", hourAgo, "--plan")...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "10 of the 10 covered records have a claim")
	require.Contains(t, out, "nothing was changed")

	// A live member: refused, named.
	refuseLive(t, url, topic, name, append(slices.Clone(base), "--to", "earliest"))

	// --reprocess without a terminal needs --yes.
	code, _, errs = cli(t, nil, nil, append(slices.Clone(withDB), "--to", hourAgo, "--reprocess")...)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--yes")

	reprocess := append(slices.Clone(withDB), "--to", hourAgo, "--reprocess", "--yes", "--actor", "alice", "--output", "json")
	code, out, errs = cli(t, nil, nil, reprocess...)
	require.Equal(t, 0, code, errs)
	done := replayJSONOf(t, out)
	require.EqualValues(t, 10, *done.ClaimsDeleted)
	left := claimedIDs(t, db, claims, name)
	require.Equal(t, append(replayIDs(0, replayPerPartition/2), "outside-1", "outside-2"), left, "only the covered records' claims go")
	require.Len(t, claimedIDs(t, db, claims, "other"), replayPartitions*replayPerPartition+2, "another consumer's claims stay")
	var rows int
	var ids []string
	require.NoError(t, db.Pool.QueryRow(t.Context(), "SELECT count(*), max(message_ids) FROM "+pgx.Identifier{db.Schema, "console_audit"}.Sanitize()+
		" WHERE action = 'replay.reprocess' AND actor = 'alice' AND consumer = $1", name).Scan(&rows, &ids))
	require.Equal(t, 2, rows, "a row for the deleted claims, one for the offsets")
	slices.Sort(ids)
	require.Equal(t, replayIDs(replayPerPartition/2, replayPerPartition), ids)

	// Idempotent: the same replay again changes nothing more.
	code, out, errs = cli(t, nil, nil, reprocess...)
	require.Equal(t, 0, code, errs)
	again := replayJSONOf(t, out)
	require.EqualValues(t, 0, again.Covered)
	require.EqualValues(t, 0, *again.ClaimsDeleted)
	for _, p := range again.Partitions {
		require.EqualValues(t, replayPerPartition/2, p.Committed)
	}

	// The consumer reads exactly the rewound records again.
	require.Equal(t, replayIDs(replayPerPartition/2, replayPerPartition), consumeAck(t, url, topic, name, replayPartitions*replayPerPartition/2))

	// A time before the retention: partition 0 lost offsets 0-2.
	adm := kadm.NewClient(kafkaClient(t, addrs))
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3})
	_, err := adm.DeleteRecords(t.Context(), del)
	require.NoError(t, err)
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", now.Add(-48*time.Hour).UTC().Format(time.RFC3339), "--plan")...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "target before the oldest record kept (retention): starts at the earliest available, offset 3")
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:1,1:2", "--output", "json")...)
	require.Equal(t, 0, code, errs)
	moved := replayJSONOf(t, out)
	require.True(t, moved.Partitions[0].EarliestAvailable)
	require.EqualValues(t, 3, moved.Partitions[0].Target)
	require.EqualValues(t, 2, moved.Partitions[1].Target)
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "0:3,1:2", "--plan", "--output", "json")...)
	require.Equal(t, 0, code, errs)
	for _, p := range replayJSONOf(t, out).Partitions {
		require.Equal(t, p.Target, p.Committed, "the offsets were committed")
	}

	// Forward is refused; so is an unknown consumer.
	code, _, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", "1:9")...)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "would skip 7 records")
	code, _, errs = cli(t, nil, nil, "replay", "--broker", url, "--source", topic, "--consumer", "nobody", "--to", "earliest")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "check --consumer")
}

// refuseLive joins a member to name's group and checks that replay args is
// refused naming it.
func refuseLive(t *testing.T, url, topic, name string, args []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer b.Close()
	src, err := b.Source(ctx, topic, name)
	require.NoError(t, err)
	defer func() { require.NoError(t, src.Close(ctx)) }()
	r, _ := adapters.AsReplayer(b)
	for { // the member joins in the background
		plan, err := r.PlanReplay(ctx, topic, name, adapters.ReplayTarget{})
		require.NoError(t, err)
		if len(plan.Members) > 0 {
			break
		}
		require.NoError(t, ctx.Err(), "the member never joined")
		time.Sleep(50 * time.Millisecond)
	}
	code, _, errs := cli(t, nil, nil, args...)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "live members")
	require.Contains(t, errs, "stop every consumer of the group first")
	require.Regexp(t, `\(kgo@`, errs, "the member is named with its client and host")
}

func claimedIDs(t *testing.T, db *pgtest.DB, table, name string) []string {
	t.Helper()
	rows, err := db.Pool.Query(t.Context(), "SELECT message_id FROM "+table+" WHERE consumer = $1 ORDER BY message_id", name)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return ids
}

func kafkaClient(t *testing.T, addrs []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestReplayQueueBrokersRefuse: a queue has no position; replay says so and
// points to dlq redrive.
func TestReplayQueueBrokersRefuse(t *testing.T) {
	mem := memory.NewBroker()
	opts := []adapters.Option{adapters.WithMemoryBroker(mem)}
	code, _, errs := cli(t, nil, opts, "replay", "--broker", "mem://", "--source", "orders", "--consumer", "ledger", "--to", "earliest")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "memory is a queue")
	require.Contains(t, errs, "oncely dlq redrive")
}

// TestReplayUsage: replay's help and the mistakes it refuses before
// touching a broker.
func TestReplayUsage(t *testing.T) {
	code, out, _ := cli(t, nil, nil, "replay", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "--reprocess")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--broker", "kafka://127.0.0.1:1", "--source", "s", "--consumer", "c"}, "needs --to"},
		{[]string{"replay", "--broker", "kafka://127.0.0.1:1", "--source", "s", "--consumer", "c", "--to", "yesterday"}, "partition:offset"},
		{[]string{"replay", "--broker", "kafka://127.0.0.1:1", "--source", "s", "--consumer", "c", "--to", "earliest", "--reprocess"}, "needs --database-url"},
	} {
		code, _, errs := cli(t, nil, nil, c.args...)
		require.Equal(t, 2, code, c.args)
		require.Contains(t, errs, c.want, c.args)
	}
}
