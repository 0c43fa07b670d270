package loyalty

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// execer is what the ledger needs from the database: a pool, a connection or
// a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type pointsLedger struct {
	db execer
}

func (l pointsLedger) balance(ctx context.Context, memberID string) (int64, error) {
	var pts int64
	if err := l.db.QueryRow(ctx, `SELECT points FROM loyalty_balances WHERE member_id = $1`, memberID).Scan(&pts); err != nil {
		return 0, fmt.Errorf("balance %s: %w", memberID, err)
	}
	return pts, nil
}

func (l pointsLedger) credit(ctx context.Context, memberID, reason string, pts int64) error {
	_, err := l.db.Exec(ctx,
		`INSERT INTO loyalty_entries (member_id, reason, points) VALUES ($1, $2, $3)`,
		memberID, reason, pts)
	if err != nil {
		return fmt.Errorf("credit %s: %w", memberID, err)
	}
	return nil
}
