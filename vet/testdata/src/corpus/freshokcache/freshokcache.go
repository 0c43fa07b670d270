// Package freshokcache is a held-out corpus package (second round): a
// handler that reads a Redis cache and writes in the claim's transaction.
package freshokcache

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type handler struct{ cache *redis.Client }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	region, err := h.cache.Get(ctx, "region:"+m.ID).Result()
	if err != nil {
		region = "unknown"
	}
	if n := h.cache.Exists(ctx, "blocked:"+m.ID); n.Err() == nil {
		_ = n
	}
	_, err = tx.Exec(ctx, "INSERT INTO visits (id, region) VALUES ($1, $2)", m.ID, region)
	return err
}

func New(c *redis.Client) consumer.Handler {
	return postgres.HandlerFunc((&handler{cache: c}).handle)
}
