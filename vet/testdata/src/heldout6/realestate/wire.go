package realestate

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout6/realestate/db"
)

// Run wires the listing feed consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	f := &Feed{Queries: db.New(pool)}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(f.apply), consumer.Config{Name: "mls-feed"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
