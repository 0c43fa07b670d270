package main

import (
	"context"
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
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/kafkatest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/internal/replayplan"
)

// BenchmarkReplayPlan times oncely replay --plan --database-url over a
// topic of 1,000,000 records in 6 partitions, all committed and all
// claimed (claims inserted with COPY), to earliest: reading every covered
// record's ID and counting the claims. Run it with
// go test -run '^$' -bench ReplayPlan -benchtime 1x ./cmd/oncely.
func BenchmarkReplayPlan(b *testing.B) {
	const partitions, records = 6, 1_000_000
	addrs := kafkatest.Brokers(b, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	topic := fmt.Sprintf("replay-bench-%d", time.Now().UnixNano())
	kafkatest.CreateTopic(b, addrs, topic, partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerLinger(5*time.Millisecond))
	require.NoError(b, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topic) }()
	ctx := context.Background()
	ids := make([]string, records)
	start := time.Now()
	errs := make(chan error, 1)
	for i := range records {
		ids[i] = fmt.Sprintf("bench-%07d", i)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(ids[i][len(ids[i])-3:]), Value: []byte(`{"amount":100}`),
			Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(ids[i])}}}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	require.NoError(b, cl.Flush(ctx))
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.Logf("produced %d records in %s", records, time.Since(start).Round(time.Millisecond))

	ends, err := adm.ListEndOffsets(ctx, topic)
	require.NoError(b, err)
	offsets := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		offsets.Add(kadm.Offset{Topic: topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	})
	require.NoError(b, adm.CommitAllOffsets(ctx, "ledger", offsets))

	db := pgtest.New(b)
	start = time.Now()
	rows := make([][]any, records)
	for i, id := range ids {
		rows[i] = []any{"ledger", id}
	}
	n, err := db.Pool.CopyFrom(ctx, pgx.Identifier{db.Schema, "processed_messages"}, []string{"consumer", "message_id"}, pgx.CopyFromRows(rows))
	require.NoError(b, err)
	require.EqualValues(b, records, n)
	b.Logf("copied %d claims in %s", records, time.Since(start).Round(time.Millisecond))

	args := []string{"replay", "--broker", "kafka://" + strings.Join(addrs, ","), "--source", topic, "--consumer", "ledger",
		"--to", "earliest", "--plan", "--output", "json", "--database-url", db.URL, "--schema", db.Schema}
	if testing.Verbose() {
		timeReplayParts(b, addrs, topic, db)
	}
	b.ResetTimer()
	for b.Loop() {
		code, out, stderr := benchCLI(args...)
		require.Equal(b, 0, code, stderr)
		doc := replayJSONOf(b, out)
		require.EqualValues(b, records, doc.Covered)
		require.EqualValues(b, records, *doc.ClaimedTotal)
	}
}

// benchCLI runs one command line, as cli does for tests.
func benchCLI(args ...string) (int, string, string) {
	var out, errb strings.Builder
	a := newApp(&out, &errb, func(string) string { return "" })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return a.run(ctx, args), out.String(), errb.String()
}

// timeReplayParts logs the time of the plan's two parts: reading the
// covered records' IDs, and counting their claims.
func timeReplayParts(b *testing.B, addrs []string, topic string, db *pgtest.DB) {
	ctx := context.Background()
	br, err := adapters.Open(ctx, "kafka://"+strings.Join(addrs, ","))
	require.NoError(b, err)
	defer br.Close()
	r, _ := adapters.AsReplayer(br)
	start := time.Now()
	plan, err := r.PlanReplay(ctx, topic, "ledger", adapters.ReplayTarget{})
	require.NoError(b, err)
	b.Logf("offsets planned in %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	var ids [][]string
	prog := &replayProgress{}
	require.NoError(b, replayplan.EachIDChunk(ctx, r, plan, prog.add, func(_ int32, chunk []string) error {
		ids = append(ids, slices.Clone(chunk))
		return nil
	}))
	b.Logf("read %d IDs in %s", prog.done, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	q := "SELECT count(*) FROM " + replayplan.ClaimsTable(db.Schema) + " WHERE consumer = $1 AND message_id = ANY($2::text[])"
	for _, chunk := range ids {
		var n int64
		require.NoError(b, db.Pool.QueryRow(ctx, q, "ledger", chunk).Scan(&n))
	}
	b.Logf("counted claims in %d queries in %s", len(ids), time.Since(start).Round(time.Millisecond))
}

// BenchmarkReplayRewind100 times oncely replay --to earliest (the commit of
// the targets, no claims) of a group on a topic of 100 partitions.
func BenchmarkReplayRewind100(b *testing.B) {
	const partitions = 100
	addrs := kafkatest.Brokers(b, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	topic := fmt.Sprintf("replay-rewind-%d", time.Now().UnixNano())
	kafkatest.CreateTopic(b, addrs, topic, partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(b, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topic) }()
	var recs []*kgo.Record
	for p := range int32(partitions) {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")})
	}
	require.NoError(b, cl.ProduceSync(context.Background(), recs...).FirstErr())
	args := []string{"replay", "--broker", "kafka://" + strings.Join(addrs, ","), "--source", topic, "--consumer", "ledger", "--to", "earliest", "--output", "json"}
	for b.Loop() {
		b.StopTimer()
		offsets := kadm.Offsets{}
		for p := range int32(partitions) {
			offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: 1, LeaderEpoch: -1})
		}
		require.NoError(b, adm.CommitAllOffsets(context.Background(), "ledger", offsets))
		b.StartTimer()
		code, out, stderr := benchCLI(args...)
		require.Equal(b, 0, code, stderr)
		require.EqualValues(b, partitions, replayJSONOf(b, out).Covered)
	}
}
