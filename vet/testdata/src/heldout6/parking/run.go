package parking

import (
	"context"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Run starts the session closer.
func Run(ctx context.Context, src consumer.Source, rdb *redis.Client, st store.Store) error {
	h := postgres.HandlerFunc(closer{signs: &Signage{rdb: rdb}}.close)
	c, err := consumer.New(src, h, consumer.Config{Name: "parking-sessions"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
