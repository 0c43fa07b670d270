// Package invoices is the data-access layer for invoices.
package invoices

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Invoice is one issued invoice.
type Invoice struct {
	ID          string
	OrderID     string
	CustomerID  string
	AmountCents int64
	Currency    string
	IssuedAt    time.Time
}

// Repository reads and writes invoices.
type Repository struct {
	pool *pgxpool.Pool
}

// NewRepository returns a Repository over pool.
func NewRepository(pool *pgxpool.Pool) *Repository {
	return &Repository{pool: pool}
}

// Get returns the invoice with the given ID.
func (r *Repository) Get(ctx context.Context, id string) (Invoice, error) {
	var inv Invoice
	err := r.pool.QueryRow(ctx,
		`SELECT id, order_id, customer_id, amount_cents, currency, issued_at FROM invoices WHERE id = $1`, id).
		Scan(&inv.ID, &inv.OrderID, &inv.CustomerID, &inv.AmountCents, &inv.Currency, &inv.IssuedAt)
	if err != nil {
		return Invoice{}, fmt.Errorf("get invoice %s: %w", id, err)
	}
	return inv, nil
}

// Insert stores inv.
func (r *Repository) Insert(ctx context.Context, inv Invoice) error {
	_, err := r.pool.Exec(ctx,
		`INSERT INTO invoices (id, order_id, customer_id, amount_cents, currency, issued_at)
		 VALUES ($1, $2, $3, $4, $5, $6)`,
		inv.ID, inv.OrderID, inv.CustomerID, inv.AmountCents, inv.Currency, inv.IssuedAt)
	if err != nil {
		return fmt.Errorf("insert invoice %s: %w", inv.ID, err)
	}
	return nil
}
