// Package repo is the invoicing data layer. A Repo runs its statements on
// whatever it was built over: the pool for the API's reads, the claim's
// transaction in consumers.
package repo

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// DB is satisfied by *pgxpool.Pool, *pgx.Conn and pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Repo reads and writes credit notes.
type Repo struct {
	db DB
}

// New returns a Repo over db.
func New(db DB) *Repo { return &Repo{db: db} }

// WithTx returns a Repo that runs in tx.
func (r *Repo) WithTx(tx pgx.Tx) *Repo { return &Repo{db: tx} }

// CreditNote is a correction of an invoice.
type CreditNote struct {
	ID          string
	InvoiceID   string
	AmountCents int64
}

// InsertCreditNote stores n.
func (r *Repo) InsertCreditNote(ctx context.Context, n CreditNote) error {
	_, err := r.db.Exec(ctx, `INSERT INTO credit_notes (id, invoice_id, amount_cents) VALUES ($1, $2, $3)`,
		n.ID, n.InvoiceID, n.AmountCents)
	return err
}

// ReduceOutstanding lowers the invoice's outstanding amount.
func (r *Repo) ReduceOutstanding(ctx context.Context, invoiceID string, cents int64) error {
	_, err := r.db.Exec(ctx, `UPDATE invoices SET outstanding_cents = outstanding_cents - $2 WHERE id = $1`, invoiceID, cents)
	return err
}

// CreditNote returns the credit note with the given ID.
func (r *Repo) CreditNote(ctx context.Context, id string) (CreditNote, error) {
	var n CreditNote
	err := r.db.QueryRow(ctx, `SELECT id, invoice_id, amount_cents FROM credit_notes WHERE id = $1`, id).
		Scan(&n.ID, &n.InvoiceID, &n.AmountCents)
	return n, err
}
