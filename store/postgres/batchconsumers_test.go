package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// TestBatchConsumersConcurrentCopies publishes every message n times and
// runs n competing consumers of a BatchHandler on one store, so copies of a
// message meet inside one batch, in concurrent batches of different
// consumers, and as redeliveries after their claim committed. Bugs caught:
// an effect applied twice by copies in concurrent batch transactions, a
// copy inside a batch applied again, a duplicate never acked.
func TestBatchConsumersConcurrentCopies(t *testing.T) {
	for _, n := range []int{2, 8, 32} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			const msgs = 60
			db := pgtest.New(t, pgtest.Options{MaxConns: 8})
			createEffects(t, db)
			s := newStore(t, db, pgstore.Config{})
			broker := memory.NewBroker()
			var all []*consumer.Message
			for k := range n {
				for i := range msgs {
					all = append(all, &consumer.Message{ID: fmt.Sprintf("m%03d", (i+k*7)%msgs), Key: fmt.Sprint("k", i%5)})
				}
			}
			require.NoError(t, broker.Publish(context.Background(), "payments", all...))

			rec := newRecorder()
			h := pgstore.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, batch []*consumer.Message) error {
				ids := make([]string, len(batch))
				for i, m := range batch {
					ids[i] = m.ID
				}
				_, err := tx.Exec(ctx, "INSERT INTO effects (id) SELECT unnest($1::text[])", ids)
				return err
			})
			var wg sync.WaitGroup
			var cs []*consumer.Consumer
			for range n {
				c, err := consumer.New(broker.NewSource("payments", "ledger"), h, consumer.Config{
					Name: "ledger", Concurrency: 2, BatchSize: 16, BatchMaxWait: time.Millisecond, Observer: rec, Logger: quiet,
				}, middleware.Idempotency(s))
				require.NoError(t, err)
				cs = append(cs, c)
				wg.Go(func() { _ = c.Run(context.Background()) })
			}
			require.Eventually(t, func() bool { return rec.done() == n*msgs }, 60*time.Second, 5*time.Millisecond,
				"every copy acked as processed or duplicate")
			for _, c := range cs {
				require.NoError(t, c.Stop(context.Background()))
			}
			wg.Wait()
			counts := effectCounts(t, db)
			require.Len(t, counts, msgs)
			for id, c := range counts {
				require.Equal(t, 1, c, "effects of %s", id)
			}
			require.Equal(t, msgs, rec.count(consumer.OutcomeProcessed))
			require.Equal(t, (n-1)*msgs, rec.count(consumer.OutcomeDuplicate))
			require.Zero(t, broker.Depth("payments"))
		})
	}
}
