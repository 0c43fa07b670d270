package loom

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/shared/obs"
)

// Run consumes inspections from RabbitMQ.
func Run(ctx context.Context, pool *pgxpool.Pool, url string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, url)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "mill.inspections", "roll-grader")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(Inspection{}.Grade), consumer.Config{Name: "roll-grader"},
		obs.Tagged("loom"), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
