// Package freshbugredis is a held-out corpus package (second round): a
// Redis stream entry added inside the claim's transaction.
package freshbugredis

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type handler struct{ rdb *redis.Client }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE carts SET checked_out = true WHERE id = $1", m.ID); err != nil {
		return err
	}
	return h.rdb.XAdd(ctx, &redis.XAddArgs{Stream: "checkouts", Values: map[string]any{"cart": m.ID}}).Err() // want `outside the database`
}

func New(rdb *redis.Client) consumer.Handler {
	return postgres.HandlerFunc((&handler{rdb: rdb}).handle)
}
