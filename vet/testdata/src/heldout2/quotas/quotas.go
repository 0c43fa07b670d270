// Package quotas reserves storage quota for uploads.
package quotas

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

var errBusy = errors.New("quotas: tenant locked by another reservation")

type reserver struct {
	rdb *redis.Client
}

func (r *reserver) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	lock := "quota-lock:" + msg.Key
	ok, _ := r.rdb.SetNX(ctx, lock, msg.ID, 10*time.Second).Result()
	if !ok {
		return errBusy
	}
	defer r.rdb.Del(context.WithoutCancel(ctx), lock)

	limitStr, err := r.rdb.Get(ctx, "quota-limit:"+msg.Key).Result()
	if err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	limit, _ := strconv.ParseInt(limitStr, 10, 64)
	size, err := strconv.ParseInt(msg.Headers["bytes"], 10, 64)
	if err != nil {
		return consumer.Permanent(err)
	}
	_, err = tx.Exec(ctx, `UPDATE quotas SET used = used + $2 WHERE tenant = $1 AND used + $2 <= $3`, msg.Key, size, limit)
	return err
}

// Run wires the quota reserver.
func Run(ctx context.Context, pool *pgxpool.Pool, rdb *redis.Client, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "uploads.started", "quotas")
	if err != nil {
		return err
	}
	r := &reserver{rdb: rdb}
	c, err := consumer.New(src, postgres.HandlerFunc(r.handle), consumer.Config{Name: "quotas"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
