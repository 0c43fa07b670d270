// Package reviews moderates and publishes product reviews.
package reviews

import (
	"context"
	"net/http"
	"time"

	"heldout3/reviews/moderation"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes submitted reviews until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, moderationURL string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "reviews.submitted", "reviews")
	if err != nil {
		return err
	}
	s := &submissions{mod: &moderation.Client{BaseURL: moderationURL, HTTP: &http.Client{Timeout: 3 * time.Second}}}
	c, err := consumer.New(src, s, consumer.Config{Name: "reviews"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
