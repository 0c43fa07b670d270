// Package mediaproc records uploaded media and plans their renditions.
package mediaproc

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes uploads until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "media.asset-uploaded", "mediaproc")
	if err != nil {
		return err
	}
	pipe := newPipeline(4, log)
	defer pipe.close()
	u := &uploads{pipe: pipe}
	c, err := consumer.New(src, postgres.HandlerFunc(u.onAssetUploaded), consumer.Config{Name: "mediaproc"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
