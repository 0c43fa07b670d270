package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/internal/testenv"
	"github.com/oncely/oncely/store/postgres/outbox"
)

const benchRows = 5000

func benchBroker(b *testing.B, kind string) adapters.Broker {
	b.Helper()
	var u string
	switch kind {
	case "rabbitmq":
		u = testenv.RabbitMQ(b)
	case "kafka":
		brokers := os.Getenv("KAFKA_BROKERS")
		if brokers == "" {
			testenv.Missing(b, "Kafka", fmt.Errorf("KAFKA_BROKERS is not set"))
			return nil
		}
		u = "kafka://" + brokers
	}
	br, err := adapters.Open(context.Background(), u, adapters.WithLogger(quiet()))
	if err != nil {
		testenv.Missing(b, kind, err)
		return nil
	}
	b.Cleanup(func() { _ = br.Close() })
	return br
}

// fill commits n rows to dest over 50 keys, 250 rows per transaction.
func fill(b *testing.B, db *pgtest.DB, s *outbox.Sender, dest string, n int) {
	b.Helper()
	ctx := context.Background()
	for start := 0; start < n; start += 250 {
		require.NoError(b, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			for i := start; i < start+250 && i < n; i++ {
				id := dest + "-" + strconv.Itoa(i)
				if err := s.Send(ctx, tx, dest, &consumer.Message{ID: id, Key: "k" + strconv.Itoa(i%50), Body: []byte(id)}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
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

// BenchmarkRelayThroughput drains benchRows rows through the relay and
// through the hand-written loop, on the same broker with the same
// confirmation, and reports both rates and their ratio.
func BenchmarkRelayThroughput(b *testing.B) {
	for _, kind := range []string{"rabbitmq", "kafka"} {
		b.Run(kind, func(b *testing.B) {
			br := benchBroker(b, kind)
			db := pgtest.New(b, pgtest.Options{MaxConns: 8})
			s := sender(b, db)
			var relayD, handD time.Duration
			for i := range b.N {
				dest := pgtest.SchemaName(b.Name()) + "_" + strconv.Itoa(i)
				fill(b, db, s, dest+"_h", benchRows)
				start := time.Now()
				handLoop(b, db, br, dest+"_h")
				handD += time.Since(start)

				fill(b, db, s, dest+"_r", benchRows)
				r, err := outbox.NewRelay(db.Pool, br, outbox.Config{Schema: db.Schema, Logger: quiet(), PollInterval: 5 * time.Millisecond})
				require.NoError(b, err)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				start = time.Now()
				go func() { done <- r.Run(ctx) }()
				for unpublishedB(b, db) > 0 {
					time.Sleep(2 * time.Millisecond)
				}
				relayD += time.Since(start)
				cancel()
				require.NoError(b, <-done)
			}
			relay := float64(benchRows*b.N) / relayD.Seconds()
			hand := float64(benchRows*b.N) / handD.Seconds()
			b.ReportMetric(relay, "relay_msgs/s")
			b.ReportMetric(hand, "loop_msgs/s")
			b.ReportMetric(relay/hand, "ratio")
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
