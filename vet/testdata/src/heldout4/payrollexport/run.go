package payrollexport

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// Run records exports, relays their events and expires stale reservations
// until ctx ends.
func Run(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, broker adapters.Broker) error {
	go expireReservations(ctx, log, pool, time.Minute)

	relay, err := outbox.NewRelay(pool, broker, outbox.Config{Schema: "payroll"})
	if err != nil {
		return err
	}
	go func() {
		if err := relay.Run(ctx); err != nil {
			log.Error("outbox relay stopped", "err", err)
		}
	}()

	src, err := broker.Source(ctx, "payroll.payment-file-generated", "payroll-export")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(recordExport), consumer.Config{Name: "payroll-export"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
