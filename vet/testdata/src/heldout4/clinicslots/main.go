package clinicslots

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/clinicslots/app"
)

// Run consumes booking requests until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, url string) error {
	c := app.New(pool)
	broker, err := adapters.Open(ctx, url)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "portal.booking-requested", "clinic-slots")
	if err != nil {
		return err
	}
	st, err := postgres.New(c.DB)
	if err != nil {
		return err
	}
	cons, err := consumer.New(src, &BookingHandler{c: c}, consumer.Config{Name: "clinic-slots"}, middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("booking consumer: %w", err)
	}
	return cons.Run(ctx)
}
