// Package nextokredislock is a held-out corpus package (third round): a
// short Redis lock around the handler's work, released when it returns.
package nextokredislock

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type handler struct{ rdb *redis.Client }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	key := "lock:account:" + m.ID
	ok := h.rdb.SetNX(ctx, key, "1", 30*time.Second)
	_ = ok
	defer h.rdb.Del(ctx, key)
	if m.ID == "" {
		return errors.New("no id")
	}
	_, err := tx.Exec(ctx, "UPDATE accounts SET touched = now() WHERE id = $1", m.ID)
	return err
}

func New(rdb *redis.Client) consumer.Handler {
	return postgres.HandlerFunc((&handler{rdb: rdb}).handle)
}
