package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/consumer/consumertest"
	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// effectsOf counts the effect rows of a message, read through the pool.
func effectsOf(db *pgtest.DB) consumertest.Effects {
	return func(ctx context.Context, id string) (int, error) {
		var n int
		err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM effects WHERE id = $1", id).Scan(&n)
		return n, err
	}
}

// TestIdempotentWithPostgres: a handler writing in the claim's transaction
// passes consumertest.Idempotent's four cases, in single-message and batch
// mode; one writing through the pool is reported broken in the failed
// attempt's case, with the counts that show the duplicate. Under CI=true a
// missing database fails the test (pgtest.New).
func TestIdempotentWithPostgres(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	good := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		_, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ($1)", msg.ID)
		return err
	})
	t.Run("in the transaction", func(t *testing.T) {
		consumertest.Idempotent(t, good, newStore(t, db, pgstore.Config{}), consumertest.NewMessage("pay-1", nil), effectsOf(db))
	})
	t.Run("batch mode", func(t *testing.T) {
		s := newStore(t, db, pgstore.Config{BatchSize: 8, BatchLinger: 5 * time.Millisecond})
		consumertest.Idempotent(t, good, s, consumertest.NewMessage("pay-2", nil), effectsOf(db))
	})
	t.Run("through the pool", func(t *testing.T) {
		bad := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
			//oncely:allow txescape the deliberately broken handler the harness must catch
			_, err := db.Pool.Exec(ctx, "INSERT INTO effects (id) VALUES ($1)", msg.ID)
			return err
		})
		err := consumertest.CheckIdempotent(ctxT(t), bad, newStore(t, db, pgstore.Config{}), consumertest.NewMessage("pay-3", nil), effectsOf(db))
		require.Error(t, err)
		msg := err.Error()
		// Redelivered and crashed copies find the claim; so do concurrent
		// ones, unless the pool runs dry: seven copies block on the claim,
		// each holding a connection, while the first waits for one to write
		// through the pool — a hang the harness reports too.
		require.NotContains(t, msg, `case "`+consumertest.CaseTwice+`"`)
		require.NotContains(t, msg, `case "`+consumertest.CaseCrash+`"`)
		require.Contains(t, msg, `case "after a failed attempt"`)
		require.Contains(t, msg, "effect applied [1 2 2] times", "the failed attempt's write survived its rollback and the redelivery wrote again")
		require.Contains(t, msg, "want [0 1 1]")
	})
}
