// Package budgets tracks advertising spend per campaign. It predates the
// service's move to pgx and still uses database/sql.
package budgets

import (
	"context"
	"database/sql"
	"fmt"
)

// Store reads and writes campaign budgets.
type Store struct {
	db *sql.DB
}

// NewStore returns a Store over db.
func NewStore(db *sql.DB) *Store { return &Store{db: db} }

// Spend adds cents to the campaign's spend for day.
func (s *Store) Spend(ctx context.Context, campaignID, day string, cents int64) error {
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO campaign_spend (campaign_id, day, cents) VALUES ($1, $2, $3)
		 ON CONFLICT (campaign_id, day) DO UPDATE SET cents = campaign_spend.cents + EXCLUDED.cents`,
		campaignID, day, cents)
	if err != nil {
		return fmt.Errorf("spend %s: %w", campaignID, err)
	}
	return nil
}

// Remaining returns the campaign's unspent budget.
func (s *Store) Remaining(ctx context.Context, campaignID string) (int64, error) {
	var c int64
	err := s.db.QueryRowContext(ctx, `SELECT budget_cents - spent_cents FROM campaigns WHERE id = $1`, campaignID).Scan(&c)
	return c, err
}
