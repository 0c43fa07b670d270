// Package devices registers devices reported by the field gateways.
package devices

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes registrations until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, queue *sqs.Client, log *slog.Logger) error {
	name := "provisioning-requests"
	out, err := queue.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if err != nil {
		return fmt.Errorf("devices: provisioning queue: %w", err)
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "devices.registered", "devices")
	if err != nil {
		return err
	}
	h := &registrationHandler{queue: queue, provisionURL: *out.QueueUrl, log: log}
	c, err := consumer.New(src, h, consumer.Config{Name: "devices"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
