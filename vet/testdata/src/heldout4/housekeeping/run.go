package housekeeping

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run handles check-outs until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, sqsClient *sqs.Client, tabletsQueue string) error {
	src, err := broker.Source(ctx, "pms.guest-checked-out", "housekeeping")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := NewCheckouts(WithNotifier(&sqsNotifier{client: sqsClient, queueURL: tabletsQueue}))
	c, err := consumer.New(src, postgres.HandlerFunc(h.handle), consumer.Config{Name: "housekeeping"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
