package kafka

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// Three members of one group, one of them replaced about every second (by
// a graceful stop or a crash without commit), while 20,000 records flow:
// with the Postgres idempotency store every record's effect exists exactly
// once.
func TestAtLeastOnceAcrossRebalances(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	// The server is shared and its disk is slow: commits that do not wait
	// for the WAL flush keep the test fast. Atomicity and the claim's
	// unique index, which this test is about, are unchanged.
	pool := db.NewPool(t, func(c *pgxpool.Config) {
		c.MaxConns = 24
		c.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	_, err := pool.Exec(ctx, `CREATE TABLE effects (message_id text NOT NULL, member int NOT NULL)`)
	require.NoError(t, err)
	store, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema})
	require.NoError(t, err)
	defer func() { require.NoError(t, store.Close(context.Background())) }() // stops its background pruner

	const n, partitions = 20000, 6
	addrs := brokers(t)
	topic := uniqueTopic("rebalance")
	group := topic
	prod := client(t, addrs)

	type member struct {
		src  *Source
		stop func()
		id   int
	}
	var (
		mu       sync.Mutex
		members  []*member
		nextID   int
		outcomes = &countObserver{}
		handled  atomic.Int64
	)
	start := func() {
		mu.Lock()
		nextID++
		id := nextID
		mu.Unlock()
		src := newSource(t, Config{Brokers: addrs, Topic: topic, Group: group, TopicPartitions: partitions, CommitInterval: 200 * time.Millisecond, RevokeTimeout: 5 * time.Second,
			// Members learn of a rebalance at their next heartbeat (3s by
			// default); beat faster so the churn is felt quickly.
			Opts: []kgo.Opt{kgo.HeartbeatInterval(200 * time.Millisecond)}})
		h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
			handled.Add(1)
			_, err := tx.Exec(ctx, `INSERT INTO effects (message_id, member) VALUES ($1, $2)`, m.ID, id)
			return err
		})
		c, err := consumer.New(src, h, consumer.Config{Name: group, Concurrency: 8, Logger: testLogger(), Observer: outcomes}, middleware.Idempotency(store))
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- c.Run(context.Background()) }()
		m := &member{src: src, id: id}
		m.stop = func() {
			sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer scancel()
			if err := c.Stop(sctx); err != nil {
				t.Errorf("member %d: Stop: %v", id, err)
			}
			if err := <-done; err != nil {
				t.Errorf("member %d: Run: %v", id, err)
			}
		}
		mu.Lock()
		members = append(members, m)
		mu.Unlock()
	}
	// The first member creates the topic with its partitions.
	start()

	// Producer: 20,000 records in batches over a few seconds.
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		const batch = 500
		for i := 0; i < n; i += batch {
			msgs := make([]*consumer.Message, batch)
			for j := range msgs {
				msgs[j] = &consumer.Message{ID: fmt.Sprintf("m-%05d", i+j), Key: fmt.Sprintf("k%d", (i+j)%97), Body: []byte("x")}
			}
			recs := make([]*kgo.Record, len(msgs))
			for j, m := range msgs {
				recs[j] = &kgo.Record{Topic: topic, Key: []byte(m.Key), Value: m.Body, Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(m.ID)}}}
			}
			if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	count := func() (total, distinct int) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT message_id) FROM effects`).Scan(&total, &distinct))
		return
	}

	// Churn: keep 1-3 members, replacing one about every second.
	start()
	start()
	rounds, crashes := 0, 0
	for {
		_, distinct := count()
		select {
		case <-produced:
			if distinct >= n {
				goto settled
			}
		default:
		}
		if ctx.Err() != nil {
			t.Fatalf("timed out: %d of %d records took effect", distinct, n)
		}
		time.Sleep(time.Duration(800+rand.IntN(400)) * time.Millisecond)
		mu.Lock()
		victim := members[rand.IntN(len(members))]
		mu.Unlock()
		if rounds%3 == 2 {
			victim.src.crash() // no commit: its partitions restart from the last commit
			crashes++
		}
		victim.stop()
		mu.Lock()
		for i, m := range members {
			if m == victim {
				members = append(members[:i], members[i+1:]...)
				break
			}
		}
		mu.Unlock()
		start()
		rounds++
	}
settled:
	mu.Lock()
	all := members
	members = nil
	mu.Unlock()
	for _, m := range all {
		m.stop()
	}
	total, distinct := count()
	require.Equal(t, n, distinct, "records with an effect")
	require.Equal(t, n, total, "effects (each exactly once)")
	require.GreaterOrEqual(t, rounds, 3, "membership changes")
	t.Logf("%d records, %d membership changes (%d crashes), %d handler runs, %d processed, %d duplicates absorbed, %d abandoned",
		n, rounds, crashes, handled.Load(), outcomes.count(consumer.OutcomeProcessed), outcomes.count(consumer.OutcomeDuplicate), outcomes.count(consumer.OutcomeAbandoned))
}
