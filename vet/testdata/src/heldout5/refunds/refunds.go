// Package refunds records POS refunds.
package refunds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout5/refunds/refundsdb"
)

// Handler records refunds.
type Handler struct {
	queries *refundsdb.Queries
}

// Handle records one refund, capped at the sale's total.
func (h *Handler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("refunds: no claim transaction")
	}
	q := h.queries.WithTx(tx)
	var in refundsdb.InsertRefundParams
	if err := json.Unmarshal(msg.Body, &in); err != nil {
		return consumer.Permanent(err)
	}
	total, err := q.GetSaleTotal(ctx, in.SaleID)
	if err != nil {
		return fmt.Errorf("sale %s: %w", in.SaleID, err)
	}
	if in.Cents > total {
		return consumer.Permanent(fmt.Errorf("refund %d over sale total %d", in.Cents, total))
	}
	return q.InsertRefund(ctx, in)
}

// Run consumes refunds.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := &Handler{queries: refundsdb.New(pool)}
	c, err := consumer.New(src, h, consumer.Config{Name: "refunds"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
