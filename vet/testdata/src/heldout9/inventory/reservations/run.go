package reservations

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/inventory/stock"
)

// Consumers builds the inventory consumers.
func Consumers(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) ([]*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	r := NewReserver(stock.NewLevels(), log)
	var out []*consumer.Consumer
	for _, spec := range []struct {
		topic string
		fn    func(context.Context, pgx.Tx, *consumer.Message) error
	}{{"orders.placed", r.Reserve}, {"orders.cancelled", r.Release}} {
		src, err := broker.Source(ctx, spec.topic, "inventory")
		if err != nil {
			return nil, err
		}
		c, err := consumer.New(src, postgres.HandlerFunc(spec.fn), consumer.Config{Name: "inventory-" + spec.topic}, middleware.Idempotency(st))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
