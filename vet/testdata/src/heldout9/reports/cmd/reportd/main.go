// Command reportd records report requests.
package main

import (
	"context"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/reports/internal/janitor"
	"heldout9/reports/internal/requests"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var pool *pgxpool.Pool
	go janitor.Run(ctx, pool, 30*24*time.Hour, time.Hour)
	st, err := postgres.New(pool)
	if err != nil {
		os.Exit(1)
	}
	broker, err := adapters.Open(ctx, os.Getenv("BROKER_URL"))
	if err != nil {
		os.Exit(1)
	}
	h := &requests.Handler{MaxColumns: 64}
	reqSrc, _ := broker.Source(ctx, "reports.requested", "reports")
	cancelSrc, _ := broker.Source(ctx, "reports.cancelled", "reports")
	req, err := consumer.New(reqSrc, postgres.HandlerFunc(h.Request), consumer.Config{Name: "reports-request"}, middleware.Idempotency(st))
	if err != nil {
		os.Exit(1)
	}
	cancel, err := consumer.New(cancelSrc, postgres.HandlerFunc(h.Cancel), consumer.Config{Name: "reports-cancel"}, middleware.Idempotency(st))
	if err != nil {
		os.Exit(1)
	}
	go cancel.Run(ctx)
	_ = req.Run(ctx)
}
