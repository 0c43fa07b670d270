// Package holdbugsql is a held-out corpus package (written after the
// analyzers were tuned): database/sql through the pool-equivalent *sql.DB.
package holdbugsql

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ db *sql.DB }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO a (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	_, err := h.db.ExecContext(ctx, "INSERT INTO b (id) VALUES ($1)", m.ID) // want `outside the claim's transaction`
	return err
}

func New(db *sql.DB) consumer.Handler { return postgres.HandlerFunc((&handler{db: db}).handle) }
