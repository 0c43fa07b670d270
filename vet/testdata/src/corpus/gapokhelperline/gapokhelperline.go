// Package gapokhelperline is a correct corpus handler package (see
// vet/corpus_test.go): the same refund handler; its helper queues the
// customer notice with outbox.Send in the claim's transaction, and reads
// the customer's channel preference from Redis.
package gapokhelperline

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
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
	return noticeCustomer(ctx, r.rdb, tx, m.ID, rf)
}

func noticeCustomer(ctx context.Context, rdb *redis.Client, tx pgx.Tx, id string, rf refund) error {
	channel, err := rdb.Get(ctx, "notice-channel:"+rf.Customer).Result()
	if err != nil {
		return err
	}
	body, err := json.Marshal(rf)
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "customer-notices."+channel, &consumer.Message{ID: id, Key: rf.Customer, Body: body})
}

// Handler returns the refund handler, behind the Postgres claim.
func Handler(rdb *redis.Client) consumer.Handler {
	return postgres.HandlerFunc((&refunder{rdb: rdb}).handle)
}
