// Package nextbugsyncmap is a held-out corpus package (third round): the
// transaction kept in a sync.Map for a later message of the same saga.
package nextbugsyncmap

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type saga struct{ open sync.Map }

func (s *saga) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if prev, ok := s.open.Load(m.ID); ok {
		_, _ = prev.(pgx.Tx).Exec(ctx, "UPDATE sagas SET step = step + 1 WHERE id = $1", m.ID)
	}
	s.open.Store(m.ID, tx) // want `handler's transaction`
	_, err := tx.Exec(ctx, "INSERT INTO saga_steps (id) VALUES ($1)", m.ID)
	return err
}

func New() consumer.Handler { return postgres.HandlerFunc((&saga{}).handle) }
