// Package planetarium sells show seats and checks each booking against the
// dome's capacity and the visitor's membership.
package planetarium

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/platform/kit"
)

// Run consumes seat bookings until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("planetarium: %w", err)
	}
	src, err := broker.Source(ctx, "planetarium.bookings", "planetarium-box-office")
	if err != nil {
		return fmt.Errorf("planetarium: %w", err)
	}
	bo := &boxOffice{log: log}
	c, err := consumer.New(src, postgres.HandlerFunc(kit.Typed(bo.book)),
		consumer.Config{Name: "planetarium-box-office", Concurrency: 4}, kit.Standard(st, log)...)
	if err != nil {
		return fmt.Errorf("planetarium: %w", err)
	}
	return c.Run(ctx)
}
