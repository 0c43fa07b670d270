package shipments

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

// Start builds and runs the shipment consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, carrierURL string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := &Handlers{Carrier: carrierNew(carrierURL)}
	for name, handler := range map[string]consumer.Handler{"order.packed": h.Packed(), "carrier.delivered": h.Delivered()} {
		src, err := broker.Source(ctx, name, "shipping")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, handler, consumer.Config{Name: "shipping-" + name}, middleware.Idempotency(st))
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}

func carrierNew(url string) *carrierClient {
	return newCarrier(url, &http.Client{Timeout: 10 * time.Second})
}
