// Package warehouse reserves stock for placed orders.
package warehouse

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config is the service's configuration.
type Config struct {
	// Concurrency is how many orders are reserved at once; 0 means 8.
	Concurrency int
}

// Run reserves stock until ctx is done. db and pool are the same database:
// db for the stock statements kept from the old service, pool for oncely.
func Run(ctx context.Context, cfg Config, db *sql.DB, pool *pgxpool.Pool, broker adapters.Broker) error {
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 8
	}
	hold, err := db.PrepareContext(ctx, `UPDATE stock SET reserved = reserved + $2 WHERE sku = $1`)
	if err != nil {
		return fmt.Errorf("warehouse: prepare: %w", err)
	}
	defer hold.Close()
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "orders.placed", "warehouse-reservations")
	if err != nil {
		return err
	}
	r := &reserver{holdStock: hold}
	c, err := consumer.New(src, postgres.HandlerFunc(r.onOrderPlaced),
		consumer.Config{Name: "warehouse-reservations", Concurrency: cfg.Concurrency}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
