// Package repo is the accounts service's data access.
package repo

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Accounts reads and writes account rows.
type Accounts struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// NewAccounts returns the repository over pool.
func NewAccounts(pool *pgxpool.Pool) *Accounts {
	return &Accounts{pool: pool, now: time.Now}
}

// Create inserts an account in tx.
func (a *Accounts) Create(ctx context.Context, tx pgx.Tx, id, email string) error {
	_, err := tx.Exec(ctx, `INSERT INTO accounts (id, email) VALUES ($1, $2)`, id, email)
	return err
}

// TouchLastSeen stamps the account's last activity.
func (a *Accounts) TouchLastSeen(ctx context.Context, id string) error {
	_, err := a.pool.Exec(ctx, `UPDATE accounts SET last_seen = $2 WHERE id = $1`, id, a.now())
	return err
}

// Email returns the account's address.
func (a *Accounts) Email(ctx context.Context, id string) (string, error) {
	var email string
	err := a.pool.QueryRow(ctx, `SELECT email FROM accounts WHERE id = $1`, id).Scan(&email)
	return email, err
}
