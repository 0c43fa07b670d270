// Package lateoktimeout is a held-out corpus package (fifth round): the
// handler bounds its statements with a child context.
package lateoktimeout

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ budget time.Duration }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	ctx, cancel := context.WithTimeout(ctx, h.budget)
	defer cancel()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", m.ID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "INSERT INTO bookings (id) VALUES ($1)", m.ID)
	return err
}

func New() consumer.Handler {
	return postgres.HandlerFunc((&handler{budget: 2 * time.Second}).handle)
}
