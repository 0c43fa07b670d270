package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// Through the runtime: a message whose handler connection the server kills
// on every attempt, while the database answers, is retried and then
// dead-lettered (reason exhausted) like any failing message. The breaker
// never opens and every other message, batch-mates included, is processed
// exactly once.
func TestKilledConnectionIsTheMessagesFailure(t *testing.T) {
	for name, cfg := range map[string]pgstore.Config{
		"single": {},
		"batch":  {BatchSize: 8, BatchLinger: 2 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			const n = 40
			db := pgtest.New(t)
			createEffects(t, db)
			s := newStore(t, db, cfg)
			broker := memory.NewBroker()
			msgs := make([]*consumer.Message, n)
			for i := range msgs {
				msgs[i] = &consumer.Message{ID: fmt.Sprintf("m%02d", i), Key: fmt.Sprint("k", i%8), Body: []byte("x")}
			}
			const victim = "m17"
			require.NoError(t, broker.Publish(context.Background(), "payments", msgs...))

			rec := newRecorder()
			h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
				if _, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ($1)", msg.ID); err != nil {
					return err
				}
				if msg.ID != victim {
					return nil
				}
				_, err := tx.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
				return err
			})
			c, err := consumer.New(broker.NewSource("payments", "ledger"), h, consumer.Config{
				Name:             "ledger",
				Concurrency:      max(4, cfg.BatchSize),
				BreakerThreshold: 2,
				OutageBackoff:    retry.Policy{InitialInterval: 20 * time.Millisecond, MaxInterval: 200 * time.Millisecond},
				Retry:            retry.Policy{MaxAttempts: 3, InitialInterval: 5 * time.Millisecond, MaxInterval: 5 * time.Millisecond},
				Observer:         rec,
				Logger:           quiet,
			}, middleware.Idempotency(s))
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- c.Run(context.Background()) }()
			require.Eventually(t, func() bool {
				return rec.done() == n-1 && len(broker.DeadLetters("payments", "ledger")) == 1 && broker.Depth("payments") == 0
			}, 30*time.Second, 5*time.Millisecond, "the others are processed and the victim is dead-lettered")
			require.NoError(t, c.Stop(context.Background()))
			require.NoError(t, <-done)

			dl := broker.DeadLetters("payments", "ledger")
			require.Equal(t, victim, dl[0].ID)
			require.Equal(t, consumer.ReasonExhausted, dl[0].Header(consumer.HeaderDeadLetterReason))
			require.Zero(t, rec.breakerOpen, "a killed connection while the database answers is no outage")
			require.Equal(t, 2, rec.count(consumer.OutcomeRetried), "the victim's attempts 1 and 2 were retried")
			counts := effectCounts(t, db)
			require.Len(t, counts, n-1)
			require.NotContains(t, counts, victim)
			for id, k := range counts {
				require.Equal(t, 1, k, id)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for id, k := range rec.settled {
				require.Equal(t, 1, k, "%s acked once", id)
			}
		})
	}
}
