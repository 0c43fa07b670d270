package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/rabbitmq"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/retry"
)

// TestLedgerEventsRabbitMQ: on RabbitMQ, in each handler mode, every
// applied payment's ledger.applied event is in the outbox with its derived
// ID, key, body and per-account seq, published by the in-process relay and
// on the broker. The events queue does not exist before: the relay's
// Publish declares it. Then the queue is deleted under the running ledger:
// the next events are not published into the void (a publish to a missing
// queue is returned unroutable and published again after declaring it), so
// every one of them is on the recreated queue before its row is marked.
// Catches: events lost to a destination nobody created, and every bug
// eventsCheck names.
func TestLedgerEventsRabbitMQ(t *testing.T) {
	rabbitURL := envtest.RabbitMQ(t)
	for _, tc := range []struct {
		dedupe bool
		batch  int
	}{{true, 0}, {true, 8}, {false, 0}} {
		t.Run(fmt.Sprintf("dedupe=%t,batch=%d", tc.dedupe, tc.batch), func(t *testing.T) {
			e := newLedgerEnv(t)
			suffix := fmt.Sprintf("%08x", rand.Uint32())
			source, name, events, checker := "payments-ev-"+suffix, "ledger-ev-"+suffix, "ledger-applied-"+suffix, "events-check"
			conn, err := amqp.Dial(rabbitURL)
			require.NoError(t, err)
			t.Cleanup(func() {
				deleteRabbit(t, conn, source, name)
				deleteRabbit(t, conn, events, checker)
				_ = conn.Close()
			})
			require.False(t, queueExists(t, conn, events), "the events queue does not exist before the ledger runs")

			b, err := adapters.Open(context.Background(), rabbitURL)
			require.NoError(t, err)
			defer b.Close()
			// Keyed by payment, not by account: the runtime orders by key, so
			// one account's payments run concurrently, as on several replicas,
			// and only the account's row lock orders their seqs.
			byPayment := func(m *consumer.Message) *consumer.Message { m.Key = m.ID; return m }
			var msgs []*consumer.Message
			for i := range 60 {
				msgs = append(msgs, byPayment(pay(fmt.Sprintf("p%02d", i), fmt.Sprintf("acc-%d", i%3), i+1)))
			}
			msgs = append(msgs, byPayment(pay("p01", "acc-1", 2)), byPayment(pay("p07", "acc-1", 8))) // redelivered copies
			require.NoError(t, b.Publish(context.Background(), source, msgs...))

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logs envtest.Buffer
			cfg := config{brokerURL: rabbitURL, databaseURL: e.dbURL, dedupe: tc.dedupe, concurrency: 4, batch: tc.batch, source: source, consumer: name,
				schema: e.schema, maxAttempts: 3, retryDelay: 50 * time.Millisecond, events: events, relay: true}
			done := make(chan error, 1)
			go func() { done <- serve(ctx, cfg, slog.New(slog.NewJSONHandler(&logs, nil))) }()

			applied := 60
			if !tc.dedupe {
				applied = 62 // plain at-least-once: both copies applied, two events, two seqs
			}
			entries := func() (n int) {
				// Fails until serve created the table.
				_ = e.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+e.schema+".ledger_entries").Scan(&n)
				return n
			}
			waitEntries := func(n int) {
				require.Eventually(t, func() bool { return entries() == n }, 60*time.Second, 50*time.Millisecond,
					"%d entries of %d\n%s", entries(), n, &logs)
			}
			waitEntries(applied)
			ec := eventsCheck{pool: e.pool, schema: e.schema, outboxSchema: e.schema, destination: events, consumerName: name}
			first := ec.want(t)
			require.Len(t, first, applied)
			ec.checkOutbox(t, first, true)
			ec.checkBroker(t, b, checker, first)

			// The events queue disappears under the running relay.
			ch, err := conn.Channel()
			require.NoError(t, err)
			_, err = ch.QueueDelete(events, false, false, false)
			require.NoError(t, err)
			require.NoError(t, ch.Close())
			var more []*consumer.Message
			for i := range 10 {
				more = append(more, byPayment(pay(fmt.Sprintf("q%02d", i), fmt.Sprintf("acc-%d", i%3), 100)))
			}
			require.NoError(t, b.Publish(context.Background(), source, more...))
			waitEntries(applied + len(more))
			all := ec.want(t)
			ec.checkOutbox(t, all, true)
			// Marked published, so the broker confirmed them: they are on the
			// queue the relay declared again (no Source has declared it).
			ch, err = conn.Channel()
			require.NoError(t, err)
			q, err := ch.QueueDeclarePassive(events, true, false, false, false, nil)
			require.NoError(t, err, "the relay declared the deleted events queue again")
			require.NoError(t, ch.Close())
			require.Equal(t, len(more), q.Messages, "every event after the deletion is on the queue")
			ec.checkBroker(t, b, checker, all[len(first):])
			require.Contains(t, logs.String(), "publishes not confirmed; publishing them again", "the publish to the deleted queue came back unroutable")

			cancel()
			require.NoError(t, <-done, "consumer and relay stop cleanly\n%s", &logs)
			require.Contains(t, logs.String(), `"msg":"ledger stopped cleanly"`)
		})
	}
}

// queueExists reports whether queue is declared (a passive declare of a
// missing queue closes its channel with 404).
func queueExists(t *testing.T, conn *amqp.Connection, queue string) bool {
	ch, err := conn.Channel()
	require.NoError(t, err)
	defer func() { _ = ch.Close() }()
	_, err = ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	return err == nil
}

// deleteRabbit deletes the queues and the dead-letter exchange of (source,
// consumerName).
func deleteRabbit(t *testing.T, conn *amqp.Connection, source, consumerName string) {
	ch, err := conn.Channel()
	require.NoError(t, err)
	defer func() { _ = ch.Close() }()
	queues := []string{source, rabbitmq.DeadLetterQueue(source, consumerName)}
	for _, d := range retry.DefaultTiers {
		queues = append(queues, rabbitmq.RetryQueue(source, consumerName, d))
	}
	for _, q := range queues {
		_, _ = ch.QueueDelete(q, false, false, false)
	}
	_ = ch.ExchangeDelete(source+".dlx", false, false)
}
