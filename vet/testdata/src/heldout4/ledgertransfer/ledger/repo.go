// Package ledger is the double-entry ledger's data access: every function
// runs on the transaction it is given.
package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrInsufficientFunds is returned when a debit would overdraw an account
// without an overdraft line.
var ErrInsufficientFunds = errors.New("ledger: insufficient funds")

// Entry is one leg of a posting.
type Entry struct {
	Account     string
	AmountMinor int64
	Currency    string
}

// Repo posts entries.
type Repo struct{}

// Balance locks and returns an account's balance.
func (Repo) Balance(ctx context.Context, tx pgx.Tx, account string) (int64, int64, error) {
	var bal, overdraft int64
	err := tx.QueryRow(ctx, `SELECT balance_minor, overdraft_minor FROM accounts WHERE id = $1 FOR UPDATE`, account).Scan(&bal, &overdraft)
	if err != nil {
		return 0, 0, fmt.Errorf("balance %s: %w", account, err)
	}
	return bal, overdraft, nil
}

// Post writes the entries of one posting and moves the balances.
func (Repo) Post(ctx context.Context, tx pgx.Tx, postingID string, entries []Entry) error {
	b := &pgx.Batch{}
	for _, e := range entries {
		b.Queue(`INSERT INTO entries (posting_id, account_id, amount_minor, currency) VALUES ($1, $2, $3, $4)`,
			postingID, e.Account, e.AmountMinor, e.Currency)
		b.Queue(`UPDATE accounts SET balance_minor = balance_minor + $2 WHERE id = $1`, e.Account, e.AmountMinor)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("post %s: %w", postingID, err)
	}
	return nil
}

// WithSavepoint runs fn inside a savepoint of tx, rolling back to it on error.
func WithSavepoint(ctx context.Context, tx pgx.Tx, fn func(pgx.Tx) error) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := fn(sp); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}
