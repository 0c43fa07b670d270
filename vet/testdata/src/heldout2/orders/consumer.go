// Package orders records checkouts and serves order totals.
package orders

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/orders/orderdb"
)

type checkout struct {
	OrderID    string `json:"order_id"`
	CustomerID string `json:"customer_id"`
	TotalCents int64  `json:"total_cents"`
}

// App holds the queries built over the pool, shared by the consumer and
// the HTTP API.
type App struct {
	Queries *orderdb.Queries
}

func (a *App) onCheckout(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c checkout
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	q := a.Queries.WithTx(tx)
	if err := q.InsertOrder(ctx, orderdb.InsertOrderParams{ID: c.OrderID, CustomerID: c.CustomerID, TotalCents: c.TotalCents}); err != nil {
		return fmt.Errorf("insert order: %w", err)
	}
	return nil
}

// Consume wires the checkout consumer.
func Consume(ctx context.Context, pool *pgxpool.Pool, app *App, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "checkouts", "orders")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(app.onCheckout), consumer.Config{Name: "orders"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// NewApp builds the App over pool.
func NewApp(pool *pgxpool.Pool) *App {
	return &App{Queries: orderdb.New(pool)}
}
