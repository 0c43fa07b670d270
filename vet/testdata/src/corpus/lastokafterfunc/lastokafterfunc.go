// Package lastokafterfunc is a held-out corpus package (fourth round): a
// timer that only bumps an in-memory gauge.
package lastokafterfunc

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

var inFlight atomic.Int64

func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	inFlight.Add(1)
	time.AfterFunc(time.Second, func() { inFlight.Add(-1) })
	_, err := tx.Exec(ctx, "INSERT INTO pings (id) VALUES ($1)", m.ID)
	return err
}

func New() consumer.Handler { return postgres.HandlerFunc(Handle) }
