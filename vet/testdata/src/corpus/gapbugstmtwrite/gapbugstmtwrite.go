// Package gapbugstmtwrite is a corpus handler package with a bug (see
// vet/corpus_test.go): a statement prepared on the pool with an
// INSERT … RETURNING, queried through QueryRowContext in the handler: the
// row commits on its own.
package gapbugstmtwrite

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ insertTicket *sql.Stmt }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var id int64
	if err := h.insertTicket.QueryRowContext(ctx, m.ID).Scan(&id); err != nil { // want `\*sql.Stmt.QueryRowContext runs outside the claim's transaction`
		return err
	}
	_, err := tx.Exec(ctx, "UPDATE queues SET last_ticket = $1", id)
	return err
}

// New builds the handler over db.
func New(ctx context.Context, db *sql.DB) (consumer.Handler, error) {
	stmt, err := db.PrepareContext(ctx, `INSERT INTO tickets (msg) VALUES ($1) RETURNING id`)
	if err != nil {
		return nil, err
	}
	return postgres.HandlerFunc((&handler{insertTicket: stmt}).handle), nil
}
