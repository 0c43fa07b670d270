// Package carts creates orders from checked-out carts.
package carts

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes checkouts until ctx is done. orders is the orders database
// (claims and orders), catalog a read replica of the catalog.
func Run(ctx context.Context, orders, catalog *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(orders)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "carts.checked-out", "carts")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &checkoutHandler{catalog: catalog}, consumer.Config{Name: "carts"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
