package routing

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type orders struct {
	log *slog.Logger
}

func (o *orders) created(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO orders (id, status) VALUES ($1, 'open')`, msg.Key)
	return err
}

func (o *orders) cancelled(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'cancelled' WHERE id = $1`, msg.Key); err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	go o.releaseStock(ctx, tx, msg.Key) // want "goroutine"
	return nil
}

func (o *orders) releaseStock(ctx context.Context, tx pgx.Tx, orderID string) {
	if _, err := tx.Exec(ctx, `UPDATE stock SET reserved = reserved - l.qty FROM order_lines l WHERE l.order_id = $1 AND l.sku = stock.sku`, orderID); err != nil {
		o.log.Error("release stock", "order", orderID, "err", err)
	}
}

// Run wires the order router.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	o := &orders{log: slog.Default()}
	r := &router{routes: map[string]route{
		"order.created":   o.created,
		"order.cancelled": o.cancelled,
	}}
	src, err := broker.Source(ctx, "orders", "order-router")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(r.dispatch), consumer.Config{Name: "order-router"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
