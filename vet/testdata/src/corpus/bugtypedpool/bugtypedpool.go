// Package bugtypedpool is a corpus handler package with a bug (see vet/corpus_test.go).
package bugtypedpool

import (
	"context"
	"corpus/internal/typed"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type payout struct{ ID string }

func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc(typed.Func(func(ctx context.Context, tx pgx.Tx, p payout) error {
		_, err := pool.Exec(ctx, "INSERT INTO payouts (id) VALUES ($1)", p.ID) // want `outside the claim's transaction`
		return err
	}))
}
