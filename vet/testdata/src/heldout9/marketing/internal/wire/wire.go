// Package wire builds the marketing consumers.
package wire

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/marketing/internal/clicks"
	"heldout9/marketing/internal/segments"
)

func sampledConfig(name string) consumer.Config {
	return consumer.Config{
		Name:        name,
		Concurrency: 64,
		Duplicates:  consumer.AllowDuplicates("sampled click histogram; a duplicate is noise well under the sampling error"),
	}
}

type route struct {
	topic, name string
	h           consumer.Handler
}

func chainFor(st store.Store) []consumer.Middleware {
	mws := []consumer.Middleware{middleware.Logging()}
	return append(mws, middleware.Idempotency(st))
}

// Consumers builds every marketing consumer.
func Consumers(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) ([]*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	routes := []route{
		{"segments.joined", "marketing-joined", postgres.HandlerFunc(segments.Joined)},
		{"segments.left", "marketing-left", postgres.HandlerFunc(segments.Left)},
	}
	var out []*consumer.Consumer
	for _, r := range routes {
		src, err := broker.Source(ctx, r.topic, r.name)
		if err != nil {
			return nil, err
		}
		c, err := consumer.New(src, r.h, consumer.Config{Name: r.name}, chainFor(st)...)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	src, err := broker.Source(ctx, "clicks", "marketing-clicks")
	if err != nil {
		return nil, err
	}
	c, err := consumer.New(src, clicks.NewSampler(), sampledConfig("marketing-clicks"), middleware.Logging())
	if err != nil {
		return nil, err
	}
	return append(out, c), nil
}
