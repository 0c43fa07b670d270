// Package gapbugroutetable is a corpus handler package with a bug (see
// vet/corpus_test.go): one consumer per topic is built in a loop over a
// table whose entries carry their own middleware; the refunds entry
// carries logging only, so its consumer runs without idempotency and a
// redelivered refund is booked twice.
package gapbugroutetable

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
	handler consumer.Handler
	chain   []consumer.Middleware
}

func book(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO ledger (id, body) VALUES ($1, $2)", m.ID, m.Body)
	return err
}

// Start runs one consumer per topic.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	table := map[string]topic{
		"payments": {handler: postgres.HandlerFunc(book), chain: []consumer.Middleware{middleware.Logging(), middleware.Idempotency(st)}},
		"refunds": {
			handler: postgres.HandlerFunc(book),
			chain:   []consumer.Middleware{middleware.Logging()}, // want `this entry's chain has no idempotency middleware`
		},
	}
	for name, t := range table {
		src, err := broker.Source(ctx, name, "ledger")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, t.handler, consumer.Config{Name: "ledger-" + name}, t.chain...)
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}
