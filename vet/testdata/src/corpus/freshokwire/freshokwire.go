// Package freshokwire is a held-out corpus package (second round): a
// service's main wiring a handler of another package, which writes in the
// claim's transaction, behind the Postgres claim.
package freshokwire

import (
	"context"

	"corpus/internal/shipping"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	h := &shipping.Handler{Pool: pool}
	if err := h.Healthy(ctx); err != nil {
		return nil, err
	}
	return consumer.New(src, h, consumer.Config{Name: "shipping"}, middleware.Idempotency(st))
}
