package renewals

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/subscriptions/internal/flush"
)

// Run wires the renewal consumers.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	svc := New(flush.NewQueue(ctx, 5*time.Second, log))
	for topic, h := range svc.Handlers() {
		src, err := broker.Source(ctx, topic, "subscriptions")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, h, consumer.Config{Name: "subscriptions-" + topic}, middleware.Idempotency(st))
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	<-ctx.Done()
	return nil
}
