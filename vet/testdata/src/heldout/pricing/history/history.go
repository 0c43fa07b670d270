// Package history keeps the audit history of price rules.
package history

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Log appends price-rule changes.
type Log struct {
	pool *pgxpool.Pool
}

// Open returns a Log over pool.
func Open(pool *pgxpool.Pool) *Log { return &Log{pool: pool} }

// Append records one change of rule ruleID.
func (l *Log) Append(ctx context.Context, ruleID string, change any) error {
	b, err := json.Marshal(change)
	if err != nil {
		return err
	}
	_, err = l.pool.Exec(ctx, `INSERT INTO price_rule_history (rule_id, change) VALUES ($1, $2)`, ruleID, b)
	return err
}

// Last returns the latest change of ruleID.
func (l *Log) Last(ctx context.Context, ruleID string) ([]byte, error) {
	var b []byte
	err := l.pool.QueryRow(ctx, `SELECT change FROM price_rule_history WHERE rule_id = $1 ORDER BY id DESC LIMIT 1`, ruleID).Scan(&b)
	return b, err
}
