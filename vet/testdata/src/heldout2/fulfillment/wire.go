package fulfillment

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/fulfillment/queue"
)

// Run wires the picker.
func Run(ctx context.Context, pool *pgxpool.Pool, sqsClient *sqs.Client, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	p := NewPicker(queue.New(sqsClient, "https://sqs.local/pick-jobs"))
	src, err := broker.Source(ctx, "orders.paid", "picker")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, consumer.HandlerFunc(p.OnPaid), consumer.Config{Name: "picker"}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
