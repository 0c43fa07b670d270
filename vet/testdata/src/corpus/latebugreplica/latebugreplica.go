// Package latebugreplica is a held-out corpus package (fifth round): a
// handler with a primary and a replica pool, writing through the primary.
package latebugreplica

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type pools struct {
	primary *pgxpool.Pool
	replica *pgxpool.Pool
}

type handler struct{ db pools }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO clicks (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	_, err := h.db.primary.Exec(ctx, "UPDATE campaigns SET clicks = clicks + 1 WHERE id = $1", m.ID) // want `outside the claim's transaction`
	return err
}

func New(primary, replica *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc((&handler{db: pools{primary, replica}}).handle)
}
