// Package gapbughelperline is a corpus handler package with a bug (see
// vet/corpus_test.go): the refund handler calls a helper of its own
// package that appends the customer notice to a Redis stream; the bug is
// the stream write in the helper, reported there (the handler's call is
// given as related information).
package gapbughelperline

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type refund struct {
	Order    string `json:"order"`
	Customer string `json:"customer"`
	Cents    int64  `json:"cents"`
}

type refunder struct {
	rdb *redis.Client
}

func (r *refunder) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var rf refund
	if err := json.Unmarshal(m.Body, &rf); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE orders SET refunded_cents = $2 WHERE id = $1", rf.Order, rf.Cents); err != nil {
		return err
	}
	return noticeCustomer(ctx, r.rdb, rf)
}

func noticeCustomer(ctx context.Context, rdb *redis.Client, rf refund) error {
	notice := map[string]any{"customer": rf.Customer, "order": rf.Order, "cents": rf.Cents}
	return rdb.XAdd(ctx, &redis.XAddArgs{Stream: "customer-notices", Values: notice}).Err() // want `Redis command XAdd is an effect outside the database`
}

// Handler returns the refund handler, behind the Postgres claim.
func Handler(rdb *redis.Client) consumer.Handler {
	return postgres.HandlerFunc((&refunder{rdb: rdb}).handle)
}
