// Package gapbugplainiface is a corpus handler package with a bug (see
// vet/corpus_test.go): a plain consumer.Handler, held in a variable of
// interface type, wired behind Idempotency with the Postgres store, writes
// through the pool.
package gapbugplainiface

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type redeemer struct{ pool *pgxpool.Pool }

func (r *redeemer) Handle(ctx context.Context, m *consumer.Message) error {
	var left int
	if err := r.pool.QueryRow(ctx, "SELECT remaining FROM coupons WHERE code = $1", m.ID).Scan(&left); err != nil || left == 0 {
		return err
	}
	_, err := r.pool.Exec(ctx, "UPDATE coupons SET remaining = remaining - 1 WHERE code = $1", m.ID) // want `\*pgxpool.Pool.Exec runs outside the claim's transaction`
	return err
}

// New wires the consumer.
func New(src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	var h consumer.Handler = &redeemer{pool: pool}
	return consumer.New(src, h, consumer.Config{Name: "coupons"}, middleware.Logging(), middleware.Idempotency(st))
}
