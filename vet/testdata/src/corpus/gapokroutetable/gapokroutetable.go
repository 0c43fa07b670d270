// Package gapokroutetable is a correct corpus handler package (see
// vet/corpus_test.go): one consumer per topic is built in a loop over a
// table whose entries carry their own middleware and Config; the gauges
// entry carries logging only and opts out through its own Config, since a
// gauge reading overwrites the last one.
package gapokroutetable

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type topic struct {
	name    string
	handler consumer.Handler
	cfg     consumer.Config
	chain   []consumer.Middleware
}

func count(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "UPDATE counters SET n = n + 1 WHERE id = $1", m.Key)
	return err
}

func gauge(pool *pgxpool.Pool) consumer.HandlerFunc {
	return func(ctx context.Context, m *consumer.Message) error {
		_, err := pool.Exec(ctx, "UPDATE gauges SET value = $2 WHERE id = $1", m.Key, m.Body)
		return err
	}
}

// Start runs one consumer per topic.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	topics := []topic{
		{name: "counters", handler: postgres.HandlerFunc(count), cfg: consumer.Config{Name: "counters"}, chain: []consumer.Middleware{middleware.Idempotency(st)}},
		{name: "gauges", handler: gauge(pool), cfg: consumer.Config{Name: "gauges", Duplicates: consumer.AllowDuplicates("a reading overwrites the last one")}, chain: []consumer.Middleware{middleware.Logging()}},
	}
	for _, t := range topics {
		src, err := broker.Source(ctx, t.name, t.name)
		if err != nil {
			return err
		}
		c, err := consumer.New(src, t.handler, t.cfg, t.chain...)
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}
