// Package flowbugfanout is a corpus package: the day's roll-ups refreshed
// concurrently, on the handler's transaction, by a shared helper.
package flowbugfanout

import (
	"context"

	"corpus/internal/fanout"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

var rollups = []string{
	"REFRESH MATERIALIZED VIEW daily_sales",
	"REFRESH MATERIALIZED VIEW daily_refunds",
}

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO sales (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	return fanout.ExecAll(ctx, tx, rollups) // want `reaches another goroutine`
}

// New builds the handler.
func New() consumer.Handler { return postgres.HandlerFunc(handle) }
