// Package flowbugbuffer is a corpus package: page views counted through a
// shared write coalescer that keeps the handler's transaction until its
// next flush.
package flowbugbuffer

import (
	"context"
	"path"

	"corpus/internal/batcher"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type views struct {
	flusher *batcher.Flusher
}

func (v *views) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	page := path.Dir(m.ID)
	if _, err := tx.Exec(ctx, "INSERT INTO view_events (id, page) VALUES ($1, $2)", m.ID, page); err != nil {
		return err
	}
	v.flusher.Add(tx, "UPDATE pages SET views = views + 1 WHERE path = $1", page) // want `kept by the receiver|stored`
	return nil
}

// New wires the handler to the process's flusher.
func New(f *batcher.Flusher) consumer.Handler {
	return postgres.HandlerFunc((&views{flusher: f}).handle)
}
