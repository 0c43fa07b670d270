// Package janitor deletes expired report rows in the background.
package janitor

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Run deletes reports older than keep every interval until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, keep, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = pool.Exec(ctx, `DELETE FROM reports WHERE created_at < now() - $1::interval`, keep.String())
		}
	}
}
