package postgres

import (
	"context"
	"fmt"
	"time"
)

// pruneStatementTimeout bounds one prune statement once started.
const pruneStatementTimeout = 30 * time.Second

// Prune deletes claims older than Config.Retention, at most
// Config.PruneBatchSize rows per statement (each its own short transaction, so
// no lock is held for long), until none are left or ctx is done. A statement
// under way when ctx ends runs to its end (a cancelled statement may still
// commit on the server after the client gave up), so once Prune returns it
// deletes nothing more. The age is measured on the database's clock. It
// returns the number of claims deleted. A message whose claim was pruned runs
// again if it is delivered again.
func (s *Store) Prune(ctx context.Context) (int64, error) {
	var cutoff time.Time
	if err := s.pool.QueryRow(ctx, "SELECT now() - make_interval(secs => $1)", s.cfg.Retention.Seconds()).Scan(&cutoff); err != nil {
		return 0, fmt.Errorf("postgres store: prune: %w", err)
	}
	// ctid = ANY(ARRAY(subquery)) plans as a TID scan over the rows the
	// index on processed_at found.
	q := "DELETE FROM " + s.table + " WHERE ctid = ANY(ARRAY(SELECT ctid FROM " + s.table +
		" WHERE processed_at < $1 LIMIT $2))"
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("postgres store: prune: %w", err)
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pruneStatementTimeout)
		tag, err := s.pool.Exec(sctx, q, cutoff, s.cfg.PruneBatchSize)
		cancel()
		if err != nil {
			return total, fmt.Errorf("postgres store: prune: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(s.cfg.PruneBatchSize) {
			return total, nil
		}
	}
}

// RunPruner calls Prune at once and then every interval (Config.PruneInterval
// when interval is zero) until ctx is done, logging failures and carrying on.
// It returns ctx's error. The Store already does this in the background
// unless Config.NoPruning is set: RunPruner is for a store that opted out.
func (s *Store) RunPruner(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = s.cfg.PruneInterval
	}
	s.pruneLogged(ctx)
	return s.pruneEvery(ctx, interval)
}

// prunePeriodically is the background pruner: Prune every PruneInterval,
// the first one interval after New (the schema may not be migrated yet when
// New runs).
func (s *Store) prunePeriodically(ctx context.Context) {
	_ = s.pruneEvery(ctx, s.cfg.PruneInterval)
}

// pruneEvery calls Prune every interval until ctx is done and returns its
// error.
func (s *Store) pruneEvery(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.pruneLogged(ctx)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Store) pruneLogged(ctx context.Context) {
	n, err := s.Prune(ctx)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		s.cfg.Logger.Error("postgres store: pruning claims failed; trying again later", "error", err, "in", s.cfg.PruneInterval.String())
	case n > 0:
		s.cfg.Logger.Info("postgres store: pruned claims", "deleted", n, "retention", s.cfg.Retention.String())
	}
}
