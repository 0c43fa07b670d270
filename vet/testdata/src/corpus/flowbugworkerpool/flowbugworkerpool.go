// Package flowbugworkerpool is a corpus package: thumbnail rows written
// from the platform's worker pool, through the handler's transaction.
package flowbugworkerpool

import (
	"context"

	"corpus/internal/jobs"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type service struct {
	workers *jobs.Pool
}

func (s *service) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	id := m.ID
	if _, err := tx.Exec(ctx, "INSERT INTO images (id) VALUES ($1) ON CONFLICT DO NOTHING", id); err != nil {
		return err
	}
	record := func() {
		_, _ = tx.Exec(ctx, "UPDATE images SET thumbnail_queued = true WHERE id = $1", id)
	}
	s.workers.Submit(record) // want `reaches another goroutine`
	return nil
}

// New wires the handler.
func New(workers *jobs.Pool) consumer.Handler {
	s := &service{workers: workers}
	return postgres.HandlerFunc(s.handle)
}
