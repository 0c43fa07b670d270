// Package shipping is a team's message handler, wired by its service's
// main package; it writes in the claim's transaction.
package shipping

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Handler schedules a shipment; Pool is kept for the health check.
type Handler struct{ Pool *pgxpool.Pool }

func (h *Handler) Handle(ctx context.Context, m *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("shipping: no claim transaction")
	}
	_, err := tx.Exec(ctx, "INSERT INTO shipments (order_id) VALUES ($1)", m.ID)
	return err
}

// Healthy pings the database.
func (h *Handler) Healthy(ctx context.Context) error { return h.Pool.Ping(ctx) }
