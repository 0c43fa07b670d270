package harbor

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run warms the cache and consumes arrival announcements.
func Run(ctx context.Context, pool *pgxpool.Pool, berthIDs []string) error {
	h := NewHarbour(pool)
	if err := h.Warm(ctx, berthIDs); err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "kafka://port-kafka:9092")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "port.arrivals", "berth-planner")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(h.Assign), consumer.Config{Name: "berth-planner"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
