// Package courier assigns delivery jobs to couriers.
package courier

import (
	"context"
	"net/http"
	"time"

	"heldout3/courier/eta"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes job events until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, routingURL string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "courier.jobs", "courier")
	if err != nil {
		return err
	}
	d := &dispatcher{eta: &eta.Client{Base: routingURL, HTTP: &http.Client{Timeout: 2 * time.Second}}, now: time.Now}
	d.register()
	c, err := consumer.New(src, handler, consumer.Config{Name: "courier"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
