// Package inventory adjusts stock levels from warehouse scans.
package inventory

import (
	"context"
	"errors"
	"log/slog"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

var errPanic = errors.New("inventory: handler panicked")

type adjuster struct {
	pool *pgxpool.Pool
}

func (a *adjuster) Handle(ctx context.Context, msg *consumer.Message) error {
	delta, err := strconv.Atoi(msg.Headers["delta"])
	if err != nil {
		return consumer.Permanent(err)
	}
	_, err = a.pool.Exec(ctx, `UPDATE stock SET on_hand = on_hand + $2 WHERE sku = $1`, msg.Key, delta)
	return err
}

// Run consumes warehouse scans.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	log := slog.Default()
	src, err := broker.Source(ctx, "warehouse.scans", "inventory")
	if err != nil {
		return err
	}
	chain := []consumer.Middleware{recovering(), timed(log), middleware.Logging()}
	c, err := consumer.New(src, &adjuster{pool: pool}, consumer.Config{Name: "inventory", Concurrency: 4}, chain...) // want "idempotency"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
