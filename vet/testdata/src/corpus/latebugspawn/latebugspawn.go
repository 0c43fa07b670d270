// Package latebugspawn is a held-out corpus package (fifth round): a
// helper of the handler starts the follow-up in a goroutine.
package latebugspawn

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{}

func (h *handler) followUp(ctx context.Context, tx pgx.Tx, id string) {
	go func() { // want `handler's transaction`
		_, _ = tx.Exec(ctx, "UPDATE leads SET followed_up = true WHERE id = $1", id)
	}()
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO leads (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	h.followUp(ctx, tx, m.ID)
	return nil
}

func New() consumer.Handler { return postgres.HandlerFunc((&handler{}).handle) }
