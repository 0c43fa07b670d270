// Package lastbugownsqltx is a held-out corpus package (fourth round): a
// handler of a database/sql codebase opening its own transaction beside
// the claim's.
package lastbugownsqltx

import (
	"context"
	"database/sql"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ db *sql.DB }

func (h *handler) Handle(ctx context.Context, m *consumer.Message) error {
	tx, err := h.db.BeginTx(ctx, nil) // want `outside the claim's transaction`
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO refunds (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	return tx.Commit()
}

func Wire(src consumer.Source, st *postgres.Store, db *sql.DB) (*consumer.Consumer, error) {
	return consumer.New(src, &handler{db: db}, consumer.Config{Name: "refunds"}, middleware.Idempotency(st))
}
