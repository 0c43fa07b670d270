package adbidding

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// budgetRepo reads and adjusts campaign budgets.
type budgetRepo struct {
	pool *pgxpool.Pool
}

func (r *budgetRepo) remaining(ctx context.Context, tx pgx.Tx, campaignID string) (int64, error) {
	var micros int64
	err := tx.QueryRow(ctx, `SELECT remaining_micros FROM campaign_budgets WHERE campaign_id = $1 FOR UPDATE`, campaignID).Scan(&micros)
	if err != nil {
		return 0, fmt.Errorf("budget of %s: %w", campaignID, err)
	}
	return micros, nil
}

func (r *budgetRepo) debit(ctx context.Context, campaignID string, micros int64) error {
	_, err := r.pool.Exec(ctx, `UPDATE campaign_budgets SET remaining_micros = remaining_micros - $2 WHERE campaign_id = $1`, campaignID, micros)
	if err != nil {
		return fmt.Errorf("debit %s: %w", campaignID, err)
	}
	return nil
}
