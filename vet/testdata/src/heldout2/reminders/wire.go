package reminders

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

var errNoTx = errors.New("reminders: no claim transaction in context")

// Run wires the reminder consumer and its flusher.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "appointments", "reminders")
	if err != nil {
		return err
	}
	h := &Handler{}
	go h.Flush(ctx, 5*time.Second)
	c, err := consumer.New(src, h, consumer.Config{Name: "reminders"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
