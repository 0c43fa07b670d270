package carrierrates

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run chooses carriers until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, ratesURL string) error {
	src, err := broker.Source(ctx, "wms.shipment-packed", "carrier-choice")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c := &chooser{rates: &rateCard{base: ratesURL, hc: &http.Client{Timeout: 5 * time.Second}}}
	cons, err := consumer.New(src, postgres.HandlerFunc(c.choose), consumer.Config{Name: "carrier-choice"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return cons.Run(ctx)
}
