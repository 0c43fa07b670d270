package subtitles

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes subtitle events.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, client *s3.Client, bucket string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "subtitles", "subtitles")
	if err != nil {
		return err
	}
	t := &Tracks{base: base{s3: client, bucket: bucket}}
	c, err := consumer.New(src, postgres.HandlerFunc(t.dispatch), consumer.Config{Name: "subtitles"}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
