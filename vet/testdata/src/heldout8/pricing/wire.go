package pricing

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Run consumes repricing decisions.
func Run(ctx context.Context, pool *pgxpool.Pool, brokers []string) error {
	kc, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	rp := NewRepricer(kc, "storefront.price-changes")
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "kafka://"+brokers[0])
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "pricing.decisions", "repricer")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(rp.Apply), consumer.Config{Name: "repricer"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
