package parking

import (
	"context"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Run starts the session closer.
func Run(ctx context.Context, src consumer.Source, rdb *redis.Client) error {
	h := postgres.HandlerFunc(closer{signs: &Signage{rdb: rdb}}.close)
	c, err := consumer.New(src, h, consumer.Config{Name: "parking-sessions"})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
