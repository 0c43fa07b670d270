package outbox

import (
	"context"
	"fmt"
	"time"
)

// maintain refreshes the depth metrics and deletes expired published rows
// every MaintenanceInterval.
func (r *Relay) maintain(ctx context.Context) {
	t := time.NewTicker(r.cfg.MaintenanceInterval)
	defer t.Stop()
	for {
		if err := r.refreshDepth(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("outbox relay: depth query failed", "schema", r.cfg.Schema, "err", err)
		}
		if !r.cfg.NoCleanup {
			if _, err := r.Cleanup(ctx); err != nil && ctx.Err() == nil {
				r.cfg.Logger.Warn("outbox relay: cleanup failed", "schema", r.cfg.Schema, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Depth returns the number of unpublished rows and the age of the oldest.
func (r *Relay) Depth(ctx context.Context) (int64, time.Duration, error) {
	var (
		n   int64
		age float64
	)
	err := r.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+r.table+` WHERE published_at IS NULL),
		coalesce((SELECT extract(epoch FROM now() - created_at)::float8 FROM `+r.table+` WHERE published_at IS NULL ORDER BY seq LIMIT 1), 0)`).Scan(&n, &age)
	if err != nil {
		return 0, 0, fmt.Errorf("outbox: depth: %w", err)
	}
	return n, time.Duration(age * float64(time.Second)), nil
}

func (r *Relay) refreshDepth(ctx context.Context) error {
	n, age, err := r.Depth(ctx)
	if err != nil {
		return err
	}
	var dead int64
	if err := r.pool.QueryRow(ctx, "SELECT count(*) FROM "+r.deadTable).Scan(&dead); err != nil {
		return fmt.Errorf("outbox: dead depth: %w", err)
	}
	r.metrics.depth(n, age, dead)
	return nil
}

// Cleanup deletes rows published longer than Config.Retention ago, in
// DELETEs of at most Config.CleanupBatch rows each (rows another cleanup is
// deleting are skipped, not waited for), until fewer remain or 100 batches
// ran; it returns how many rows it deleted. Unpublished rows are never
// deleted.
func (r *Relay) Cleanup(ctx context.Context) (int64, error) {
	q := `DELETE FROM ` + r.table + ` WHERE seq IN (SELECT seq FROM ` + r.table + `
		WHERE published_at IS NOT NULL AND published_at < now() - make_interval(secs => $1)
		ORDER BY published_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
	var total int64
	for range cleanupBatchesPerRound {
		tag, err := r.pool.Exec(ctx, q, r.cfg.Retention.Seconds(), r.cfg.CleanupBatch)
		if err != nil {
			return total, fmt.Errorf("outbox: cleanup: %w", err)
		}
		total += tag.RowsAffected()
		r.metrics.deleted(tag.RowsAffected())
		if tag.RowsAffected() < int64(r.cfg.CleanupBatch) {
			break
		}
	}
	return total, nil
}
