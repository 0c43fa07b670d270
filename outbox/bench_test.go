package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/benchtest"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

// benchBroker opens the broker of one BenchmarkRelayThroughput run and
// makes sure the topics in dests exist where they are not created on first
// use.
func benchBroker(b *testing.B, kind string, dests ...string) adapters.Broker {
	b.Helper()
	var u string
	switch kind {
	case "rabbitmq":
		u = envtest.RabbitMQ(b)
	case "kfake-process":
		u = "kafka://" + strings.Join(kafkatest.Process(b).Addrs, ",")
	case "kafka":
		if !kafkatest.Real() {
			envtest.Missing(b, "Kafka", fmt.Errorf("%s is not set", kafkatest.Env))
			return nil
		}
		addrs := kafkatest.Brokers(b)
		for _, d := range dests {
			kafkatest.CreateTopic(b, addrs, d, 6)
		}
		u = "kafka://" + strings.Join(addrs, ",")
	}
	br, err := adapters.Open(context.Background(), u, adapters.WithLogger(quiet()))
	if err != nil {
		envtest.Missing(b, kind, err)
		return nil
	}
	b.Cleanup(func() { _ = br.Close() })
	return br
}

// refill empties the outbox and commits n rows to dest over 50 keys, as
// Send would write them, in one statement (the fill is not measured).
func refill(b *testing.B, db *pgtest.DB, dest string, n int) {
	b.Helper()
	table := pgx.Identifier{db.Schema, outbox.Table}.Sanitize()
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, "TRUNCATE "+table)
	require.NoError(b, err)
	_, err = db.Pool.Exec(ctx, "INSERT INTO "+table+` (message_id, destination, msg_key, body)
SELECT $1 || '-' || i, $1, 'k' || (i % 50), convert_to($1 || '-' || i, 'UTF8') FROM generate_series(0, $2 - 1) AS i`, dest, n)
	require.NoError(b, err)
	_, err = db.Pool.Exec(ctx, "VACUUM ANALYZE "+table)
	require.NoError(b, err)
}

// handLoop is the baseline: one loop selecting 500 unpublished rows in row
// order, publishing them in one confirmed Publish and marking them.
func handLoop(b *testing.B, db *pgtest.DB, br adapters.Broker, dest string) {
	ctx := context.Background()
	table := pgx.Identifier{db.Schema, outbox.Table}.Sanitize()
	for {
		n := 0
		require.NoError(b, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, "SELECT seq, message_id, msg_key, body, headers FROM "+table+" WHERE published_at IS NULL ORDER BY seq LIMIT 500 FOR UPDATE")
			if err != nil {
				return err
			}
			var seqs []int64
			var msgs []*consumer.Message
			for rows.Next() {
				var (
					seq int64
					m   consumer.Message
					h   []byte
				)
				if err := rows.Scan(&seq, &m.ID, &m.Key, &m.Body, &h); err != nil {
					return err
				}
				if err := json.Unmarshal(h, &m.Headers); err != nil {
					return err
				}
				m.Partition = -1
				seqs = append(seqs, seq)
				msgs = append(msgs, &m)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			n = len(msgs)
			if n == 0 {
				return nil
			}
			if err := br.Publish(ctx, dest, msgs...); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, "UPDATE "+table+" SET published_at = now() WHERE seq = ANY($1)", seqs)
			return err
		}))
		if n == 0 {
			return
		}
	}
}

// counting counts the messages its Broker confirmed and closes full once
// there are want.
type counting struct {
	adapters.Broker
	n    atomic.Int64
	want int64
	once sync.Once
	full chan struct{}
}

func (c *counting) Publish(ctx context.Context, dest string, msgs ...*consumer.Message) error {
	err := c.Broker.Publish(ctx, dest, msgs...)
	if err == nil && c.n.Add(int64(len(msgs))) >= c.want {
		c.once.Do(func() { close(c.full) })
	}
	return err
}

// relayDrain runs a relay with the default settings until every row is
// published and marked, and returns how many rounds it ran and how many of
// them claimed nothing.
func relayDrain(b *testing.B, db *pgtest.DB, br adapters.Broker, n int) (rounds, empty int64) {
	c := &counting{Broker: br, want: int64(n), full: make(chan struct{})}
	r, err := outbox.NewRelay(db.Pool, c, outbox.Config{Schema: db.Schema, Logger: quiet(), Workers: benchtest.EnvInt("ONCELY_BENCH_WORKERS", 0)})
	require.NoError(b, err)
	var all, none atomic.Int64
	r.SetRoundEnded(func(n int, _ error) {
		all.Add(1)
		if n == 0 {
			none.Add(1)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-c.full:
	case <-time.After(5 * time.Minute):
		b.Fatalf("relay confirmed %d of %d messages in 5 minutes", c.n.Load(), n)
	}
	for range 10_000 { // the last rounds are marking
		if unpublishedB(b, db) == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	require.NoError(b, <-done)
	require.Zero(b, unpublishedB(b, db))
	return all.Load(), none.Load()
}

// BenchmarkRelayThroughput drains the same committed rows (50,000 over 50
// keys; ONCELY_BENCH_MESSAGES) through the relay at its defaults (4
// workers, or ONCELY_BENCH_WORKERS; 500 rows a round) and through the hand-written loop (select 500
// unpublished rows in order, one confirmed Publish, mark, commit), on the
// same broker client with the same confirmation, alternating which goes
// first over ONCELY_BENCH_ROUNDS rounds (default 3), and reports the median
// ratio. Sub-benchmarks: rabbitmq (RABBITMQ_URL), kfake-process (`oncely dev
// kafka` as a child process) and kafka (Apache Kafka at KAFKA_BROKERS). Run
// it with -benchtime 1x.
func BenchmarkRelayThroughput(b *testing.B) {
	n, rounds := benchtest.EnvInt("ONCELY_BENCH_MESSAGES", 50_000), benchtest.EnvInt("ONCELY_BENCH_ROUNDS", 3)
	for _, kind := range []string{"rabbitmq", "kfake-process", "kafka"} {
		b.Run(kind, func(b *testing.B) {
			dest := pgtest.SchemaName(b.Name())
			hDest, rDest := dest+"_h", dest+"_r"
			br := benchBroker(b, kind, hDest, rDest)
			db := pgtest.New(b, pgtest.Options{MaxConns: 8})
			res := benchtest.Rounds{Messages: n}
			var relayRounds, emptyRounds int64
			for range b.N {
				for round := range rounds {
					hand := func() (time.Duration, time.Duration) {
						refill(b, db, hDest, n)
						c, start := benchtest.CPUTime(), time.Now()
						handLoop(b, db, br, hDest)
						return time.Since(start), benchtest.CPUTime() - c
					}
					relay := func() (time.Duration, time.Duration) {
						refill(b, db, rDest, n)
						c, start := benchtest.CPUTime(), time.Now()
						all, none := relayDrain(b, db, br, n)
						relayRounds += all
						emptyRounds += none
						return time.Since(start), benchtest.CPUTime() - c
					}
					var hd, hc, rd, rc time.Duration
					if round%2 == 0 {
						hd, hc = hand()
						rd, rc = relay()
					} else {
						rd, rc = relay()
						hd, hc = hand()
					}
					res.AddCPU(hc, rc)
					res.Add(b, hd, rd)
				}
			}
			drains := float64(b.N * rounds)
			b.ReportMetric(float64(relayRounds)/drains, "relay_rounds/drain")
			b.ReportMetric(float64(emptyRounds)/drains, "empty_rounds/drain")
			res.Report(b, "hand-written loop")
		})
	}
}

func unpublishedB(b *testing.B, db *pgtest.DB) int {
	var n int
	require.NoError(b, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM "+pgx.Identifier{db.Schema, outbox.Table}.Sanitize()+" WHERE published_at IS NULL").Scan(&n))
	return n
}

// BenchmarkCommitToPublish sends 1,000 messages a second (one per
// transaction, four producers) for two seconds to the memory broker with
// LISTEN/NOTIFY on, and reports the commit-to-confirmation latency.
func BenchmarkCommitToPublish(b *testing.B) {
	db := pgtest.New(b, pgtest.Options{MaxConns: 12})
	rec := memBroker(b)
	s := sender(b, db)
	var mu sync.Mutex
	committed := map[string]time.Time{}
	confirmed := map[string]time.Time{}
	rec2 := &timing{recorder: rec, mu: &mu, at: confirmed}
	r, err := outbox.NewRelay(db.Pool, rec2, outbox.Config{Schema: db.Schema, Logger: quiet()})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); require.NoError(b, <-done) }()

	var lat []time.Duration
	for it := range b.N {
		const producers, perProducer = 4, 500 // 4 × 250/s for 2 s
		var wg sync.WaitGroup
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(4 * time.Millisecond)
				defer tick.Stop()
				for i := range perProducer {
					<-tick.C
					id := fmt.Sprintf("l%d-%d-%d", it, p, i)
					err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
						return s.Send(ctx, tx, "lat", msg(id, "k"+strconv.Itoa(i%20), id))
					})
					now := time.Now()
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					committed[id] = now
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		rec.waitDistinct(b, (it+1)*producers*perProducer)
	}
	mu.Lock()
	for id, c := range committed {
		d := confirmed[id].Sub(c)
		if d < 0 {
			d = 0 // confirmed before Commit returned to the producer
		}
		lat = append(lat, d)
	}
	mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
}

// timing records when each message's Publish returned.
type timing struct {
	*recorder
	mu *sync.Mutex
	at map[string]time.Time
}

func (t *timing) Publish(ctx context.Context, dest string, msgs ...*consumer.Message) error {
	err := t.recorder.Publish(ctx, dest, msgs...)
	if err == nil {
		now := time.Now()
		t.mu.Lock()
		for _, m := range msgs {
			t.at[m.ID] = now
		}
		t.mu.Unlock()
	}
	return err
}

// BenchmarkSendBatch writes 500 messages without IDs, each caused by an
// incoming message of its own (as a batch handler's events) over 50 keys,
// in one committed transaction: with 500 Send calls (the baseline) and
// with one SendBatch, alternating in one process, and reports both rates
// and SendBatch's speed-up.
func BenchmarkSendBatch(b *testing.B) {
	const n = 500
	db := pgtest.New(b)
	s := sender(b, db)
	ctx := consumer.WithName(context.Background(), "bench")
	batch := func(it int, mode string) []outbox.Outgoing {
		out := make([]outbox.Outgoing, n)
		for i := range out {
			id := fmt.Sprintf("%s-%d-%d", mode, it, i)
			out[i] = outbox.Outgoing{Destination: "events", Message: msg("", "k"+strconv.Itoa(i%50), id), Cause: &consumer.Message{ID: id}}
		}
		return out
	}
	var sendD, batchD time.Duration
	for it := range b.N {
		sends := batch(it, "send")
		start := time.Now()
		require.NoError(b, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			for _, o := range sends {
				if err := s.Send(outbox.WithCause(ctx, o.Cause), tx, o.Destination, o.Message); err != nil {
					return err
				}
			}
			return nil
		}))
		sendD += time.Since(start)

		sends = batch(it, "batch")
		start = time.Now()
		require.NoError(b, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return s.SendBatch(ctx, tx, sends) }))
		batchD += time.Since(start)
	}
	send := float64(n*b.N) / sendD.Seconds()
	batched := float64(n*b.N) / batchD.Seconds()
	b.ReportMetric(send, "send_msgs/s")
	b.ReportMetric(batched, "batch_msgs/s")
	b.ReportMetric(batched/send, "ratio")
}
