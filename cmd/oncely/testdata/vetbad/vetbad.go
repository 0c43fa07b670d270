// Package vetbad holds two seeded bugs for oncely vet's test.
package vetbad

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Handler writes an audit row through the pool: outside the claim's
// transaction.
func Handler(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		_, err := tx.Exec(ctx, "INSERT INTO entries (id) VALUES ($1)", msg.ID)
		if err == nil {
			_, err = pool.Exec(ctx, "INSERT INTO audit (id) VALUES ($1)", msg.ID)
		}
		return err
	})
}

// Build builds a consumer without idempotency.
func Build(src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	return consumer.New(src, Handler(pool), consumer.Config{Name: "ledger"})
}
