package invoices

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// querier is satisfied by both *pgxpool.Pool and pgx.Tx.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ledger writes invoice lines through whatever querier it was given.
type ledger struct {
	db querier
}

// withTx returns a ledger bound to tx.
func (l ledger) withTx(tx pgx.Tx) ledger { return ledger{db: tx} }

func (l ledger) addLine(ctx context.Context, invoice string, cents int64) error {
	_, err := l.db.Exec(ctx, `INSERT INTO invoice_lines (invoice_id, cents) VALUES ($1, $2)`, invoice, cents)
	return err
}

func (l ledger) total(ctx context.Context, invoice string) (int64, error) {
	var t int64
	err := l.db.QueryRow(ctx, `SELECT coalesce(sum(cents), 0) FROM invoice_lines WHERE invoice_id = $1`, invoice).Scan(&t)
	return t, err
}
