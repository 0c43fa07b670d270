package sawmill

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/platform/kit"
)

type cutFinished struct {
	OrderID string `json:"order_id"`
	SKU     string `json:"sku"`
	Boards  int    `json:"boards"`
}

type mill struct{ c *container }

func (m *mill) finished(ctx context.Context, tx pgx.Tx, job cutFinished) error {
	if job.Boards <= 0 {
		return consumer.Permanent(fmt.Errorf("order %s: %d boards", job.OrderID, job.Boards))
	}
	if err := m.c.orders.WithTx(tx).MarkCut(ctx, job.OrderID, job.Boards); err != nil {
		return err
	}
	if err := m.c.stock.Adjust(ctx, job.SKU, job.Boards); err != nil { // want "pool"
		return err
	}
	m.c.log.Info("cut finished", "order", job.OrderID, "boards", job.Boards)
	return nil
}

// Run consumes finished cutting jobs until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	c, err := buildContainer(pool, log)
	if err != nil {
		return fmt.Errorf("sawmill: %w", err)
	}
	src, err := broker.Source(ctx, "sawmill.cuts", "sawmill")
	if err != nil {
		return fmt.Errorf("sawmill: %w", err)
	}
	m := &mill{c: c}
	cons, err := consumer.New(src, postgres.HandlerFunc(kit.Typed(m.finished)),
		consumer.Config{Name: "sawmill"}, kit.Standard(c.store, log)...)
	if err != nil {
		return fmt.Errorf("sawmill: %w", err)
	}
	return cons.Run(ctx)
}
