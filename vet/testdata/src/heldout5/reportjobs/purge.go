package reportjobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Purger deletes drafts nobody touched for 90 days.
type Purger struct {
	Pool  *pgxpool.Pool
	Every time.Duration
}

// Run purges on a ticker until ctx ends.
func (p *Purger) Run(ctx context.Context) {
	t := time.NewTicker(p.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := p.Pool.Exec(ctx, `DELETE FROM reports WHERE status = 'draft' AND updated_at < now() - interval '90 days'`); err != nil {
				slog.WarnContext(ctx, "purge drafts", "err", err)
			}
		}
	}
}
