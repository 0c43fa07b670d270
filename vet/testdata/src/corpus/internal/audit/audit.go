// Package audit is a platform team's audit trail helper.
package audit

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Record appends an audit row.
func Record(ctx context.Context, pool *pgxpool.Pool, actor, action string) error {
	_, err := pool.Exec(ctx, "INSERT INTO audit_log (actor, action) VALUES ($1, $2)", actor, action)
	return err
}
