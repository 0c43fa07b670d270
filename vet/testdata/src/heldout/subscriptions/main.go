package subscriptions

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Run consumes subscription period ends.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, brokers []string) error {
	kc, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "subscriptions.period_ended", "renewals")
	if err != nil {
		return err
	}
	r := &Renewals{kafka: kc, topic: "subscriptions.renewed"}
	mws := []consumer.Middleware{middleware.Logging(), middleware.Idempotency(st)}
	c, err := consumer.New(src, postgres.HandlerFunc(r.renew), consumer.Config{Name: "renewals"}, mws...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
