package coupons

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Wire builds the coupons consumer.
func Wire(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	claims, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	src, err := broker.Source(ctx, "orders.coupon_applied", "coupons")
	if err != nil {
		return nil, err
	}
	var h consumer.Handler = &Redeemer{pool: pool}
	return consumer.New(src, h, consumer.Config{Name: "coupons"}, middleware.Logging(), middleware.Idempotency(claims))
}
