// Package inventory is a team's message handler, wired by its service's
// main package.
package inventory

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

// Handler reserves stock for an order.
type Handler struct{ pool *pgxpool.Pool }

func NewHandler(pool *pgxpool.Pool) *Handler { return &Handler{pool: pool} }

func (h *Handler) Handle(ctx context.Context, m *consumer.Message) error {
	_, err := h.pool.Exec(ctx, "UPDATE stock SET reserved = reserved + 1 WHERE order_id = $1", m.ID)
	return err
}
