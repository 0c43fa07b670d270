// Package gapokplainiface is a correct corpus handler package (see
// vet/corpus_test.go): the plain consumer.Handler held in a variable of
// interface type reads through the pool and writes through the claim's
// transaction, taken from its context.
package gapokplainiface

import (
	"context"
	"errors"

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
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("no claim transaction")
	}
	_, err := tx.Exec(ctx, "UPDATE coupons SET remaining = remaining - 1 WHERE code = $1", m.ID)
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
