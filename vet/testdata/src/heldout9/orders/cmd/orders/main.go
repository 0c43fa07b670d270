// Command orders runs the order service's consumers.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/orders/internal/handlers"
	"heldout9/orders/internal/platform"
)

func main() {
	ctx := context.Background()
	log := slog.Default()
	var pool *pgxpool.Pool
	st, err := postgres.New(pool)
	if err != nil {
		os.Exit(1)
	}
	broker, err := adapters.Open(ctx, os.Getenv("BROKER_URL"))
	if err != nil {
		os.Exit(1)
	}
	set := handlers.Set{Log: log}
	timed := platform.Timed(log)

	placedSrc, _ := broker.Source(ctx, "orders.placed", "orders")
	placed, err := consumer.New(placedSrc, postgres.HandlerFunc(set.Placed), consumer.Config{Name: "orders-placed"}, timed, middleware.Idempotency(st))
	if err != nil {
		os.Exit(1)
	}
	paidSrc, _ := broker.Source(ctx, "payments.captured", "orders")
	paid, err := consumer.New(paidSrc, postgres.HandlerFunc(set.Paid), consumer.Config{Name: "orders-paid"}, timed, middleware.Idempotency(st))
	if err != nil {
		os.Exit(1)
	}
	auditSrc, _ := broker.Source(ctx, "orders.*", "orders-audit")
	audit, err := consumer.New(auditSrc, postgres.HandlerFunc(set.Audit), consumer.Config{Name: "orders-audit", Concurrency: 4}, timed, middleware.Logging()) // want "."
	if err != nil {
		os.Exit(1)
	}
	for _, c := range []*consumer.Consumer{paid, audit} {
		go c.Run(ctx)
	}
	_ = placed.Run(ctx)
}
