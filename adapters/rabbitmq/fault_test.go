//go:build faults

package rabbitmq

import (
	"context"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// brokerRestart stops and starts the RabbitMQ application (rabbitmqctl
// stop_app / start_app) while 10,000 messages flow: half published before,
// half by a producer that keeps publishing through the outage. The consumer
// recovers by itself; with claim-first idempotency in Postgres every
// message's effect is applied exactly once, and nothing is lost. It stops
// a shared service, so it runs only with -tags faults, as the BrokerRestart
// cell of TestFaultMatrix.
func brokerRestart(t *testing.T) {
	const n = 10_000
	db := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE "+effectsTable+" (message_id text NOT NULL, attempt int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	effects := func() (rows, distinct int) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT message_id) FROM "+effectsTable).Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		return rows, distinct
	}
	restarted := false
	t.Cleanup(func() {
		if restarted {
			rabbitmqctl(t, "start_app") // never leave the shared broker stopped
		}
	})
	queue := uniqueName("restart")
	cleanupTopology(t, queue, "ledger", testTiers)
	all := msgs("m", n)
	publish(t, queue, all[:n/2]...)

	st, err := pgstore.New(db.Pool, pgstore.Config{Schema: db.Schema, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) }) // after the consumer stopped
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: 64})
	obs := newCounter()
	h, mws := consumerChain(st, 0)
	_, stop := runConsumer(t, src, h, consumer.Config{Name: "ledger", Concurrency: 8, Ordering: consumer.Unordered, Observer: obs}, mws...)

	// The producer publishes the second half in batches, through the outage:
	// Publish returns only once the broker confirmed a batch.
	produced := make(chan error, 1)
	go func() {
		for i := n / 2; i < n; i += 100 {
			pctx, pcancel := context.WithTimeout(ctx, 120*time.Second)
			err := pub.Publish(pctx, queue, all[i:i+100]...)
			pcancel()
			if err != nil {
				produced <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		produced <- nil
	}()

	adaptertest.WaitUntil(t, 60*time.Second, "2,000 effects before the restart", func() bool { r, _ := effects(); return r >= 2000 })
	restarted = true
	start := time.Now()
	rabbitmqctl(t, "stop_app")
	atStop, _ := effects()
	time.Sleep(2 * time.Second)
	rabbitmqctl(t, "start_app")
	restarted = false
	t.Logf("broker down for %s (stop_app … start_app); %d effects when it stopped", time.Since(start).Round(time.Millisecond), atStop)

	if err := <-produced; err != nil {
		t.Fatalf("producer: %v", err)
	}
	adaptertest.WaitUntil(t, 180*time.Second, "every message's effect", func() bool { _, d := effects(); return d >= n })
	adaptertest.WaitUntil(t, 30*time.Second, "the queue to drain", func() bool { return depth(t, queue) == 0 })
	stop()

	rows, distinct := effects()
	t.Logf("reconnects %d; processed %d, duplicates skipped %d, abandoned on lost leases %d; effects %d rows, %d distinct",
		src.reconnects.Load(), obs.get(consumer.OutcomeProcessed), obs.get(consumer.OutcomeDuplicate), obs.get(consumer.OutcomeAbandoned), rows, distinct)
	if rows != n || distinct != n {
		t.Errorf("effects: %d rows for %d distinct messages, want %d and %d: lost %d, duplicated %d", rows, distinct, n, n, n-distinct, rows-distinct)
	}
	if src.reconnects.Load() < 1 {
		t.Errorf("the Source never reconnected")
	}
	if d := depth(t, DeadLetterQueue(queue, "ledger")); d != 0 {
		t.Errorf("%d dead letters, want 0", d)
	}
}
