// Package imagemeta records checksums and sizes of image variants.
package imagemeta

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes variant notifications until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "media.variants-ready", "imagemeta")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(onVariantsReady), consumer.Config{Name: "imagemeta"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
