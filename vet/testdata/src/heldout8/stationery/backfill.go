package stationery

import (
	"context"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Backfill replays the archived adjustments of archive into the stock table
// under a consumer of its own, for a warehouse migrated from the old system.
func (s *Service) Backfill(ctx context.Context, archive string) error {
	src, err := s.broker.Source(ctx, archive, "stock-backfill")
	if err != nil {
		return err
	}
	logging := middleware.Logging()
	replay := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		a, err := s.inventory.decode(msg)
		if err != nil {
			return err
		}
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if err := s.inventory.apply(ctx, tx, a); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	c, err := consumer.New(src, replay, consumer.Config{Name: "stock-backfill", Concurrency: 8}, logging) // want "backfill consumer without idempotency"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
