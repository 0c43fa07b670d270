package clinic

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/clinic/adapters/webhook"
)

// Boot runs the result filer on Redis Streams.
func Boot(ctx context.Context, pool *pgxpool.Pool) error {
	filer := NewResultFiler(webhook.New(&http.Client{Timeout: 10 * time.Second}, "practices.example"))
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "redis://redis:6379/2")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "lab.results", "result-filer")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(filer.File), consumer.Config{Name: "result-filer"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
